package openclaw

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"fmt"
	"hash/fnv"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentctl/agentctl/adapters"
)

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestSignaturePayload(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   signedFields
		want string
	}{
		{
			name: "all fields",
			in: signedFields{DeviceID: "dev", ClientID: "gateway-client", ClientMode: "backend", Role: "operator",
				Scopes: []string{"operator.read", "operator.write"}, SignedAtMs: 1700000000123, Token: "tok", Nonce: "n1",
				Platform: "Linux", DeviceFamily: "Server"},
			want: "v3|dev|gateway-client|backend|operator|operator.read,operator.write|1700000000123|tok|n1|linux|server",
		},
		{
			name: "no token, no family",
			in: signedFields{DeviceID: "dev", ClientID: "cli", ClientMode: "cli", Role: "operator",
				Scopes: []string{"operator.read"}, SignedAtMs: 5, Nonce: "abc", Platform: "darwin"},
			want: "v3|dev|cli|cli|operator|operator.read|5||abc|darwin|",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := signaturePayload(tt.in); got != tt.want {
				t.Errorf("payload\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestProveSignsThePayload(t *testing.T) {
	t.Parallel()
	id, err := LoadOrCreateIdentity(filepath.Join(t.TempDir(), IdentityFile))
	if err != nil {
		t.Fatal(err)
	}
	f := signedFields{DeviceID: id.DeviceID, ClientID: clientID, ClientMode: clientMode, Role: roleOp,
		Scopes: []string{ScopeRead}, SignedAtMs: 42, Token: "t", Nonce: "n", Platform: "linux"}
	p := id.prove(f)
	pub, err := base64.RawURLEncoding.DecodeString(p.PublicKey)
	if err != nil || len(pub) != ed25519.PublicKeySize {
		t.Fatalf("public key %q: not 32 raw bytes in unpadded base64url (%v)", p.PublicKey, err)
	}
	sig, err := base64.RawURLEncoding.DecodeString(p.Signature)
	if err != nil {
		t.Fatalf("signature not unpadded base64url: %v", err)
	}
	if !ed25519.Verify(pub, []byte(signaturePayload(f)), sig) {
		t.Error("signature does not verify over the payload")
	}
	if p.ID != deviceID(pub) || p.SignedAt != 42 || p.Nonce != "n" {
		t.Errorf("proof fields: %+v", p)
	}
}

func TestIdentityFile(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	path := filepath.Join(home, IdentityFile)
	first, err := LoadOrCreateIdentity(path)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("identity file mode %v, want 0600", st.Mode().Perm())
	}
	dst, _ := os.Stat(filepath.Dir(path))
	if dst.Mode().Perm() != 0o700 {
		t.Errorf("identity dir mode %v, want 0700", dst.Mode().Perm())
	}
	again, err := LoadOrCreateIdentity(path)
	if err != nil {
		t.Fatal(err)
	}
	if again.DeviceID != first.DeviceID || len(first.DeviceID) != 64 {
		t.Errorf("reload gave device %q, first %q", again.DeviceID, first.DeviceID)
	}

	// A file others can read is tightened on load.
	os.Chmod(path, 0o644)
	if _, err := LoadOrCreateIdentity(path); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Errorf("mode after load %v, want 0600", st.Mode().Perm())
	}

	// A corrupt file is an error naming the file, never silently replaced.
	os.WriteFile(path, []byte("{not json"), 0o600)
	_, err = LoadOrCreateIdentity(path)
	if err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("corrupt identity: err %v", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "{not json" {
		t.Error("corrupt identity file was overwritten")
	}
}

func TestIdentityConcurrentCreateAgrees(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), IdentityFile)
	const n = 8
	ids := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id, err := LoadOrCreateIdentity(path)
			ids[i], errs[i] = id.DeviceID, err
		}()
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if ids[i] != ids[0] {
			t.Fatalf("creator %d got device %s, creator 0 got %s", i, ids[i], ids[0])
		}
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("identity dir holds %d entries, want only the key file", len(entries))
	}
}

