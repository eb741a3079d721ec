package codex

import (
	"context"
	"fmt"
	codexsynth "github.com/agentctl/agentctl/internal/synth/codex"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/agentctl/agentctl/adapters"
	"github.com/agentctl/agentctl/adapters/storeio"
)

// benchStore generates a store of n sessions for a benchmark (outside the
// timer) and returns its CODEX_HOME.
func benchStore(b *testing.B, n int) string {
	b.Helper()
	home := b.TempDir()
	if err := codexsynth.GenerateStore(home, n, int64(n)); err != nil {
		b.Fatal(err)
	}
	return home
}

func benchAdapter(home string) *Adapter {
	return New(adapters.Env{Home: "/nonexistent", Getenv: func(k string) string {
		if k == "CODEX_HOME" {
			return home
		}
		return ""
	}})
}

// BenchmarkDiscover measures Discover over stores of 100, 1,000 and 10,000
// sessions: cold (a new adapter: every rollout's head and tail read), warm
// (nothing changed: a stat per rollout and folder), and warm after one
// rollout grew (that one is read from where the last read stopped).
//
//	go test ./adapters/codex -run '^$' -bench Discover -benchtime 20x
func BenchmarkDiscover(b *testing.B) {
	for _, n := range []int{100, 1000, 10000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			if n == 10000 && testing.Short() {
				b.Skip("10,000 sessions take a while to generate")
			}
			home := benchStore(b, n)
			ctx := context.Background()
			var size int64
			filepath.Walk(filepath.Join(home, "sessions"), func(_ string, fi os.FileInfo, err error) error {
				if err == nil && !fi.IsDir() {
					size += fi.Size()
				}
				return nil
			})
			b.Run("cold", func(b *testing.B) {
				for b.Loop() {
					ss, err := benchAdapter(home).Discover(ctx)
					if err != nil || len(ss) != n {
						b.Fatalf("%d sessions, %v", len(ss), err)
					}
				}
				b.ReportMetric(float64(size)/float64(n)/1024, "kB/session")
			})
			b.Run("warm-watched", func(b *testing.B) {
				// With a folder watch, an unchanged store is a lookup: the
				// last discovery, kept.
				w, err := storeio.NewWatcher()
				if err != nil {
					b.Skip(err)
				}
				defer w.Close()
				a := benchAdapter(home)
				a.env.Folders = w
				a.folders = storeio.NewLister(w)
				if _, err := a.Discover(ctx); err != nil {
					b.Fatal(err)
				}
				for b.Loop() {
					if _, err := a.Discover(ctx); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("warm", func(b *testing.B) {
				a := benchAdapter(home)
				if _, err := a.Discover(ctx); err != nil {
					b.Fatal(err)
				}
				runtime.GC()
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				for b.Loop() {
					if _, err := a.Discover(ctx); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "MB-heap")
			})
			b.Run("warm-one-grew", func(b *testing.B) {
				a := benchAdapter(home)
				ss, err := a.Discover(ctx)
				if err != nil {
					b.Fatal(err)
				}
				path := ss[len(ss)/2].Path
				f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
				if err != nil {
					b.Fatal(err)
				}
				defer f.Close()
				line := []byte(`{"timestamp":"2026-11-22T07:00:00.000Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":5,"output_tokens":1}}}}` + "\n")
				for b.Loop() {
					if _, err := f.Write(line); err != nil {
						b.Fatal(err)
					}
					if _, err := a.Discover(ctx); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}

// BenchmarkTranscriptTail measures a peek (the last 5 messages) at the
// largest rollout of a 1,000-session store.
func BenchmarkTranscriptTail(b *testing.B) {
	home := benchStore(b, 1000)
	a := benchAdapter(home)
	ctx := context.Background()
	ss, err := a.Discover(ctx)
	if err != nil {
		b.Fatal(err)
	}
	var big adapters.NativeSession
	var bigSize int64
	for _, s := range ss {
		if fi, err := os.Stat(s.Path); err == nil && fi.Size() > bigSize {
			big, bigSize = s, fi.Size()
		}
	}
	for b.Loop() {
		if _, err := a.Transcript(ctx, big.NativeID, 5); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(bigSize)/(1<<20), "MB-file")
}
