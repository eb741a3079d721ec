package k8shelper

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/client"
)

// streamer is a backend whose attach echoes what is typed and whose event
// stream sends two events: the helper's side of the streaming operations,
// without a cluster.
type streamer struct {
	Backend
	typed string
	opts  client.EventOptions
}

func (s *streamer) AttachStreams(_ context.Context, id string, in io.Reader, out io.Writer) (api.Session, error) {
	b, err := io.ReadAll(in)
	if err != nil {
		return api.Session{}, err
	}
	s.typed = string(b)
	io.WriteString(out, "echo: "+s.typed)
	return api.Session{ID: id, Status: api.StatusExited, ExitCode: new(3)}, nil
}

func (s *streamer) Events(_ context.Context, o client.EventOptions, started func(uint64), fn func(api.Event) error) error {
	s.opts = o
	started(0)
	for i, typ := range []string{api.EventSessionStarted, api.EventSessionStopped} {
		if err := fn(api.Event{Seq: uint64(i + 1), Type: typ, SessionID: "j1"}); err != nil {
			return err
		}
	}
	return nil
}

func replies(t *testing.T, out *bytes.Buffer) []Reply {
	t.Helper()
	var rs []Reply
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		var r Reply
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("reply %q: %v", sc.Text(), err)
		}
		rs = append(rs, r)
	}
	return rs
}

func TestServeAttach(t *testing.T) {
	t.Parallel()
	s := &streamer{}
	// The request, then what is typed, on one input.
	in := strings.NewReader(`{"id":"j1"}` + "hello\r")
	var out bytes.Buffer
	if code := Serve(context.Background(), s, "attach", in, &out); code != 0 {
		t.Fatalf("exit %d: %s", code, out.String())
	}
	if s.typed != "hello\r" {
		t.Errorf("typed %q, want what followed the request", s.typed)
	}
	rs := replies(t, &out)
	if len(rs) != 2 || rs[0].Chunk == nil || string(rs[0].Chunk.Data) != "echo: hello\r" {
		t.Fatalf("replies %+v: want the output, then the session", rs)
	}
	var sess api.Session
	if err := json.Unmarshal(rs[1].Result, &sess); err != nil || sess.ExitCode == nil || *sess.ExitCode != 3 {
		t.Fatalf("result %s: want the session, exited(3)", rs[1].Result)
	}
}

func TestServeEvents(t *testing.T) {
	t.Parallel()
	s := &streamer{}
	var out bytes.Buffer
	in := strings.NewReader(`{"events":{"since":"5","types":["session.*"]}}`)
	if code := Serve(context.Background(), s, "events", in, &out); code != 0 {
		t.Fatalf("exit %d: %s", code, out.String())
	}
	if s.opts.Since != "5" || len(s.opts.Types) != 1 || s.opts.Types[0] != "session.*" {
		t.Errorf("options %+v", s.opts)
	}
	rs := replies(t, &out)
	if len(rs) < 3 || rs[0].Started == nil || rs[1].Event == nil || rs[1].Event.Type != api.EventSessionStarted || rs[2].Event == nil || rs[2].Event.Type != api.EventSessionStopped {
		t.Fatalf("replies %s: want the start, then the two events", out.String())
	}
}

// A backend without streams says so.
func TestServeWithoutStreams(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	if code := Serve(context.Background(), Backend(nil), "events", strings.NewReader(`{}`), &out); code == 0 {
		t.Fatal("events served by a backend without streams")
	}
	if rs := replies(t, &out); len(rs) != 1 || rs[0].Error == nil || !strings.Contains(rs[0].Error.Error(), "not served here") {
		t.Fatalf("replies %s", out.String())
	}
}

// explainer is a backend that tells the evidence behind a status.
type explainer struct{ Backend }

func (explainer) Explain(_ context.Context, id string) (api.Explanation, error) {
	return api.Explanation{Session: api.Session{ID: id}, Rule: api.RuleCluster, Reason: "the pod says so"}, nil
}

// explain is served by a backend that explains, refused by one that does
// not.
func TestServeExplain(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	if code := Serve(context.Background(), explainer{}, "explain", strings.NewReader(`{"id":"j1"}`), &out); code != 0 {
		t.Fatalf("explain: exit %d: %s", code, out.String())
	}
	var ex api.Explanation
	if rs := replies(t, &out); len(rs) != 1 || json.Unmarshal(rs[0].Result, &ex) != nil || ex.Session.ID != "j1" || ex.Rule != api.RuleCluster {
		t.Fatalf("replies %s", out.String())
	}
	out.Reset()
	if code := Serve(context.Background(), Backend(nil), "explain", strings.NewReader(`{"id":"j1"}`), &out); code == 0 {
		t.Fatal("explain served by a backend that does not explain")
	}
}