func TestDecodeFrame(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		wantErr bool
		check   func(inboundFrame) bool
	}{
		{in: `{"type":"res","id":"a","ok":true,"payload":{"x":1}}`, check: func(f inboundFrame) bool { return f.OK && string(f.Payload) == `{"x":1}` }},
		{in: `{"type":"res","id":"a","ok":false,"error":{"code":"FORBIDDEN","message":"m","details":{"code":"MISSING_SCOPE"}}}`,
			check: func(f inboundFrame) bool { return !f.OK && f.Error.Code == "FORBIDDEN" }},
		{in: `{"type":"event","event":"tick","payload":{},"seq":7}`, check: func(f inboundFrame) bool { return f.Event == "tick" && *f.Seq == 7 }},
		{in: `{"type":"res","ok":true}`, wantErr: true},
		{in: `{"type":"event"}`, wantErr: true},
		{in: `{"type":"req","id":"x","method":"m"}`, wantErr: true},
		{in: `not json`, wantErr: true},
	}
	for _, tt := range tests {
		f, err := decodeFrame([]byte(tt.in))
		if (err != nil) != tt.wantErr {
			t.Errorf("%s: err %v, wantErr %v", tt.in, err, tt.wantErr)
			continue
		}
		if err == nil && !tt.check(f) {
			t.Errorf("%s: decoded %+v", tt.in, f)
		}
	}
}

func TestGatewayErrorMessages(t *testing.T) {
	t.Parallel()
	tests := []struct {
		wire       string
		wantSubstr string
		missing    bool
	}{
		{`{"code":"INVALID_REQUEST","message":"protocol mismatch","details":{"code":"PROTOCOL_MISMATCH"}}`, "protocol version 4", false},
		{`{"code":"INVALID_REQUEST","message":"unauthorized","details":{"code":"AUTH_TOKEN_MISMATCH"}}`, "OPENCLAW_GATEWAY_TOKEN", false},
		{`{"code":"INVALID_REQUEST","message":"unauthorized","details":{"code":"AUTH_TOKEN_MISSING"}}`, "requires a token", false},
		{`{"code":"NOT_PAIRED","message":"pairing required","details":{"code":"PAIRING_REQUIRED","reason":"scope-upgrade"}}`, "openclaw devices", false},
		{`{"code":"FORBIDDEN","message":"missing scope","details":{"code":"MISSING_SCOPE","missingScope":"operator.write"}}`, "operator.write", true},
		{`{"code":"INVALID_REQUEST","message":"bad"}`, "INVALID_REQUEST: bad", false},
	}
	for _, tt := range tests {
		var w wireError
		if err := jsonUnmarshal(tt.wire, &w); err != nil {
			t.Fatal(err)
		}
		err := error(newGatewayError("connect", &w))
		if !strings.Contains(err.Error(), tt.wantSubstr) {
			t.Errorf("%s: message %q lacks %q", tt.wire, err, tt.wantSubstr)
		}
		if errors.Is(err, ErrMissingScope) != tt.missing {
			t.Errorf("%s: Is(ErrMissingScope) = %v", tt.wire, !tt.missing)
		}
	}
}

func TestHandshake(t *testing.T) {
	t.Parallel()
	g := newTestGateway(t)
	ctx := testCtx(t)
	c, err := Dial(ctx, g.config(t, testToken), []string{ScopeRead})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if !c.HasScope(ScopeRead) || c.HasScope(ScopeWrite) {
		t.Errorf("scopes %v, want only read", c.Scopes())
	}
	var res listResult
	if err := c.Call(ctx, "sessions.list", listParams{Limit: 5}, &res); err != nil {
		t.Fatal(err)
	}
}

