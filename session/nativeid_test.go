package session

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/agentctl/agentctl/adapters"
	"github.com/agentctl/agentctl/home"
	"github.com/agentctl/agentctl/spawn"
)

// toldIDs is a NativeIDFinder that tells the ids given, one per call, the
// last one again once they run out.
type toldIDs struct {
	mu  sync.Mutex
	ids []string
}

func (f *toldIDs) FindNativeID(context.Context, adapters.Started) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	id := f.ids[0]
	if len(f.ids) > 1 {
		f.ids = f.ids[1:]
	}
	return id, nil
}

// `launch codex -i` took the native id of another launched session (its
// row, prompt and tokens then went to the new one): an id another launched
// session of the agent is bound to is never recorded; the adapter is asked
// again, and the id it tells next is.
func TestLaunchBindsAnotherSessionsNativeIDNever(t *testing.T) {
	t.Parallel()
	h := home.Home(t.TempDir())
	c := New(context.Background(), Options{Home: h, DiscoveryTimeout: time.Second})
	victim := launchedHere(t, h, "codex", "thread-of-the-victim")
	other := launchedHere(t, h, "pi", "thread-of-its-own")
	fresh := launchedHere(t, h, "codex", "")
	rec, err := spawn.ReadRecord(h.SessionDir(fresh))
	if err != nil {
		t.Fatal(err)
	}
	// The id of a session of another agent is no conflict.
	if owner, err := c.records.bindNativeID(fresh, "codex", "thread-of-its-own"); err != nil || owner != "" {
		t.Fatalf("bind an id only a pi session has: owner %q, %v", owner, err)
	}
	if owner, err := c.records.bindNativeID(other, "pi", "thread-of-the-victim"); err != nil || owner != "" {
		t.Fatalf("bind, for pi, an id only a codex session has: owner %q, %v", owner, err)
	}
	// And the id found is another codex session's: not taken.
	if owner, err := c.records.bindNativeID(fresh, "codex", "thread-of-the-victim"); err != nil || owner != victim {
		t.Fatalf("bind the victim's id: owner %q, %v; want %s", owner, err, victim)
	}
	if got := LearnedNativeID(h.SessionDir(fresh)); got != "thread-of-its-own" {
		t.Fatalf("after a refused binding the session's native id is %q", got)
	}
	c.learnNativeID(fresh, &toldIDs{ids: []string{"thread-of-the-victim", "thread-new"}}, rec)
	c.wg.Wait()
	if got := LearnedNativeID(h.SessionDir(fresh)); got != "thread-new" {
		t.Errorf("learned native id %q, want thread-new (the victim's was told first)", got)
	}
	if s, err := c.records.get(victim); err != nil || s.NativeID != "thread-of-the-victim" {
		t.Errorf("the victim: %+v, %v", s.NativeID, err)
	}
}
