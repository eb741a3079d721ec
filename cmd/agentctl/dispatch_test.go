package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/client"
	"github.com/agentctl/agentctl/home"
	"github.com/agentctl/agentctl/hosts"
)

// fakeSessions is a host of another kind than an agentctl service (as a
// cluster is): client.Sessions and nothing more. It records what it was
// asked.
type fakeSessions struct {
	mu    sync.Mutex
	calls []string
	// logs is what Logs sends.
	logs []api.LogChunk
	// run is the last launch's request.
	run api.RunRequest
}

func (f *fakeSessions) lastRun() api.RunRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.run
}

func (f *fakeSessions) called(what string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, what)
}

func (f *fakeSessions) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

func (f *fakeSessions) Launch(_ context.Context, req api.RunRequest) (api.Session, error) {
	f.called("launch " + strings.Join(req.Command, " "))
	f.mu.Lock()
	f.run = req
	f.mu.Unlock()
	return api.Session{ID: "new", Status: api.StatusRunning}, nil
}

func (f *fakeSessions) List(context.Context, api.ListOptions) (api.SessionList, error) {
	f.called("list")
	return api.SessionList{}, nil
}

func (f *fakeSessions) Get(_ context.Context, id string) (api.Session, error) {
	f.called("get " + id)
	return api.Session{ID: id, Status: api.StatusRunning}, nil
}

func (f *fakeSessions) Stop(_ context.Context, id string, _ api.StopRequest) (api.Session, error) {
	f.called("stop " + id)
	return api.Session{ID: id, Status: api.StatusKilled}, nil
}

func (f *fakeSessions) Input(_ context.Context, id string, data []byte) (api.Session, error) {
	f.called("input " + id + " " + string(data))
	return api.Session{ID: id}, nil
}

func (f *fakeSessions) Transcript(_ context.Context, id string, _ int) (api.Transcript, error) {
	f.called("transcript " + id)
	return api.Transcript{}, nil
}

func (f *fakeSessions) Logs(_ context.Context, id string, o api.LogOptions, emit func(api.LogChunk) error) error {
	f.called("logs " + id)
	for _, ch := range f.logs {
		if err := emit(ch); err != nil {
			return err
		}
	}
	return nil
}

// fakeStreams adds an attach through byte streams: it answers each line
// typed with "echo: LINE", and, when endOn is typed, ends the session with
// final; otherwise it waits for ctx.
type fakeStreams struct {
	fakeSessions
	endOn string
	final api.Session
	typed bytes.Buffer
}

func (f *fakeStreams) AttachStreams(ctx context.Context, id string, in io.Reader, out io.Writer) (api.Session, error) {
	f.called("attach " + id)
	buf := make([]byte, 64)
	for {
		n, err := in.Read(buf)
		f.typed.Write(buf[:n])
		if n > 0 {
			io.WriteString(out, "echo: "+string(buf[:n])+"\n")
		}
		if f.endOn != "" && strings.Contains(f.typed.String(), f.endOn) {
			return f.final, nil
		}
		if err != nil {
			<-ctx.Done()
			return api.Session{ID: id, Status: api.StatusRunning}, nil
		}
	}
}

// fakeEvents adds an event stream: events, then nothing until ctx ends.
type fakeEvents struct {
	fakeSessions
	events []api.Event
}

func (f *fakeEvents) Events(ctx context.Context, _ client.EventOptions, started func(uint64), fn func(api.Event) error) error {
	f.called("events")
	started(0)
	for _, e := range f.events {
		if err := fn(e); err != nil {
			return err
		}
	}
	<-ctx.Done()
	return ctx.Err()
}

// fakeService adds what only an agentctl service does here.
type fakeService struct{ fakeSessions }

func (f *fakeService) Remove(_ context.Context, id string, force bool) (api.Session, error) {
	f.called("remove " + id)
	return api.Session{ID: id}, nil
}

func (f *fakeService) Restart(_ context.Context, id string, _ api.RestartRequest) (api.Session, error) {
	f.called("restart " + id)
	return api.Session{ID: id}, nil
}