func TestHandshakeFailures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		setup  func(g *testGateway)
		token  string
		substr string
		check  func(error) bool
	}{
		{name: "wrong token", token: "wrong", substr: "rejected the token",
			check: func(err error) bool {
				var ge *GatewayError
				return errors.As(err, &ge) && ge.DetailCode == "AUTH_TOKEN_MISMATCH"
			}},
		{name: "no token", token: "", substr: "OPENCLAW_GATEWAY_TOKEN"},
		{name: "protocol mismatch", token: testToken, setup: func(g *testGateway) { g.minPro = 5 }, substr: "protocol version 4",
			check: func(err error) bool {
				var ge *GatewayError
				return errors.As(err, &ge) && ge.DetailCode == detailProtocolMismatch
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newTestGateway(t)
			if tt.setup != nil {
				tt.setup(g)
			}
			a := New(g.config(t, tt.token))
			_, err := a.Discover(testCtx(t))
			if err == nil {
				t.Fatal("Discover succeeded")
			}
			if !strings.Contains(err.Error(), tt.substr) || !strings.Contains(err.Error(), g.url()) {
				t.Errorf("error %q should name %q and the gateway URL", err, tt.substr)
			}
			if tt.check != nil && !tt.check(err) {
				t.Errorf("error %v has the wrong type or code", err)
			}
		})
	}
}

func TestDiscoverGatewayDown(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	a := New(Config{URL: "ws://" + addr, Token: testToken, IdentityPath: filepath.Join(t.TempDir(), IdentityFile)})
	_, err = a.Discover(testCtx(t))
	if !errors.Is(err, ErrUnreachable) || !strings.Contains(err.Error(), addr) {
		t.Fatalf("err %v, want ErrUnreachable naming %s", err, addr)
	}
}

func TestDialRetriesWhileGatewayStarts(t *testing.T) {
	t.Parallel()
	g := newTestGateway(t)
	g.unavailable = 2
	c, err := Dial(testCtx(t), g.config(t, testToken), []string{ScopeRead})
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if n := g.connectCount(); n != 3 {
		t.Errorf("connect attempts %d, want 3", n)
	}
}

func TestCallHonoursContext(t *testing.T) {
	g := newTestGateway(t)
	g.silent["sessions.list"] = true
	c, err := Dial(testCtx(t), g.config(t, testToken), []string{ScopeRead})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	err = c.Call(ctx, "sessions.list", listParams{Limit: 1}, nil)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "sessions.list") {
		t.Fatalf("err %v, want deadline exceeded naming the method", err)
	}
	// The connection is still usable for other calls.
	if err := c.Call(testCtx(t), "sessions.subscribe", map[string]any{}, nil); err != nil {
		t.Fatal(err)
	}
}

func TestCallAfterGatewayClosed(t *testing.T) {
	t.Parallel()
	g := newTestGateway(t)
	c, err := Dial(testCtx(t), g.config(t, testToken), []string{ScopeRead})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	g.dropAll()
	<-c.Done()
	err = c.Call(testCtx(t), "sessions.list", listParams{Limit: 1}, nil)
	if err == nil || !strings.Contains(err.Error(), "1012") {
		t.Fatalf("err %v, want the gateway's close code", err)
	}
}

