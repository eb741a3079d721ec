package session

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/agentctl/agentctl/adapters"
	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/home"
)

// BenchmarkList measures the service's side of a warm `list`, `list -a`,
// `status` of one whole native id, and the looks of the usage-limits loop
// and of the transitions detector, over 10,000 and 50,000 native sessions
// that did not change since the last query: the adapter answers with the
// slice it answered before, as a kept discovery does. Their activity spans
// 30 days, so `list -a` (7 days) shows about a quarter.
//
//	go test ./session -run '^$' -bench List -benchmem
func BenchmarkList(b *testing.B) {
	ctx := context.Background()
	now := time.Now()
	for _, n := range []int{10_000, 50_000} {
		sessions := make([]adapters.NativeSession, n)
		for i := range sessions {
			at := now.Add(-time.Duration(i) * (30 * 24 * time.Hour / time.Duration(n)))
			sessions[i] = adapters.NativeSession{Adapter: "fixed", NativeID: fmt.Sprintf("%08x-0000-7000-8000-%012x", uint32(i)*2654435761, i),
				State: adapters.NativeDone, CreatedAt: at, UpdatedAt: at, Model: "m", FirstPrompt: "a prompt"}
		}
		store := &fixed{name: "fixed", sessions: sessions}
		c := New(ctx, Options{Home: home.Home(b.TempDir()), Adapters: adapters.NewSet(store), DiscoveryTimeout: time.Minute})
		for _, tc := range []struct {
			name string
			o    api.ListOptions
		}{{"list", api.ListOptions{}}, {"list-a", api.ListOptions{All: true}}} {
			b.Run(fmt.Sprintf("%d/%s", n, tc.name), func(b *testing.B) {
				for b.Loop() {
					if _, err := c.List(ctx, tc.o); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
		// list-a as the service writes it: each session handed on as it
		// is made (ListEach), never all held at once.
		b.Run(fmt.Sprintf("%d/list-a-each", n), func(b *testing.B) {
			for b.Loop() {
				if _, err := c.ListEach(ctx, api.ListOptions{All: true}, nil, func(*api.Session) error { return nil }); err != nil {
					b.Fatal(err)
				}
			}
		})
		// What the usage-limits loop asks every few seconds while a
		// session runs (8 days back): compare with list-a.
		b.Run(fmt.Sprintf("%d/limits", n), func(b *testing.B) {
			for b.Loop() {
				if _, err := c.LimitsView(ctx, 8*24*time.Hour); err != nil {
					b.Fatal(err)
				}
			}
		})
		// The transitions detector's own look, every 2 s while a
		// session runs.
		b.Run(fmt.Sprintf("%d/follow", n), func(b *testing.B) {
			for b.Loop() {
				if _, err := c.lookAtRunning(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("%d/status", n), func(b *testing.B) {
			id := sessions[n/2].NativeID
			for b.Loop() {
				if _, err := c.Get(ctx, id); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