func (f *fakeService) Decide(_ context.Context, id string, d api.Decision) (api.Session, error) {
	f.called("decide " + id + " " + string(d.Action))
	return api.Session{ID: id}, nil
}

func clusterHost(api client.Sessions) hosts.Host {
	return hosts.Host{Name: "cl", URL: "k8s://ctx/ns", API: api}
}

func TestActsDispatch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		api     interface{ Calls() []string }
		do      act
		call    string
		refusal string
	}{
		{name: "stop on any host", api: &fakeSessions{}, do: stopOn(api.StopRequest{}), call: "stop s1"},
		{name: "rm where records are kept", api: &fakeService{}, do: removeOn(false), call: "remove s1"},
		{name: "rm on a cluster", api: &fakeSessions{}, do: removeOn(true), refusal: "host cl (k8s://ctx/ns) cannot remove sessions"},
		{name: "restart on a service", api: &fakeService{}, do: restartOn(testCLI(t), api.RestartRequest{}), call: "restart s1"},
		{name: "restart on a cluster", api: &fakeSessions{}, do: restartOn(testCLI(t), api.RestartRequest{}), refusal: "host cl (k8s://ctx/ns) cannot restart sessions"},
		{name: "decide on a service", api: &fakeService{}, do: func(ctx context.Context, h hosts.Host, id string) (api.Session, error) {
			return decideOn(ctx, h, id, api.Decision{Action: api.DecisionApprove})
		}, call: "decide s1 approve"},
		{name: "decide on a cluster", api: &fakeSessions{}, do: func(ctx context.Context, h hosts.Host, id string) (api.Session, error) {
			return decideOn(ctx, h, id, api.Decision{Action: api.DecisionDeny})
		}, refusal: "host cl (k8s://ctx/ns) cannot answer waiting sessions (deny)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.do(ctx, clusterHost(tc.api.(client.Sessions)), "s1")
			if tc.refusal != "" {
				if err == nil || err.Error() != tc.refusal {
					t.Fatalf("error %v, want %q", err, tc.refusal)
				}
				if calls := tc.api.Calls(); len(calls) != 0 {
					t.Errorf("the host was asked %v", calls)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if calls := tc.api.Calls(); len(calls) != 1 || calls[0] != tc.call {
				t.Errorf("calls %v, want [%s]", calls, tc.call)
			}
		})
	}
}

func TestAttachDispatch(t *testing.T) {
	t.Parallel()
	cmd := &cobra.Command{}
	cmd.SetContext(context.Background())
	err := attachTo(testCLI(t), cmd, clusterHost(&fakeSessions{}), "s1")
	if err == nil || err.Error() != "host cl (k8s://ctx/ns) cannot attach to a session's terminal" {
		t.Fatalf("attach to a host that cannot: %v", err)
	}
}

func TestJoinStreams(t *testing.T) {
	t.Parallel()
	three := 3
	for _, tc := range []struct {
		name        string
		input       string
		endDetaches bool
		endOn       string
		typed       string
		detached    bool
		exit        *int
	}{
		{name: "the session ends", input: "exit 3\r", endOn: "\r", typed: "exit 3\r", exit: &three},
		{name: "the detach key", input: "hi\x1dnot typed", typed: "hi", detached: true},
		{name: "the end of piped input", input: "abc", endDetaches: true, typed: "abc", detached: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := &fakeStreams{endOn: tc.endOn, final: api.Session{ID: "s1", Status: api.StatusExited, ExitCode: tc.exit}}
			// A terminal's input does not end: it stays open after the
			// input, unless the case is a pipe's.
			var in io.Reader = io.MultiReader(strings.NewReader(tc.input), blockingReader{})
			if tc.endDetaches {
				in = strings.NewReader(tc.input)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			var out bytes.Buffer
			s, detached, err := joinStreams(ctx, fake, "s1", in, tc.endDetaches, &syncWriter{w: &out})
			if err != nil {
				t.Fatal(err)
			}
			if ctx.Err() != nil {
				t.Fatal("joinStreams returned only when the test's time ran out")
			}
			if detached != tc.detached {
				t.Errorf("detached %v, want %v", detached, tc.detached)
			}
			if got := fake.typed.String(); got != tc.typed {
				t.Errorf("typed %q, want %q", got, tc.typed)
			}
			if tc.exit != nil && (s.ExitCode == nil || *s.ExitCode != *tc.exit) {
				t.Errorf("session %+v, want exit code %d", s, *tc.exit)
			}
			if !strings.Contains(out.String(), "echo: ") {
				t.Errorf("output %q: the session's output was not copied", out.String())
			}
		})
	}
}

