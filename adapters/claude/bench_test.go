package claude

import (
	"context"
	"fmt"
	claudesynth "github.com/agentctl/agentctl/internal/synth/claude"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/agentctl/agentctl/adapters"
)

// benchStore returns a generated store of n sessions, made once and kept
// (they take a while at 10,000) under $AGENTCTL_BENCH_DIR or the temporary
// folder.
func benchStore(b *testing.B, n int) string {
	b.Helper()
	root := os.Getenv("AGENTCTL_BENCH_DIR")
	if root == "" {
		root = filepath.Join(os.TempDir(), "agentctl-bench")
	}
	home := filepath.Join(root, "claude-"+strconv.Itoa(n))
	done := filepath.Join(home, ".complete")
	if _, err := os.Stat(done); err == nil {
		return home
	}
	os.RemoveAll(home)
	b.Logf("generating %d sessions in %s", n, home)
	if err := claudesynth.GenerateStore(home, n, 1); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(done, nil, 0o644); err != nil {
		b.Fatal(err)
	}
	return home
}

// BenchmarkDiscover measures Discover over generated stores: cold (a new
// adapter, nothing cached; the files are in the page cache), warm (nothing
// changed since the last call), and warm after 10 sessions grew by a turn.
func BenchmarkDiscover(b *testing.B) {
	for _, n := range []int{100, 1000, 10000} {
		if n == 10000 && testing.Short() {
			continue
		}
		home := benchStore(b, n)
		env := adapters.Env{Home: home, Getenv: func(string) string { return "" }}
		ctx := context.Background()
		b.Run(fmt.Sprintf("sessions=%d/cold", n), func(b *testing.B) {
			for b.Loop() {
				if _, err := New(env).Discover(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("sessions=%d/restart", n), func(b *testing.B) {
			// A new adapter (a restarted service) with the discovery
			// cache its predecessor wrote.
			cached := env
			cached.CacheDir = b.TempDir()
			if _, err := New(cached).Discover(ctx); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				ss, err := New(cached).Discover(ctx)
				if err != nil || len(ss) < n {
					b.Fatalf("%d sessions, %v", len(ss), err)
				}
			}
		})
		b.Run(fmt.Sprintf("sessions=%d/warm", n), func(b *testing.B) {
			a := New(env)
			if _, err := a.Discover(ctx); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				ss, err := a.Discover(ctx)
				if err != nil || len(ss) < n {
					b.Fatalf("%d sessions, %v", len(ss), err)
				}
			}
		})
		b.Run(fmt.Sprintf("sessions=%d/warm-10-grown", n), func(b *testing.B) {
			a := New(env)
			ss, err := a.Discover(ctx)
			if err != nil {
				b.Fatal(err)
			}
			grow := make([]string, 0, 10)
			for i := 0; i < len(ss) && len(grow) < 10; i += max(len(ss)/10, 1) {
				grow = append(grow, ss[i].Path)
			}
			turn := lines(userRec("one more turn"), assistantRec("msg_bench", "and its answer", "end_turn", 100, 20), costRec(1, 2, 3))
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				for _, p := range grow {
					f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
					if err != nil {
						b.Fatal(err)
					}
					f.WriteString(turn)
					f.Close()
				}
				b.StartTimer()
				if _, err := a.Discover(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkTranscript reads the last message of the largest transcript of
// the 1,000-session store.
func BenchmarkTranscript(b *testing.B) {
	home := benchStore(b, 1000)
	a := New(adapters.Env{Home: home, Getenv: func(string) string { return "" }})
	ss, err := a.Discover(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	var big adapters.NativeSession
	var size int64
	for _, s := range ss {
		if fi, err := os.Stat(s.Path); err == nil && fi.Size() > size {
			big, size = s, fi.Size()
		}
	}
	b.Logf("transcript of %d MB", size>>20)
	for b.Loop() {
		if _, err := a.Transcript(context.Background(), big.NativeID, 1); err != nil {
			b.Fatal(err)
		}
	}
}
