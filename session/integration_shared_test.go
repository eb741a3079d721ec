package session

import (
	"context"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/agentctl/agentctl/adapters"
	"github.com/agentctl/agentctl/home"
	"github.com/agentctl/agentctl/proc"
)

// threadAgent is an adapter whose every process is its agent and whose
// reports name the session their payload is; shared says its agent
// processes report for many sessions (as Codex's app-server daemon does).
type threadAgent struct {
	adapters.Adapter
	shared bool
}

func (threadAgent) Name() string { return "threads" }
func (threadAgent) Discover(context.Context) ([]adapters.NativeSession, error) {
	return nil, nil
}
func (threadAgent) Transcript(context.Context, string, int) ([]adapters.Message, error) {
	return nil, nil
}
func (threadAgent) ReadHook(event string, payload []byte) (adapters.HookFacts, error) {
	return adapters.HookFacts{Event: event, NativeID: string(payload), State: adapters.NativeIdle, WaitingFor: adapters.WaitingInput}, nil
}
func (threadAgent) IsAgentProcess(argv []string) bool  { return true }
func (a threadAgent) SharedProcess(argv []string) bool { return a.shared }

// A process that reports for many sessions keeps what it said of each: two
// threads' ends of turn from one shared process are both in the book; from
// an agent's own process, a second session replaces the first (/clear).
func TestIntegrationHookSharedProcessKeepsEachSession(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		shared bool
		want   []string
	}{
		{"shared", true, []string{"t1", "t2"}},
		{"own", false, []string{"t2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := New(context.Background(), Options{Home: home.Home(t.TempDir()), Adapters: adapters.NewSet(threadAgent{shared: tc.shared}), DiscoveryTimeout: time.Second})
			// The hook is a child of this test, which plays the agent.
			hook := proc.PinProcess(liveProcess(t).PID, os.Getuid())
			for _, thread := range []string{"t1", "t2"} {
				if _, err := c.IntegrationHook(context.Background(), hook, "threads", "turn", []byte(thread), nil); err != nil {
					t.Fatalf("report of %s: %v", thread, err)
				}
			}
			var got []string
			for _, tie := range c.book.HookTies("threads") {
				if tie.PID != os.Getpid() || tie.WaitingFor != adapters.WaitingInput {
					t.Errorf("tie %+v: want this process's, waiting for input", tie)
				}
				got = append(got, tie.NativeID)
			}
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Errorf("ties of sessions %q, want %q", got, tc.want)
			}
		})
	}
}
