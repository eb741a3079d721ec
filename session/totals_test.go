package session

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/agentctl/agentctl/adapters"
	"github.com/agentctl/agentctl/adapters/pi"
	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/home"
	synthpi "github.com/agentctl/agentctl/internal/synth/pi"
)

// TestTotalsComeAfterTheFirstList: over a generated store, with the
// adapters putting the totals of large transcripts off (Env.TotalsLater,
// as the service runs them), the first list answers those rows with
// totals pending and no figure; once the round is over they are counted
// (adapters.Settler), and a later list has them, equal to a core whose
// adapters count them in line.
func TestTotalsComeAfterTheFirstList(t *testing.T) {
	t.Parallel()
	store := t.TempDir()
	if err := synthpi.GenerateStore(store, 60, 3); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	env := adapters.Env{Home: store, Getenv: func(string) string { return "" }}
	core := func(later bool) (*Core, *pi.Adapter) {
		e := env
		e.TotalsLater = later
		a := pi.New(e)
		return New(ctx, Options{Home: home.Home(t.TempDir()), Adapters: adapters.NewSet(a), DiscoveryTimeout: time.Minute}), a
	}
	list := func(c *Core) map[string]api.Session {
		t.Helper()
		l, err := c.List(ctx, api.ListOptions{All: true, Since: 100 * 365 * 24 * time.Hour})
		if err != nil || len(l.Warnings) > 0 {
			t.Fatalf("list: %v %q", err, l.Warnings)
		}
		out := map[string]api.Session{}
		for _, s := range l.Sessions {
			out[s.NativeID] = s
		}
		return out
	}
	c, a := core(true)
	first := list(c)
	pending := 0
	for id, s := range first {
		if !s.TotalsPending {
			continue
		}
		pending++
		if s.TokensIn != nil || s.TokensOut != nil || s.CostUSD != nil || s.Prompt == "" || s.Cwd == "" {
			t.Errorf("%s: a row with totals pending: %+v", id, s)
		}
	}
	if pending == 0 {
		t.Fatal("no session's totals were put off")
	}
	if err := a.WaitTotals(ctx); err != nil {
		t.Fatal(err)
	}
	after := list(c)
	inLine, _ := core(false)
	want := list(inLine)
	if len(after) != len(want) || len(want) != 60 {
		t.Fatalf("%d sessions after, %d counted in line, want 60", len(after), len(want))
	}
	for id, s := range after {
		w := want[id]
		if s.TotalsPending || s.TokensIn == nil || !reflect.DeepEqual(s.TokensIn, w.TokensIn) || !reflect.DeepEqual(s.TokensOut, w.TokensOut) || !reflect.DeepEqual(s.CostUSD, w.CostUSD) {
			t.Errorf("%s: after the round %v %v %v pending %v; in line %v %v %v", id, s.TokensIn, s.TokensOut, s.CostUSD, s.TotalsPending, w.TokensIn, w.TokensOut, w.CostUSD)
		}
	}
}