// blockingReader is a terminal nobody types into.
type blockingReader struct{}

func (blockingReader) Read([]byte) (int, error) { select {} }

type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

func TestEventsOnDispatch(t *testing.T) {
	t.Parallel()
	if err := eventsOn(context.Background(), testCLI(t), clusterHost(&fakeSessions{}), client.EventOptions{}, io.Discard); err == nil ||
		err.Error() != "host cl (k8s://ctx/ns) cannot stream events" {
		t.Fatalf("events of a host without a stream: %v", err)
	}

	now := time.Now().UTC()
	src := &fakeEvents{events: []api.Event{
		{Seq: 1, Type: api.EventSessionStarted, SessionID: "j1", Timestamp: now, Session: &api.Session{ID: "j1", Status: api.StatusRunning}},
		{Seq: 2, Type: api.EventSessionStopped, SessionID: "j1", Timestamp: now, Session: &api.Session{ID: "j1", Status: api.StatusExited, ExitCode: new(3)}},
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	lines := &lineCounter{want: 2, done: cancel}
	if err := eventsOn(ctx, testCLI(t), clusterHost(src), client.EventOptions{}, lines); err != nil {
		t.Fatal(err)
	}
	if lines.n != 2 {
		t.Fatalf("%d events printed, want 2: %q", lines.n, lines.buf.String())
	}
	dec := json.NewDecoder(&lines.buf)
	for i := 0; i < 2; i++ {
		var e api.Event
		if err := dec.Decode(&e); err != nil {
			t.Fatal(err)
		}
		if e.Host != "cl" || e.Session == nil || e.Session.Handle != "cl/j1" {
			t.Errorf("event %d: host %q, session %+v: want host cl and handle cl/j1", i, e.Host, e.Session)
		}
	}
}

// lineCounter keeps what is written and calls done once it has want lines.
type lineCounter struct {
	buf  bytes.Buffer
	n    int
	want int
	done func()
}

func (l *lineCounter) Write(p []byte) (int, error) {
	l.buf.Write(p)
	l.n += bytes.Count(p, []byte("\n"))
	if l.n >= l.want {
		l.done()
	}
	return len(p), nil
}

func TestWaitSessionOnAnotherHost(t *testing.T) {
	t.Parallel()
	final := api.Session{ID: "j1", Status: api.StatusExited, ExitCode: new(3)}
	// Not a terminal: the text view's lines, each chunk's without its
	// last line end.
	src := &fakeSessions{logs: []api.LogChunk{{Data: []byte("working")}, {End: true, Session: &final}}}
	var out bytes.Buffer
	err := waitSession(context.Background(), src, "j1", &out)
	var exit exitError
	if !errors.As(err, &exit) || exit.code != 3 {
		t.Fatalf("waitSession: %v, want exit status 3", err)
	}
	if out.String() != "working\n" {
		t.Errorf("output %q", out.String())
	}
	// Another kind of host follows by itself: one stream, no reconnecting.
	if calls := src.Calls(); len(calls) != 1 || calls[0] != "logs j1" {
		t.Errorf("calls %v, want one logs j1", calls)
	}
}

func TestFarHost(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		h    hosts.Host
		want bool
	}{
		{hosts.Host{Name: hosts.Local, API: client.New("/tmp/x", "agentctl", false)}, false},
		{hosts.Host{Name: "/srv/other", API: client.New("/srv/other", "agentctl", false)}, false},
		{clusterHost(&fakeSessions{}), true},
	} {
		if got := farHost(tc.h); got != tc.want {
			t.Errorf("farHost(%s) = %v, want %v", tc.h.Name, got, tc.want)
		}
	}
}

// An agent on a cluster is launched as the adapter, the prompt and the
// model, with no command line: the agentctl in the pod builds it.
func TestStartAgentOnCluster(t *testing.T) {
	t.Parallel()
	for _, req := range []api.RunRequest{
		{Adapter: "pi", Prompt: "fix it", Model: "m", Cwd: "/work"},
		{Adapter: "claude", Prompt: "again", Cwd: "/work", ResumeOf: "01abc"},
	} {
		src := &fakeSessions{}
		cmd := &cobra.Command{}
		cmd.SetContext(context.Background())
		if err := startOn(testCLI(t), cmd, clusterHost(src), &runFlags{}, req); err != nil {
			t.Fatalf("%s on a cluster: %v", req.Adapter, err)
		}
		got := src.lastRun()
		if got.Adapter != req.Adapter || got.Prompt != req.Prompt || got.ResumeOf != req.ResumeOf || len(got.Command) != 0 {
			t.Errorf("launched %+v, want %+v", got, req)
		}
	}
}

// --image names a cluster session's image, and is refused, naming the
// host, where a service runs sessions on its machine.
func TestImageIsForClusters(t *testing.T) {
	t.Parallel()
	cmd := &cobra.Command{}
	cmd.SetContext(context.Background())
	src := &fakeSessions{}
	req := api.RunRequest{Adapter: "pi", Prompt: "p", Cwd: "/work", Image: "registry.example/agent:2"}
	if err := startOn(testCLI(t), cmd, clusterHost(src), &runFlags{}, req); err != nil {
		t.Fatal(err)
	}
	if got := src.lastRun().Image; got != req.Image {
		t.Errorf("the cluster got image %q, want %q", got, req.Image)
	}
	local := hosts.Host{Name: hosts.Local, API: client.New(home.Home(t.TempDir()), "agentctl", false)}
	err := startOn(testCLI(t), cmd, local, &runFlags{}, req)
	if err == nil || !strings.Contains(err.Error(), "host local cannot run a container image: --image is for a Kubernetes cluster host") {
		t.Errorf("--image on this machine: %v", err)
	}
}

// --memory-max and the other limits are refused on a cluster host, where
// no agentctl service would enforce them; on a service they reach it.
func TestLimitsNeedAService(t *testing.T) {
	cmd := &cobra.Command{}
	cmd.SetContext(context.Background())
	src := &fakeSessions{}
	f := &runFlags{memoryMax: "50M", pidsMax: 10}
	limits, err := f.limits()
	if err != nil || limits == nil || *limits != (api.Limits{MemoryMaxBytes: 50 << 20, PidsMax: 10}) {
		t.Fatalf("limits %+v, %v", limits, err)
	}
	req := api.RunRequest{Adapter: "pi", Prompt: "p", Cwd: "/work", Limits: limits}
	err = startOn(testCLI(t), cmd, clusterHost(src), f, req)
	if err == nil || !strings.Contains(err.Error(), "cannot bound a session with --memory-max") {
		t.Errorf("limits on a cluster: %v", err)
	}
	if _, err := (&runFlags{memoryMax: "0"}).limits(); err == nil {
		t.Error("--memory-max 0 accepted")
	}
	if l, err := (&runFlags{}).limits(); l != nil || err != nil {
		t.Errorf("no limit flags: %+v, %v", l, err)
	}
}

func TestStatusText(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		s    api.Session
		want string
	}{
		{api.Session{Status: api.StatusRunning}, "running"},
		{api.Session{Status: api.StatusExited, ExitCode: new(3)}, "exited(3)"},
		{api.Session{Status: api.StatusKilled, Signal: "SIGTERM"}, "killed(SIGTERM)"},
		{api.Session{Status: api.StatusKilled}, "killed"},
	} {
		if got := statusText(&tc.s); got != tc.want {
			t.Errorf("statusText(%+v) = %q, want %q", tc.s, got, tc.want)
		}
	}
}