func TestDiscoverPagesEverything(t *testing.T) {
	t.Parallel()
	g := newTestGateway(t)
	const n = 2*listPageSize + 50
	for i := range n {
		g.rows = append(g.rows, row(dashboardKey(fmt.Sprintf("s%03d", i)), nil))
	}
	got, err := New(g.config(t, testToken)).Discover(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != n {
		t.Fatalf("got %d sessions, want %d", len(got), n)
	}
	seen := map[string]bool{}
	for _, s := range got {
		if seen[s.NativeID] {
			t.Fatalf("duplicate %s", s.NativeID)
		}
		seen[s.NativeID] = true
	}
	pages := 0
	for _, m := range g.callLog() {
		if m == "sessions.list" {
			pages++
		}
	}
	if pages != 3 {
		t.Errorf("sessions.list calls %d, want 3 pages", pages)
	}
}

func TestDiscoverCatchesRowsMovedWhilePaging(t *testing.T) {
	t.Parallel()
	g := newTestGateway(t)
	const n = listPageSize + 10
	for i := range n {
		g.rows = append(g.rows, row(dashboardKey(fmt.Sprintf("s%03d", i)), nil))
	}
	// While the second page is asked for, the last row is updated and moves
	// to the front, into the page already read.
	moved := false
	g.beforePage = func(offset int) {
		if offset == 0 || moved {
			return
		}
		moved = true
		g.mu.Lock()
		last := g.rows[len(g.rows)-1]
		g.rows = append([]map[string]any{last}, g.rows[:len(g.rows)-1]...)
		g.mu.Unlock()
	}
	got, err := New(g.config(t, testToken)).Discover(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != n {
		t.Fatalf("got %d sessions, want %d (a moved row was lost)", len(got), n)
	}
}

func TestDiscoverStopsOnPagingThatDoesNotAdvance(t *testing.T) {
	t.Parallel()
	c := stuckLister{}
	_, err := listAll(testCtx(t), c, 10, "x")
	if err == nil || !strings.Contains(err.Error(), "no next offset") {
		t.Fatalf("err %v", err)
	}
}

type stuckLister struct{}

func (stuckLister) Call(_ context.Context, _ string, _, out any) error {
	return jsonUnmarshal(`{"hasMore":true,"nextOffset":0,"sessions":[{"key":"a"}]}`, out)
}

func ptr[T any](v T) *T { return &v }

func TestNativeState(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		row      sessionRow
		want     adapters.NativeState
		warnings bool
	}{
		{"active run wins", sessionRow{Status: "done", HasActiveRun: ptr(true)}, adapters.NativeBusy, false},
		{"running", sessionRow{Status: "running"}, adapters.NativeRunning, false},
		{"running but no active run", sessionRow{Status: "running", HasActiveRun: ptr(false)}, adapters.NativeUnknown, true},
		{"done", sessionRow{Status: "done", HasActiveRun: ptr(false)}, adapters.NativeDone, false},
		{"done, but aborted", sessionRow{Status: "done", HasActiveRun: ptr(false), AbortedLastRun: ptr(true)}, adapters.NativeAborted, false},
		{"done, not aborted", sessionRow{Status: "done", AbortedLastRun: ptr(false)}, adapters.NativeDone, false},
		{"failed", sessionRow{Status: "failed", LastRunError: ptr("boom")}, adapters.NativeFailed, true},
		{"timeout", sessionRow{Status: "timeout"}, adapters.NativeFailed, true},
		{"killed", sessionRow{Status: "killed", AbortedLastRun: ptr(true)}, adapters.NativeAborted, false},
		{"never ran", sessionRow{HasActiveRun: ptr(false)}, adapters.NativeDone, false},
		{"says nothing", sessionRow{}, adapters.NativeUnknown, false},
		{"unknown status", sessionRow{Status: "paused"}, adapters.NativeUnknown, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, w := nativeState(tt.row)
			if got != tt.want || (len(w) > 0) != tt.warnings {
				t.Errorf("state %q warnings %v, want %q (warnings %v)", got, w, tt.want, tt.warnings)
			}
		})
	}
}

