package supervisor

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/client"
	"github.com/agentctl/agentctl/config"
	"github.com/agentctl/agentctl/home"
	"github.com/agentctl/agentctl/internal/text"
	"github.com/agentctl/agentctl/proc"
	"github.com/agentctl/agentctl/spawn"
)

// A disk error writing fuses.json is the service's failure (internal, CLI
// exit 1), not a usage error.
func TestFuseWriteErrorIsInternalNotInvalid(t *testing.T) {
	h := newHome(t)
	svc := startService(t, h)
	// fuses.json as a folder with something in it: the write's final rename
	// fails as a full or broken disk would make it.
	path := filepath.Join(string(h), "fuses.json")
	os.Remove(path)
	if err := os.MkdirAll(filepath.Join(path, "x"), 0o700); err != nil {
		t.Fatal(err)
	}
	_, err := svc.client.SetFuse(context.Background(), api.FuseRequest{Directory: t.TempDir(), TTL: "1h"})
	if err == nil {
		t.Fatal("setting a fuse that cannot be saved succeeded")
	}
	if code := api.CodeOf(err); code != api.CodeInternal {
		t.Errorf("code = %s (%v), want %s", code, err, api.CodeInternal)
	}
	// A request that can never succeed is still the caller's.
	_, err = svc.client.SetFuse(context.Background(), api.FuseRequest{Directory: t.TempDir(), TTL: "-1h"})
	if code := api.CodeOf(err); code != api.CodeInvalid {
		t.Errorf("negative ttl: code = %s (%v), want %s", code, err, api.CodeInvalid)
	}
}

