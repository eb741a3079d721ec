package webhook

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentctl/agentctl/api"
)

// testReceiver is a real HTTP receiver on 127.0.0.1 that checks signatures the
// way receivers of the old tool do, answering with the statuses it is
// given in turn (then 200).
type testReceiver struct {
	t        *testing.T
	secret   string
	srv      *httptest.Server
	mu       sync.Mutex
	statuses []int
	got      []http.Header
	bodies   [][]byte
	bad      []string
}

func newReceiver(t *testing.T, secret string, statuses ...int) *testReceiver {
	r := &testReceiver{t: t, secret: secret, statuses: statuses}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *testReceiver) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, req.Header.Clone())
	r.bodies = append(r.bodies, body)
	if req.Method != http.MethodPost || req.Header.Get("Content-Type") != "application/json" {
		r.bad = append(r.bad, "method/content type: "+req.Method+" "+req.Header.Get("Content-Type"))
	}
	if r.secret != "" {
		sig := req.Header.Get(HeaderSignature)
		if !Verify(r.secret, body, sig) {
			r.bad = append(r.bad, "bad signature "+sig)
		}
		if req.Header.Get(HeaderSignatureAlt) != "sha256="+sig || req.Header.Get(HeaderHubSignature) != "sha256="+sig {
			r.bad = append(r.bad, "the three signature headers disagree")
		}
	}
	status := http.StatusOK
	if len(r.statuses) > 0 {
		status, r.statuses = r.statuses[0], r.statuses[1:]
	}
	w.WriteHeader(status)
}

func (r *testReceiver) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.got)
}

// results collects OnResult reports.
type results struct {
	mu  sync.Mutex
	all []Result
	ch  chan Result
}

func newResults() *results { return &results{ch: make(chan Result, 100)} }

func (rs *results) add(r Result) {
	rs.mu.Lock()
	rs.all = append(rs.all, r)
	rs.mu.Unlock()
	rs.ch <- r
}

func (rs *results) next(t *testing.T) Result {
	t.Helper()
	select {
	case r := <-rs.ch:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("no delivery result")
	}
	return Result{}
}

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

func TestSignature(t *testing.T) {
	// Known answer: HMAC-SHA256("key", "The quick brown fox jumps over the lazy dog").
	const want = "f7bc83f430538424b13298e6aa6fb143ef4d59a14946175997479dbc2d1a3cd8"
	body := []byte("The quick brown fox jumps over the lazy dog")
	if got := Sign("key", body); got != want {
		t.Fatalf("Sign = %s, want %s", got, want)
	}
	if !Verify("key", body, want) || Verify("other", body, want) || Verify("key", body, "zz") {
		t.Fatal("Verify disagrees with Sign")
	}
}

func TestDelivery(t *testing.T) {
	tests := []struct {
		name     string
		secret   string
		statuses []int
		outcome  string
		attempts int
		posts    int
	}{
		{name: "signed, first try", secret: "s3cret", outcome: Delivered, attempts: 1, posts: 1},
		{name: "unsigned", outcome: Delivered, attempts: 1, posts: 1},
		{name: "retried after server errors", secret: "s3cret", statuses: []int{500, 503}, outcome: Delivered, attempts: 3, posts: 3},
		{name: "429 is retried", statuses: []int{429}, outcome: Delivered, attempts: 2, posts: 2},
		{name: "400 is final", statuses: []int{400}, outcome: Failed, attempts: 1, posts: 1},
		{name: "bounded attempts", statuses: []int{500, 500, 500, 500, 500, 500}, outcome: Failed, attempts: 4, posts: 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rcv := newReceiver(t, tt.secret, tt.statuses...)
			rs := newResults()
			s := New(Options{Backoff: 5 * time.Millisecond, MaxAttempts: 4, OnResult: rs.add, Logger: quiet()})
			defer s.Close(context.Background())
			body, _ := json.Marshal(SessionEnded(api.Session{ID: "s1", Adapter: "exec"}, time.Now()))
			s.Send(Delivery{URL: rcv.srv.URL + "/hook", Secret: tt.secret, Event: HookSessionStopped, ID: "d1", Body: body})
			r := rs.next(t)
			if r.Outcome != tt.outcome || r.Attempts != tt.attempts {
				t.Fatalf("outcome %s after %d attempts (%v), want %s after %d", r.Outcome, r.Attempts, r.Err, tt.outcome, tt.attempts)
			}
			if rcv.count() != tt.posts {
				t.Fatalf("receiver got %d posts, want %d", rcv.count(), tt.posts)
			}
			rcv.mu.Lock()
			defer rcv.mu.Unlock()
			if len(rcv.bad) > 0 {
				t.Fatalf("receiver rejected: %q", rcv.bad)
			}
			for _, h := range rcv.got {
				if h.Get(HeaderDelivery) != "d1" || h.Get(HeaderEvent) != HookSessionStopped {
					t.Errorf("headers = %v", h)
				}
				if tt.secret == "" && h.Get(HeaderSignature) != "" {
					t.Error("signed without a secret")
				}
			}
		})
	}
}