func TestDiscoverMapsRows(t *testing.T) {
	t.Parallel()
	g := newTestGateway(t)
	g.rows = []map[string]any{
		row(dashboardKey("a"), map[string]any{"status": "done", "hasActiveRun": false, "model": "m1", "inputTokens": 101,
			"outputTokens": 10, "estimatedCostUsd": 0.5, "derivedTitle": "fix the bug", "startedAt": 1700000000500}),
		row(dashboardKey("b"), map[string]any{"hasActiveRun": true, "status": "running", "inputTokens": nil}),
		{"key": dashboardKey("c"), "createdAt": "not a number"},
		{"sessionId": "no key"},
	}
	got, err := New(g.config(t, testToken)).Discover(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 {
		t.Fatalf("got %d sessions, want 3 (the keyless row dropped): %+v", len(got), got)
	}
	a, b, c := got[0], got[1], got[2]
	if a.Adapter != Name || a.NativeID != dashboardKey("a") || a.State != adapters.NativeDone || a.Model != "m1" ||
		*a.TokensIn != 101 || *a.TokensOut != 10 || *a.CostUSD != 0.5 || a.FirstPrompt != "fix the bug" ||
		a.CreatedAt.UnixMilli() != 1700000000000 || a.UpdatedAt.UnixMilli() != 1700000001000 || a.Cwd != "" || a.Process != nil {
		t.Errorf("row a mapped to %+v", a)
	}
	if b.State != adapters.NativeBusy || b.TokensIn != nil || b.Model != "default-model" {
		t.Errorf("row b mapped to %+v", b)
	}
	if c.NativeID != dashboardKey("c") || c.State != adapters.NativeUnknown || len(c.Warnings) == 0 {
		t.Errorf("unreadable row c mapped to %+v", c)
	}
}

func TestTranscript(t *testing.T) {
	t.Parallel()
	g := newTestGateway(t)
	key := dashboardKey("t")
	g.rows = []map[string]any{row(key, nil)}
	var msgs []map[string]any
	for i := range 2500 {
		m := map[string]any{"role": "user", "content": fmt.Sprintf("m%d", i), "timestamp": 1700000000000 + i}
		switch i % 3 {
		case 1:
			m = map[string]any{"role": "assistant", "content": []any{
				map[string]any{"type": "text", "text": fmt.Sprintf("m%d", i)},
				map[string]any{"type": "toolCall", "name": "exec", "arguments": map[string]any{"command": "ls"}},
			}}
		case 2:
			m = map[string]any{"role": "toolResult", "content": []any{map[string]any{"type": "text", "text": fmt.Sprintf("m%d", i)}}}
		}
		msgs = append(msgs, m)
	}
	g.history[key] = msgs
	a := New(g.config(t, testToken))
	tests := []struct {
		n     int
		count int
		first string
	}{
		{n: 3, count: 3, first: "m2497"},
		{n: 1200, count: 1200, first: "m1300"},
		{n: 0, count: 2500, first: "m0"},
		{n: 5000, count: 2500, first: "m0"},
	}
	for _, tt := range tests {
		got, err := a.Transcript(testCtx(t), key, tt.n)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != tt.count || !strings.HasPrefix(got[0].Text, tt.first) || !strings.HasPrefix(got[len(got)-1].Text, "m2499") {
			t.Fatalf("n=%d: %d messages, first %q last %q", tt.n, len(got), got[0].Text, got[len(got)-1].Text)
		}
	}
	got, _ := a.Transcript(testCtx(t), key, 3)
	if got[0].Role != "assistant" || got[0].Text != "m2497\ntool call: exec {\"command\":\"ls\"}" ||
		got[1].Role != "tool" || got[2].Role != "user" || got[2].Time.UnixMilli() != 1700000002499 {
		t.Errorf("mapped messages %+v", got)
	}
	if _, err := a.Transcript(testCtx(t), dashboardKey("nope"), 3); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown key: err %v, want ErrNotFound", err)
	}
}

func TestStop(t *testing.T) {
	t.Parallel()
	g := newTestGateway(t)
	key := dashboardKey("busy")
	g.rows = []map[string]any{row(key, map[string]any{"hasActiveRun": true, "status": "running"}), row(dashboardKey("idle"), nil)}
	g.active[key] = ""
	a := New(g.config(t, testToken))
	if err := a.Stop(testCtx(t), key); err != nil {
		t.Fatal(err)
	}
	if len(g.aborted) != 1 || g.aborted[0] != key {
		t.Errorf("aborted %v", g.aborted)
	}
	if err := a.Stop(testCtx(t), dashboardKey("idle")); !errors.Is(err, ErrNoActiveRun) {
		t.Errorf("idle session: err %v, want ErrNoActiveRun", err)
	}
	if err := a.Stop(testCtx(t), dashboardKey("nope")); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown session: err %v, want ErrNotFound", err)
	}
}