// A session's end is announced even when its ended.json claim was created
// and its write failed (a full disk, or a version that wrote it in place):
// the torn claim is repaired at the next start and the end announced once.
func TestSessionEndAnnouncedAfterItsClaimWasLeftEmpty(t *testing.T) {
	h := newHome(t)
	svc := startService(t, h)
	sess, err := svc.run(api.RunRequest{Command: []string{"true"}, Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	waitEnded(t, h, sess.ID)
	claim := filepath.Join(h.SessionDir(sess.ID), home.EndedFile)
	eventually(t, 10*time.Second, "the end claimed", func() bool { return claimComplete(claim) })
	svc.stop()

	// What a failed write leaves: the claim exists, empty.
	if err := os.WriteFile(claim, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	svc = startService(t, h)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var stopped []api.Event
	err = svc.client.Events(ctx, client.EventOptions{Since: "0", Types: []string{api.EventSessionStopped}}, nil, func(e api.Event) error {
		if e.SessionID == sess.ID {
			stopped = append(stopped, e)
		}
		if len(stopped) == 2 {
			cancel()
		}
		return nil
	})
	if len(stopped) != 2 {
		t.Fatalf("session.stopped events for %s = %d (%v), want 2: one per announcement, the second after the repair", sess.ID, len(stopped), err)
	}
	if !claimComplete(claim) {
		t.Error("the claim was not repaired")
	}
}

func TestClaimFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ended.json")
	for i, want := range []bool{true, false, false} {
		claimed, err := claimFile(path, map[string]int{"n": i})
		if err != nil || claimed != want {
			t.Fatalf("claim %d = %v, %v; want %v", i, claimed, err, want)
		}
	}
	// A torn claim is no claim.
	os.WriteFile(path, []byte(`{"n":`), 0o600)
	if claimed, err := claimFile(path, map[string]int{"n": 9}); err != nil || !claimed {
		t.Fatalf("claim over a torn one = %v, %v; want it made", claimed, err)
	}
	if b, _ := os.ReadFile(path); string(b) != "{\"n\":9}\n" {
		t.Errorf("claim = %q", b)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("left behind: %v", ents)
	}
}

// An agent starts with default signal dispositions: the monitor survives a
// hang-up without passing an ignored SIGHUP on to the agent.
func TestAgentStartsWithSIGHUPNotIgnored(t *testing.T) {
	h := newHome(t)
	svc := startService(t, h)
	sess, err := svc.run(api.RunRequest{Command: []string{"sh", "-c", "grep -E '^Sig(Ign|Blk):' /proc/self/status"}, Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	waitEnded(t, h, sess.ID)
	var out strings.Builder
	if err := svc.client.Logs(context.Background(), sess.ID, api.LogOptions{}, func(ch api.LogChunk) error {
		out.WriteString(ch.Text + "\n")
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	masks := map[string]uint64{}
	for _, line := range strings.Split(out.String(), "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok {
			continue
		}
		n, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
		if err != nil {
			t.Fatalf("parse %q: %v", line, err)
		}
		masks[k] = n
	}
	ign, ok := masks["SigIgn"]
	if !ok {
		t.Fatalf("no SigIgn in the agent's output %q", out.String())
	}
	if hup := uint64(1) << (syscall.SIGHUP - 1); ign&hup != 0 {
		t.Errorf("the agent starts with SIGHUP ignored (SigIgn %x)", ign)
	}
	if masks["SigBlk"] != 0 {
		t.Errorf("the agent starts with signals blocked (SigBlk %x)", masks["SigBlk"])
	}
}

// A request whose body trickles in (or never comes) does not hold a
// connection for good; a stream, once answering, is not cut by that bound.
func TestTrickledBodyIsCutStreamsAreNot(t *testing.T) {
	h := newHome(t)
	svc := startServiceOpts(t, Options{Home: h, ReadTimeout: time.Second})
	conn, err := net.Dial("unix", h.Socket())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprint(conn, "POST /v1/sessions HTTP/1.1\r\nHost: agentctl\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"cwd\":")
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	began := time.Now()
	if _, err := io.ReadAll(conn); err != nil {
		t.Fatalf("the connection was not closed by the service: %v", err)
	}
	if took := time.Since(began); took > 5*time.Second {
		t.Errorf("a trickled body held its connection %s", took)
	}

	sess, err := svc.run(api.RunRequest{Command: []string{"sh", "-c", "sleep 2.5; echo done"}, Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	err = svc.client.Logs(context.Background(), sess.ID, api.LogOptions{Follow: true}, func(ch api.LogChunk) error {
		out.WriteString(ch.Text)
		return nil
	})
	if err != nil || !strings.Contains(out.String(), "done") {
		t.Errorf("logs -f across the read timeout: %q, %v", out.String(), err)
	}
}

// The service holds no OS thread per running session: the wait for each
// session's monitor and agent parks in the runtime's poller (pidfds), so
// its threads stay flat however many sessions run.
func TestThreadsStayFlatWithRunningSessions(t *testing.T) {
	h := newHome(t)
	svc := startService(t, h)
	threads := func() int {
		ents, err := os.ReadDir("/proc/self/task")
		if err != nil {
			t.Skipf("no /proc/self/task: %v", err)
		}
		return len(ents)
	}
	// Warm up: the first sessions start the runtime's helper threads.
	for range 3 {
		if _, err := svc.run(api.RunRequest{Command: []string{"sleep", "300"}, Cwd: t.TempDir()}); err != nil {
			t.Fatal(err)
		}
	}
	before := threads()
	const n = 40
	for range n {
		if _, err := svc.run(api.RunRequest{Command: []string{"sleep", "300"}, Cwd: t.TempDir()}); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(200 * time.Millisecond)
	if after := threads(); after-before > n/4 {
		t.Errorf("threads went from %d to %d with %d more running sessions: a thread per session", before, after, n)
	}
}

// A long prompt is kept beside the launch record, not in it: the record
// every list reads stays small.
func TestLongPromptIsKeptBesideTheRecord(t *testing.T) {
	h := newHome(t)
	svc := startService(t, h)
	prompt := strings.Repeat("a long prompt ", 200_000) // 2.8 MB
	sess, err := svc.run(api.RunRequest{Command: []string{"true"}, Prompt: prompt, Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(filepath.Join(h.SessionDir(sess.ID), home.LaunchFile))
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() > 64<<10 {
		t.Errorf("launch.json is %d bytes with a long prompt", st.Size())
	}
	kept, err := os.ReadFile(filepath.Join(h.SessionDir(sess.ID), home.PromptFile))
	if err != nil || string(kept) != prompt {
		t.Errorf("the whole prompt was not kept (%d bytes, %v)", len(kept), err)
	}
	if got, err := svc.client.Get(context.Background(), sess.ID); err != nil || !strings.HasPrefix(prompt, got.Prompt) || got.Prompt == "" {
		t.Errorf("status prompt = %.40q, %v", got.Prompt, err)
	}
}

// A quiet stream sends keep-alives (empty lines), so a client can tell it
// from a dead or frozen service.
func TestQuietStreamsSendKeepAlives(t *testing.T) {
	h := newHome(t)
	startServiceOpts(t, Options{Home: h, KeepAlive: 200 * time.Millisecond})
	conn, err := net.Dial("unix", h.Socket())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprint(conn, "GET /v1/events HTTP/1.1\r\nHost: agentctl\r\n\r\n")
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	var got []byte
	buf := make([]byte, 4096)
	for !strings.Contains(string(got), "\r\n\r\n") || !strings.Contains(string(got[strings.Index(string(got), "\r\n\r\n")+4:]), "\n") {
		n, err := conn.Read(buf)
		if err != nil {
			t.Fatalf("no keep-alive on a quiet event stream: %v (read %q)", err, got)
		}
		got = append(got, buf[:n]...)
	}
}

// Id-like fields of a launch are checked: none can become a path outside
// the home or put control sequences on a terminal.
func TestLaunchChecksIDLikeFields(t *testing.T) {
	svc := startService(t, newHome(t))
	cwd := t.TempDir()
	for name, req := range map[string]api.RunRequest{
		"resume_of as a path": {ResumeOf: "../../x"},
		"group as a path":     {Group: "../g"},
		"name with escapes":   {Name: "evil\x1b]0;title\x07"},
		"label key with =":    {Labels: map[string]string{"a=b": "c"}},
		"label with escapes":  {Labels: map[string]string{"k": "\x1b[2J"}},
	} {
		t.Run(name, func(t *testing.T) {
			req.Command, req.Cwd = []string{"true"}, cwd
			_, err := svc.run(req)
			if api.CodeOf(err) != api.CodeInvalid {
				t.Errorf("launch = %v, want an invalid-request error", err)
			}
		})
	}
}

// Parallel large request bodies are read a few at a time (as many as the
// byte budget takes: one 60 MB body): the others wait unread, so four 60 MB
// prompts cannot take the service's memory with them.
func TestParallelLargeBodiesAreReadAFewAtATime(t *testing.T) {
	h := newHome(t)
	startService(t, h)
	const (
		announce        = 60 << 20
		largeBodiesOnce = largeBodyBytes / announce
		senders         = largeBodiesOnce + 3
		chunk           = 64 << 10
		// Well past what the socket buffers hold: a sender that got this far
		// is being read by the service.
		readMark = 8 << 20
	)
	sent := make([]chan int, senders)
	for i := range sent {
		sent[i] = make(chan int, 1024)
		conn, err := net.Dial("unix", h.Socket())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		go func(conn net.Conn, progress chan<- int) {
			fmt.Fprintf(conn, "POST /v1/sessions HTTP/1.1\r\nHost: agentctl\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n{\"prompt\":\"", announce)
			buf := []byte(strings.Repeat("x", chunk))
			// Never the whole body: each sender stays open, read or waiting.
			for n := 0; n < announce/2; n += chunk {
				if _, err := conn.Write(buf); err != nil {
					return
				}
				progress <- n + chunk
			}
		}(conn, sent[i])
	}
	// Two senders are read past the mark; then no third one gets there.
	read := make([]bool, senders)
	count := func() int {
		c := 0
		for i, ch := range sent {
		drain:
			for {
				select {
				case n := <-ch:
					if n >= readMark {
						read[i] = true
					}
				default:
					break drain
				}
			}
			if read[i] {
				c++
			}
		}
		return c
	}
	deadline := time.Now().Add(30 * time.Second)
	for count() < largeBodiesOnce {
		if time.Now().After(deadline) {
			t.Fatalf("%d senders read past %d bytes after 30s, want %d", count(), readMark, largeBodiesOnce)
		}
		time.Sleep(20 * time.Millisecond)
	}
	settle := time.Now().Add(time.Second)
	for time.Now().Before(settle) {
		if c := count(); c > largeBodiesOnce {
			t.Fatalf("%d large bodies read at once, want at most %d", c, largeBodiesOnce)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A session removed (rm --force) before its end was claimed has no folder
// to claim in: its end is announced once, at once, and not retried forever.
func TestEndOfARemovedSessionIsAnnouncedOnce(t *testing.T) {
	h := newHome(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	o, err := newOps(ctx, h, slog.New(slog.DiscardHandler), "test", config.Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer o.bus.Close()
	before := o.bus.Last()
	o.claimEnd(api.Session{ID: "01gone", Status: api.StatusKilled})
	if got := o.bus.Last() - before; got != 1 {
		t.Fatalf("%d events for the removed session's end, want 1", got)
	}
	done := make(chan struct{})
	go func() { o.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the claim of a removed session's end is still being retried")
	}
}

// Clients that send large bodies with an invalid field and never read the
// answer hold nothing: the answer quotes a short prefix of the value (not
// the value), the budget is given back when the answer begins, and a
// legitimate large request goes through at once.
func TestLargeBodiesOfClientsThatDoNotReadHoldNothing(t *testing.T) {
	h := newHome(t)
	svc := startService(t, h)
	name := strings.Repeat("n", 3<<20)
	body := fmt.Sprintf(`{"name":%q,"command":["true"],"cwd":"/"}`, name)
	var conns []net.Conn
	for range 3 {
		conn, err := net.Dial("unix", h.Socket())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		// Written aside, bounded: a body the service does not take must
		// fail the test below, not hang it.
		conn.SetWriteDeadline(time.Now().Add(20 * time.Second))
		go fmt.Fprintf(conn, "POST /v1/sessions HTTP/1.1\r\nHost: agentctl\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
		conns = append(conns, conn)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	sess, err := svc.client.Launch(ctx, api.RunRequest{Command: []string{"true"}, Prompt: strings.Repeat("p", 2<<20), Cwd: t.TempDir(), Env: []string{"PATH=" + os.Getenv("PATH")}})
	if err != nil {
		t.Fatalf("a 2 MiB launch behind clients that do not read: %v", err)
	}
	t.Cleanup(func() { killSession(h, sess.ID) })
	conns[0].SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conns[0]), nil)
	if err != nil {
		t.Fatal(err)
	}
	answer, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusBadRequest || len(answer) > 4<<10 || !strings.Contains(string(answer), fmt.Sprintf("(%d bytes)", len(name))) {
		t.Errorf("answer to a %d-byte name: %s, %d bytes: %.300s; want a 400 quoting a prefix and the length", len(name), resp.Status, len(answer), answer)
	}
}

// A large body that cannot be taken in time is answered busy, with a
// message that says so, not left to the client's own time-out.
func TestLargeBodyThatWaitsTooLongIsAnsweredBusy(t *testing.T) {
	h := newHome(t)
	svc := startServiceOpts(t, Options{Home: h, BodyWait: 500 * time.Millisecond})
	// A body as large as the budget, trickled: it holds the whole budget.
	conn, err := net.Dial("unix", h.Socket())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /v1/sessions HTTP/1.1\r\nHost: agentctl\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n{\"prompt\":\"", largeBodyBytes)
	// Past what the socket buffers hold: once written, it is being read.
	conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if _, err := conn.Write([]byte(strings.Repeat("x", 4<<20))); err != nil {
		t.Fatalf("the held body was not read: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	_, err = svc.client.Launch(ctx, api.RunRequest{Command: []string{"true"}, Prompt: strings.Repeat("p", 2<<20), Cwd: t.TempDir()})
	if api.CodeOf(err) != api.CodeBusy || !strings.Contains(err.Error(), "busy") || strings.Contains(err.Error(), "kill -CONT") {
		t.Errorf("launch while the budget is held = %v; want a busy answer", err)
	}
}

// Event streams are capped per uid: one past the cap is answered busy, and
// a stream that closed gives its place back.
func TestEventStreamsAreCappedPerUID(t *testing.T) {
	h := newHome(t)
	startServiceOpts(t, Options{Home: h, EventStreams: 3})
	open := func() (net.Conn, *http.Response) {
		t.Helper()
		conn, err := net.Dial("unix", h.Socket())
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprint(conn, "GET /v1/events HTTP/1.1\r\nHost: agentctl\r\n\r\n")
		conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatal(err)
		}
		return conn, resp
	}
	var conns []net.Conn
	for range 3 {
		conn, resp := open()
		defer conn.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("stream %d: %s", len(conns)+1, resp.Status)
		}
		conns = append(conns, conn)
	}
	conn, resp := open()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	conn.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), `"busy"`) || !strings.Contains(string(body), "close some") {
		t.Fatalf("the fourth stream: %s %s; want 503, busy, and what to do", resp.Status, body)
	}
	conns[0].Close()
	eventually(t, 10*time.Second, "a closed stream's place given back", func() bool {
		conn, resp := open()
		conn.Close()
		return resp.StatusCode == http.StatusOK
	})
}

// A session that ended reads exited (or killed) from the moment its
// process is gone: never unknown while its monitor writes the exit record.
// 200 quick sessions, each polled every millisecond through the API.
func TestStatusNeverUnknownAtExit(t *testing.T) {
	h := newHome(t)
	svc := startService(t, h)
	const sessions, workers = 200, 4
	errs := make(chan error, sessions)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < sessions; i += workers {
				errs <- quickSession(svc, t.TempDir())
			}
		}()
	}
	wg.Wait()
	close(errs)
	failed := 0
	for err := range errs {
		if err != nil {
			if failed++; failed <= 5 {
				t.Error(err)
			}
		}
	}
	if failed > 0 {
		t.Errorf("%d of %d sessions read wrong at their end", failed, sessions)
	}
}

// quickSession runs `exit 3` and polls its status every millisecond until
// it ends; an error says what was seen that should not have been.
func quickSession(svc *service, cwd string) error {
	ctx := context.Background()
	sess, err := svc.client.Launch(ctx, api.RunRequest{Command: []string{"sh", "-c", "exit 3"}, Cwd: cwd, Env: []string{"PATH=" + os.Getenv("PATH")}})
	if err != nil {
		return err
	}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		got, err := svc.client.Get(ctx, sess.ID)
		if err != nil {
			return err
		}
		switch got.Status {
		case api.StatusRunning:
			time.Sleep(time.Millisecond)
			continue
		case api.StatusExited:
			if got.ExitCode == nil || *got.ExitCode != 3 {
				return fmt.Errorf("session %s exited with %v, want 3", sess.ID, got.ExitCode)
			}
			return nil
		}
		return fmt.Errorf("session %s read %s (%q) at its end", sess.ID, got.Status, got.Warnings)
	}
	return fmt.Errorf("session %s did not end within 30s", sess.ID)
}

// A forced stop of a session whose monitor is frozen (SIGSTOP) kills the
// agent itself, and the session reads killed by SIGKILL: agentctl knows it
// killed it, it is not lost.
func TestForcedStopWithAFrozenMonitorReadsKilled(t *testing.T) {
	h := newHome(t)
	svc := startService(t, h)
	sess, err := svc.run(api.RunRequest{Command: []string{"sleep", "300"}, Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := spawn.ReadRecord(h.SessionDir(sess.ID))
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(rec.Shim.PID, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if proc.Alive(rec.Shim) {
			syscall.Kill(rec.Shim.PID, syscall.SIGKILL)
			syscall.Kill(rec.Shim.PID, syscall.SIGCONT)
		}
	})
	got, err := svc.client.Stop(context.Background(), sess.ID, api.StopRequest{Force: true})
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != api.StatusKilled || got.Signal != "SIGKILL" {
		t.Errorf("after stop --force: %s (signal %q, warnings %q); want killed by SIGKILL", got.Status, got.Signal, got.Warnings)
	}
	if again, err := svc.client.Get(context.Background(), sess.ID); err != nil || again.Status != api.StatusKilled {
		t.Errorf("status afterwards = %s, %v; want killed", again.Status, err)
	}
}

// Oversized values are refused as the caller's error (400, not 500), and
// the answer quotes only a short prefix of them with their length.
func TestOversizedValuesAreInvalidAndNotEchoed(t *testing.T) {
	svc := startService(t, newHome(t))
	ctx := context.Background()
	long := "/" + strings.Repeat("d", 100<<10)
	for name, call := range map[string]func() error{
		"lock":   func() error { _, err := svc.client.Lock(ctx, api.LockRequest{Directory: long}); return err },
		"unlock": func() error { _, err := svc.client.Unlock(ctx, long); return err },
		"fuse": func() error {
			_, err := svc.client.SetFuse(ctx, api.FuseRequest{Directory: long, TTL: "1m"})
			return err
		},
		"run name": func() error {
			_, err := svc.run(api.RunRequest{Command: []string{"true"}, Cwd: "/", Name: long[1:]})
			return err
		},
		"run cwd": func() error { _, err := svc.run(api.RunRequest{Command: []string{"true"}, Cwd: long[1:]}); return err },
		"status":  func() error { _, err := svc.client.Get(ctx, long[1:]); return err },
	} {
		err := call()
		if code := api.CodeOf(err); code != api.CodeInvalid && code != api.CodeNotFound {
			t.Errorf("%s with a 100 KB value: %v (code %s), want invalid", name, text.Ellipsis(fmt.Sprint(err), 200), code)
			continue
		}
		if msg := err.Error(); len(msg) > 1<<10 || !strings.Contains(msg, fmt.Sprintf("(%d bytes)", len(long)-1)) && !strings.Contains(msg, fmt.Sprintf("(%d bytes)", len(long))) {
			t.Errorf("%s: the answer is %d bytes: %.300s; want a short prefix and the length", name, len(msg), msg)
		}
	}
}
