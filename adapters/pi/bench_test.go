package pi

import (
	"context"
	"fmt"
	pisynth "github.com/agentctl/agentctl/internal/synth/pi"
	"os"
	"testing"

	"github.com/agentctl/agentctl/adapters"
)

// BenchmarkDiscover measures Discover over a generated store of 10,000
// sessions: cold (a new adapter, nothing cached), warm (nothing changed),
// and warm after 10 sessions grew by one record each.
//
//	go test -run '^$' -bench Discover -benchtime 5x ./adapters/pi
func BenchmarkDiscover(b *testing.B) {
	home := b.TempDir()
	const n = 10_000
	if err := pisynth.GenerateStore(home, n, 1); err != nil {
		b.Fatal(err)
	}
	env := adapters.Env{Home: home}
	ctx := context.Background()
	check := func(b *testing.B, got []adapters.NativeSession, err error) {
		if err != nil || len(got) != n {
			b.Fatalf("Discover: %d sessions, %v", len(got), err)
		}
	}

	b.Run("cold", func(b *testing.B) {
		for b.Loop() {
			got, err := New(env).Discover(ctx)
			check(b, got, err)
		}
	})

	a := New(env)
	got, err := a.Discover(ctx)
	check(b, got, err)
	b.Run("warm", func(b *testing.B) {
		for b.Loop() {
			got, err := a.Discover(ctx)
			check(b, got, err)
		}
	})

	b.Run("warm-10-grown", func(b *testing.B) {
		line := []byte(`{"type":"message","id":"ffffffff","parentId":null,"timestamp":"2026-11-22T06:00:00.000Z","message":{"role":"assistant","content":[{"type":"text","text":"more"}],"provider":"p","model":"m","usage":{"input":1,"output":1,"cacheRead":0,"cacheWrite":0,"totalTokens":2,"cost":{"total":0}},"stopReason":"stop","timestamp":1}}` + "\n")
		for i := 0; b.Loop(); i++ {
			b.StopTimer()
			for j := range 10 {
				p := got[(i*10+j)%len(got)].Path
				f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
				if err != nil {
					b.Fatal(err)
				}
				f.Write(line)
				f.Close()
			}
			b.StartTimer()
			got2, err := a.Discover(ctx)
			check(b, got2, err)
		}
	})
	st := a.files.Stats()
	b.Logf("cache: %d entries, %d hits, %d misses", st.Entries, st.Hits, st.Misses)
	_ = fmt.Sprint
}