func TestStopWithoutWriteScope(t *testing.T) {
	t.Parallel()
	g := newTestGateway(t)
	g.grantWrite = false
	key := dashboardKey("busy")
	g.rows = []map[string]any{row(key, nil)}
	g.active[key] = ""
	err := New(g.config(t, testToken)).Stop(testCtx(t), key)
	if !errors.Is(err, ErrMissingScope) || !strings.Contains(err.Error(), ScopeWrite) {
		t.Fatalf("err %v, want ErrMissingScope naming %s", err, ScopeWrite)
	}
	if len(g.aborted) != 0 {
		t.Error("a run was aborted without the write scope")
	}

	// The gateway's own refusal maps the same way.
	c, err := Dial(testCtx(t), g.config(t, testToken), []string{ScopeRead})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	err = c.Call(testCtx(t), "sessions.abort", map[string]any{"key": key}, nil)
	if !errors.Is(err, ErrMissingScope) {
		t.Fatalf("gateway refusal: err %v, want ErrMissingScope", err)
	}
}

func nextEvent(t *testing.T, ch <-chan Event) Event {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if !ok {
			t.Fatal("watch channel closed")
		}
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no watch event")
	}
	return Event{}
}

func TestWatch(t *testing.T) {
	t.Parallel()
	g := newTestGateway(t)
	ctx, cancel := context.WithCancel(testCtx(t))
	ch, err := New(g.config(t, testToken)).Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ev := nextEvent(t, ch); ev.Kind != EventConnected {
		t.Fatalf("first event %+v, want connected", ev)
	}
	key := dashboardKey("w")
	g.push(key, "send", row(key, map[string]any{"status": "running", "hasActiveRun": true}))
	g.push(key, "participants", row(key, map[string]any{"status": "running", "hasActiveRun": true})) // same state: not repeated
	g.push(key, "", row(key, map[string]any{"status": "done", "hasActiveRun": false}))
	ev := nextEvent(t, ch)
	if ev.Kind != EventChanged || ev.Key != key || ev.Reason != "send" || ev.Session.State != adapters.NativeBusy {
		t.Fatalf("event %+v, want changed/busy", ev)
	}
	ev = nextEvent(t, ch)
	if ev.Kind != EventChanged || ev.Session.State != adapters.NativeDone {
		t.Fatalf("event %+v, want changed/done", ev)
	}

	// A gateway restart: the watch says so and comes back by itself.
	g.dropAll()
	if ev := nextEvent(t, ch); ev.Kind != EventDisconnected || ev.Err == nil {
		t.Fatalf("event %+v, want disconnected with a reason", ev)
	}
	if ev := nextEvent(t, ch); ev.Kind != EventConnected {
		t.Fatalf("event %+v, want connected again", ev)
	}
	g.push(key, "send", row(key, map[string]any{"status": "killed", "hasActiveRun": false}))
	if ev := nextEvent(t, ch); ev.Session == nil || ev.Session.State != adapters.NativeAborted {
		t.Fatalf("event %+v, want changed/aborted", ev)
	}

	cancel()
	for range ch { // drains, then ends: the channel is closed
	}
}

func TestBadURL(t *testing.T) {
	t.Parallel()
	a := New(Config{URL: "ftp://127.0.0.1:1", IdentityPath: filepath.Join(t.TempDir(), IdentityFile)})
	if _, err := a.Discover(testCtx(t)); err == nil || !strings.Contains(err.Error(), "ws://") {
		t.Errorf("err %v", err)
	}
	if _, err := a.Watch(testCtx(t)); err == nil {
		t.Error("Watch accepted a bad URL")
	}
}

