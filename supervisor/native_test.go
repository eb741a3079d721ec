package supervisor

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/agentctl/agentctl/adapters"
	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/client"
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
	got := make(chan api.Event, 16)
	go svc.client.Events(ctx, client.EventOptions{Types: []string{"session"}}, nil, func(e api.Event) error {
		got <- e
		return nil
	})
	time.Sleep(100 * time.Millisecond) // the stream is open
	next := func(want string) api.Event {
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
		return api.Event{}
	}

	gw.set(adapters.NativeIdle)
	next(api.EventSessionStarted)
	gw.set(adapters.NativeBusy)
	next(api.EventSessionBusy)

	sess, err := svc.client.Stop(ctx, "k1", api.StopRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if sess.Status != api.StatusEnded || sess.Origin != api.OriginDiscovered {
		t.Fatalf("after stop: %+v", sess)
	}
	next(api.EventSessionStopped)

	// Stopping what has ended answers with its state, as for launched ones.
	if again, err := svc.client.Stop(ctx, "k1", api.StopRequest{}); err != nil || again.Status != api.StatusEnded {
		t.Fatalf("second stop = %+v, %v", again, err)
	}
}
