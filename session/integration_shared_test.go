package session

import (
	"context"
	"os"
	"slices"
	"strings"
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
	id, cwd, _ := strings.Cut(string(payload), " ")
	return adapters.HookFacts{Event: event, NativeID: id, Cwd: cwd, State: adapters.NativeIdle, WaitingFor: adapters.WaitingInput}, nil
}
func (threadAgent) IsAgentProcess(argv []string) bool  { return true }
func (a threadAgent) SharedProcess(argv []string) bool { return a.shared }

// A process that reports for many sessions keeps what it said of each: two
// threads' ends of turn from one shared process, in folders other than its
// own, are both in the book; from an agent's own process, a second session
// replaces the first (/clear), and a folder not its own is refused.
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
			reports := []string{"t1", "t2"}
			if tc.shared {
				reports = []string{"t1 /", "t2 /"}
			} else {
				_, err := c.IntegrationHook(context.Background(), hook, "threads", "turn", []byte("t3 /"), nil)
				if err == nil || !strings.Contains(err.Error(), "names folder") {
					t.Errorf("an agent's own process reporting another folder: %v", err)
				}
			}
			for _, r := range reports {
				if _, err := c.IntegrationHook(context.Background(), hook, "threads", "turn", []byte(r), nil); err != nil {
					t.Fatalf("report %q: %v", r, err)
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