func TestConfigFromEnv(t *testing.T) {
	t.Parallel()
	env := map[string]string{EnvURL: "ws://127.0.0.1:1", EnvToken: "tok"}
	cfg := ConfigFromEnv("/h", func(k string) string { return env[k] })
	if cfg.URL != "ws://127.0.0.1:1" || cfg.Token != "tok" || cfg.IdentityPath != filepath.Join("/h", IdentityFile) {
		t.Errorf("config %+v", cfg)
	}
	env = map[string]string{EnvPort: "18999"}
	if got := ConfigFromEnv("/h", func(k string) string { return env[k] }).URL; got != "ws://127.0.0.1:18999" {
		t.Errorf("URL from the port: %q", got)
	}
	env = map[string]string{EnvPort: "18999", EnvURL: "wss://gw.example:443"}
	if got := ConfigFromEnv("/h", func(k string) string { return env[k] }).URL; got != "wss://gw.example:443" {
		t.Errorf("an explicit URL must win over the port: %q", got)
	}
	if !New(cfg).Configured() || New(ConfigFromEnv("/h", func(string) string { return "" })).Configured() {
		t.Error("Configured is wrong")
	}
	if New(Config{}).URL() != DefaultURL {
		t.Error("default URL")
	}
}

func TestStopRunOfAnotherClient(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		grantAdmin bool
		wantErr    error
		connects   int
	}{
		{name: "admin granted: aborted on the second try", grantAdmin: true, connects: 2},
		{name: "admin refused: a clear error", grantAdmin: false, wantErr: ErrNotOwner, connects: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newTestGateway(t)
			g.grantAdmin = tt.grantAdmin
			key := dashboardKey("theirs")
			g.rows = []map[string]any{row(key, map[string]any{"hasActiveRun": true, "status": "running"})}
			g.active[key] = "some-other-device"
			err := New(g.config(t, testToken)).Stop(testCtx(t), key)
			if tt.wantErr == nil && err != nil {
				t.Fatal(err)
			}
			if tt.wantErr != nil && (!errors.Is(err, tt.wantErr) || !strings.Contains(err.Error(), ScopeAdmin)) {
				t.Fatalf("err %v, want %v naming %s", err, tt.wantErr, ScopeAdmin)
			}
			if n := g.connectCount(); n != tt.connects {
				t.Errorf("connects %d, want %d", n, tt.connects)
			}
			if aborted := len(g.aborted) == 1; aborted != (tt.wantErr == nil) {
				t.Errorf("aborted %v", g.aborted)
			}
		})
	}
}

// dashboardKey is a session key shaped as the real gateway makes them for
// operator-created sessions (agent:main:dashboard:<uuid>), one per name.
func dashboardKey(name string) string {
	h := fnv.New64a()
	h.Write([]byte(name))
	v := h.Sum64()
	return fmt.Sprintf("agent:main:dashboard:%08x-%04x-4%03x-8%03x-%012x", uint32(v>>32), uint16(v>>16), uint16(v)&0xfff, uint16(v>>4)&0xfff, v&0xffffffffffff)
}

func TestValidKey(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		key  string
		want bool
	}{
		{"agent:main:dashboard:7f3e2b1c-5a4d-4e6f-9b8a-0c1d2e3f4a5b", true},
		{"agent:main:main", true},
		{"agent:ops:telegram:group:-100123456", true},
		{"agent:main:whatsapp:dm:+15551234567", true},
		{"agent:main:email:dm:a.user@example.com", true},
		{"hook:0b9d6c4e-2f1a-4c3b-8d7e-6a5f4e3d2c1b", true},
		{"agent:main:dash", true}, // a prefix as typed
		{"agent:main:", true},
		{"7f3e2b1c-5a4d-4e6f-9b8a-0c1d2e3f4a5b", true}, // a transcript sessionId
		{"", false},
		{"../../etc/passwd", false},
		{"agent:main:../x", false},
		{"agent:..:x", false},
		{"agent:main:a b", false},
		{"agent:main:a/b", false},
		{"agent:main:a\\b", false},
		{"agent:main:\x1b[2J", false},
		{"agent:main:%2e%2e", false},
		{strings.Repeat("a", maxKeyLen+1), false},
	} {
		if got := ValidKey(tc.key); got != tc.want {
			t.Errorf("ValidKey(%q) = %v, want %v", tc.key, got, tc.want)
		}
	}
}