// A receiver that never answers does not hold up another one.
func TestDeadReceiverBlocksNothing(t *testing.T) {
	// A listener that accepts and never answers: every attempt times out.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var conns []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	defer func() {
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
	}()
	live := newReceiver(t, "k")
	rs := newResults()
	s := New(Options{AttemptTimeout: 5 * time.Second, Backoff: time.Second, OnResult: rs.add, Logger: quiet()})
	for i := range 3 {
		s.Send(Delivery{URL: "http://" + ln.Addr().String() + "/", Event: "x", Body: []byte(`{"n":` + string(rune('0'+i)) + `}`)})
	}
	s.Send(Delivery{URL: live.srv.URL, Secret: "k", Event: "y", Body: []byte(`{}`)})
	r := rs.next(t)
	if r.Delivery.URL != live.srv.URL || r.Outcome != Delivered {
		t.Fatalf("first result = %s for %s, want the live receiver delivered", r.Outcome, r.Delivery.URL)
	}
	// Closing abandons what the dead receiver holds, and says so.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := s.Close(ctx); err == nil {
		t.Error("Close reported nothing pending")
	}
	dropped := 0
	for range 3 {
		if r := rs.next(t); r.Outcome == Dropped {
			dropped++
		}
	}
	if dropped != 3 {
		t.Errorf("%d of 3 pending deliveries reported dropped", dropped)
	}
	if s.Send(Delivery{URL: live.srv.URL, Body: []byte(`{}`)}) {
		t.Error("Send after Close accepted")
	}
}

func TestQueueBound(t *testing.T) {
	block := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-block }))
	rs := newResults()
	s := New(Options{QueueLen: 2, OnResult: rs.add, Logger: quiet()})
	defer srv.Close()
	defer s.Close(context.Background())
	defer close(block) // first: let the receiver answer so Close can finish
	accepted := 0
	for range 10 {
		if s.Send(Delivery{URL: srv.URL, Body: []byte(`{}`)}) {
			accepted++
		}
	}
	// One in flight (taken off the queue) plus two queued, at most.
	if accepted > 3 || accepted < 2 {
		t.Fatalf("accepted %d deliveries with a queue of 2", accepted)
	}
	if r := rs.next(t); r.Outcome != Dropped || !strings.Contains(r.Err.Error(), "full") {
		t.Fatalf("first result = %+v, want dropped: queue full", r)
	}
}

func TestSessionEndedPayload(t *testing.T) {
	created := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	ended := created.Add(90*time.Second + 600*time.Millisecond)
	code := 3
	now := ended.Add(time.Second)
	tests := []struct {
		name       string
		s          api.Session
		exitStatus string // JSON
		summary    string
		duration   int64
	}{
		{"exit code", api.Session{ID: "a", Adapter: "claude", Status: api.StatusExited, CreatedAt: created, EndedAt: &ended, ExitCode: &code, Prompt: strings.Repeat("é", 250)}, "3", strings.Repeat("é", 200), 91},
		{"signal", api.Session{ID: "b", Adapter: "exec", Status: api.StatusKilled, CreatedAt: created, EndedAt: &ended, Signal: "SIGKILL", Command: []string{"sleep", "9"}}, "137", "sleep 9", 91},
		{"lost: unknown exit", api.Session{ID: "c", Adapter: "exec", Status: api.StatusLost, CreatedAt: created, Name: "build"}, "null", "build", 92}, // no end known: measured to now
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.s.Labels = map[string]string{"openclaw_callback_session_key": "k1"}
			b, err := json.Marshal(SessionEnded(tt.s, now))
			if err != nil {
				t.Fatal(err)
			}
			var m map[string]json.RawMessage
			json.Unmarshal(b, &m)
			for _, k := range []string{"hook_type", "session_id", "adapter", "duration_seconds", "exit_status", "summary", "meta", "timestamp"} {
				if _, ok := m[k]; !ok {
					t.Errorf("payload lacks %q: %s", k, b)
				}
			}
			var p Payload
			json.Unmarshal(b, &p)
			if string(m["exit_status"]) != tt.exitStatus || p.Summary != tt.summary || p.DurationSeconds != tt.duration || p.HookType != "session.stopped" {
				t.Errorf("payload = %s", b)
			}
			if p.Meta["openclaw_callback_session_key"] != "k1" {
				t.Errorf("labels not in meta: %v", p.Meta)
			}
		})
	}
}

// A webhook URL's secrets (user:password, a token in the path or the
// query) never reach the log or the delivery's error, whether the receiver
// refuses or cannot be reached.
func TestWebhookSecretsAreNotLogged(t *testing.T) {
	refusing := newReceiver(t, "", 400)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String()
	ln.Close() // nothing listens there now
	for _, base := range []string{refusing.srv.URL, closed} {
		var log strings.Builder
		var mu sync.Mutex
		rs := newResults()
		s := New(Options{MaxAttempts: 1, OnResult: rs.add, Logger: slog.New(slog.NewTextHandler(&lockedWriter{w: &log, mu: &mu}, &slog.HandlerOptions{Level: slog.LevelDebug}))})
		u := strings.Replace(base, "://", "://alice:pa55word@", 1) + "/services/T0/B0/t0ken?key=k3y"
		s.Send(Delivery{URL: u, Event: HookSessionStopped, Body: []byte("{}")})
		r := rs.next(t)
		s.Close(context.Background())
		mu.Lock()
		text := log.String() + "\n" + r.Err.Error()
		mu.Unlock()
		for _, secret := range []string{"alice", "pa55word", "t0ken", "k3y", "services"} {
			if strings.Contains(text, secret) {
				t.Errorf("%q is in the log or the error:\n%s", secret, text)
			}
		}
		if !strings.Contains(text, strings.TrimPrefix(base, "http://")) {
			t.Errorf("the receiver's host is not named:\n%s", text)
		}
	}
}

func TestRedact(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"https://hooks.example.com":                   "https://hooks.example.com",
		"https://hooks.example.com/":                  "https://hooks.example.com",
		"https://u:p@hooks.example.com/a/b?token=x#f": "https://…@hooks.example.com/…?…#…",
		"http://127.0.0.1:8080/hook":                  "http://127.0.0.1:8080/…",
		"not a url":                                   "(a webhook URL that does not parse)",
	} {
		if got := Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}

type lockedWriter struct {
	w  io.Writer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}
