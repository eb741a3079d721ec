package session

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/adapters"
	"github.com/agentctl/agentctl/home"
	"github.com/agentctl/agentctl/proc"
)

// hookAgent is an adapter whose agent reports through an integration:
// every process is its agent, every payload a Stop of one session.
type hookAgent struct{ adapters.Adapter }

func (hookAgent) Name() string { return "hooked" }
func (hookAgent) Discover(context.Context) ([]adapters.NativeSession, error) {
	return nil, nil
}
func (hookAgent) Transcript(context.Context, string, int) ([]adapters.Message, error) {
	return nil, nil
}
func (hookAgent) ReadHook(event string, payload []byte) (adapters.HookFacts, error) {
	return adapters.HookFacts{Event: event, NativeID: "s1", State: adapters.NativeIdle}, nil
}
func (hookAgent) IsAgentProcess(argv []string) bool { return true }

// A report from another user's process is refused, whatever it says, and
// so is one whose sender cannot be told (it exited, or its pid is not
// known here); neither reaches the book.
func TestIntegrationHookRefusesOtherUsers(t *testing.T) {
	t.Parallel()
	c := New(context.Background(), Options{Home: home.Home(t.TempDir()), Adapters: adapters.NewSet(hookAgent{}), DiscoveryTimeout: time.Second})
	other := &proc.Caller{Peer: proc.Peer{PID: os.Getpid(), UID: os.Getuid() + 4242}}
	_, err := c.IntegrationHook(context.Background(), other, "hooked", "Stop", []byte(`{}`), nil)
	var refusal *HookRefusal
	if !errors.As(err, &refusal) || !strings.Contains(err.Error(), "only the service's own user") {
		t.Errorf("another uid: %v", err)
	}
	_, err = c.IntegrationHook(context.Background(), proc.UnknownCaller(), "hooked", "Stop", []byte(`{}`), nil)
	if !errors.As(err, &refusal) {
		t.Errorf("an unknown caller: %v", err)
	}
	_, err = c.IntegrationHook(context.Background(), other, "nosuch", "Stop", []byte(`{}`), nil)
	if !errors.As(err, &refusal) || !strings.Contains(err.Error(), "has no integration") {
		t.Errorf("an agent without one: %v", err)
	}
	if n := len(c.book.procs); n != 0 {
		t.Errorf("the book holds %d entries after refused reports", n)
	}
}
