package supervisor

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/agentctl/agentctl/adapters"
	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/supervisor/events"
)

// gateway stands in for an adapter whose sessions run elsewhere and which
// pushes their changes (as the OpenClaw gateway does).
type gateway struct {
	mu      sync.Mutex
	state   adapters.NativeState
	changes chan adapters.Change
}

func (g *gateway) Name() string { return "gw" }

func (g *gateway) session() adapters.NativeSession {
	return adapters.NativeSession{Adapter: "gw", NativeID: "k1", State: g.state, CreatedAt: time.Now()}
}

func (g *gateway) Discover(context.Context) ([]adapters.NativeSession, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return []adapters.NativeSession{g.session()}, nil
}

func (g *gateway) Transcript(context.Context, string, int) ([]adapters.Message, error) {
	return nil, nil
}

func (g *gateway) set(state adapters.NativeState) {
	g.mu.Lock()
	g.state = state
	s := g.session()
	g.mu.Unlock()
	g.changes <- adapters.Change{Session: &s}
}

func (g *gateway) Stop(_ context.Context, id string) error {
	g.mu.Lock()
	busy := g.state == adapters.NativeBusy
	g.mu.Unlock()
	if !busy {
		return fmt.Errorf("stop %s: %w", id, adapters.ErrNotRunning)
	}
	g.set(adapters.NativeDone)
	return nil
}

func (g *gateway) WatchChanges(context.Context) (<-chan adapters.Change, error) {
	return g.changes, nil
}

// Sessions agentctl did not start are stopped through their adapter, and
// the changes an adapter pushes reach the event stream as they happen.
func TestDiscoveredSessionsStopAndEvents(t *testing.T) {
	gw := &gateway{state: adapters.NativeIdle, changes: make(chan adapters.Change, 8)}
	svc := startServiceWith(t, newHome(t), []adapters.Adapter{gw})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	got := make(chan events.Event, 16)
	go svc.client.Events(ctx, EventOptions{Types: []string{"session"}}, nil, func(e events.Event) error {
		got <- e
		return nil
	})
	time.Sleep(100 * time.Millisecond) // the stream is open
	next := func(want string) events.Event {
		t.Helper()
		select {
		case e := <-got:
			if e.Type != want || e.SessionID != "k1" {
				t.Fatalf("event %s for %s, want %s for k1", e.Type, e.SessionID, want)
			}
			return e
		case <-ctx.Done():
			t.Fatalf("no %s event", want)
		}
		return events.Event{}
	}

	gw.set(adapters.NativeIdle)
	next(events.SessionStarted)
	gw.set(adapters.NativeBusy)
	next(events.SessionBusy)

	sess, err := svc.client.Stop(ctx, "k1", api.StopRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if sess.Status != api.StatusEnded || sess.Origin != api.OriginDiscovered {
		t.Fatalf("after stop: %+v", sess)
	}
	next(events.SessionStopped)

	// Stopping what has ended answers with its state, as for launched ones.
	if again, err := svc.client.Stop(ctx, "k1", api.StopRequest{}); err != nil || again.Status != api.StatusEnded {
		t.Fatalf("second stop = %+v, %v", again, err)
	}
}

// longTurn is an adapter whose one session ends in a long run of tool calls
// after its last answer, as an agent deep in a turn has.
type longTurn struct {
	msgs  []adapters.Message
	asked []int
}

func (l *longTurn) Name() string { return "lt" }

func (l *longTurn) Discover(context.Context) ([]adapters.NativeSession, error) {
	return []adapters.NativeSession{{Adapter: "lt", NativeID: "s1", State: adapters.NativeBusy, CreatedAt: time.Now()}}, nil
}

func (l *longTurn) Transcript(_ context.Context, _ string, n int) ([]adapters.Message, error) {
	l.asked = append(l.asked, n)
	if n > 0 && len(l.msgs) > n {
		return l.msgs[len(l.msgs)-n:], nil
	}
	return l.msgs, nil
}

// A peek finds the last answer even behind hundreds of tool calls, reading
// further back only as far as it must.
func TestPeekLooksPastALongRunOfToolCalls(t *testing.T) {
	for _, tc := range []struct {
		name  string
		tools int
		want  string
		reads int
	}{
		{"answer near the end", 3, "the answer", 1},
		{"answer behind 500 tool calls", 500, "the answer", 3},
		{"no answer at all", -1, "", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lt := &longTurn{}
			if tc.tools >= 0 {
				lt.msgs = append(lt.msgs, adapters.Message{Role: "user", Text: "go"}, adapters.Message{Role: "assistant", Text: "the answer"})
				for i := range tc.tools {
					lt.msgs = append(lt.msgs, adapters.Message{Role: "tool", Text: fmt.Sprint("call ", i)})
				}
			} else {
				lt.msgs = []adapters.Message{{Role: "user", Text: "go"}}
			}
			got, err := lastAssistant(context.Background(), lt, "s1", 1)
			if err != nil {
				t.Fatal(err)
			}
			text := ""
			if len(got) > 0 {
				text = got[len(got)-1].Text
			}
			if text != tc.want || len(lt.asked) != tc.reads {
				t.Errorf("last answer %q after %d reads (asked %v), want %q after %d", text, len(lt.asked), lt.asked, tc.want, tc.reads)
			}
		})
	}
	// The whole path, through the service.
	lt := &longTurn{msgs: []adapters.Message{{Role: "assistant", Text: "deep answer"}}}
	for i := range 300 {
		lt.msgs = append(lt.msgs, adapters.Message{Role: "tool", Text: fmt.Sprint("call ", i)})
	}
	svc := startServiceWith(t, newHome(t), []adapters.Adapter{lt})
	tr, err := svc.client.Transcript(context.Background(), "s1", 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Messages) != 1 || tr.Messages[0].Text != "deep answer" || tr.Source != "native" {
		t.Errorf("peek = %+v", tr)
	}
}
