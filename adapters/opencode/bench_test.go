package opencode

import (
	"context"
	"fmt"
	opencodesynth "github.com/agentctl/agentctl/internal/synth/opencode"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/agentctl/agentctl/adapters"
)

func benchStore(b *testing.B, n int) string {
	b.Helper()
	data := b.TempDir()
	if err := opencodesynth.GenerateStore(data, n, int64(n)); err != nil {
		b.Fatal(err)
	}
	return data
}

func benchAdapter(data string) *Adapter {
	return New(adapters.Env{Home: "/nonexistent", Getenv: func(k string) string {
		if k == "XDG_DATA_HOME" {
			return data
		}
		return ""
	}})
}

// BenchmarkDiscover measures Discover over databases of 100, 1,000 and
// 10,000 sessions: cold (a new adapter: every session's row, latest
// messages and first prompt read), warm (nothing changed: two stats), and
// warm after one session changed (the sessions named by the events logged
// since the last read are read again).
//
//	go test ./adapters/opencode -run '^$' -bench Discover -benchtime 20x
func BenchmarkDiscover(b *testing.B) {
	for _, n := range []int{100, 1000, 10000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			if n == 10000 && testing.Short() {
				b.Skip("10,000 sessions take a while to generate")
			}
			data := benchStore(b, n)
			ctx := context.Background()
			path := filepath.Join(data, "opencode", "opencode.db")
			var size int64
			for _, p := range []string{path, path + "-wal"} {
				if fi, err := os.Stat(p); err == nil {
					size += fi.Size()
				}
			}
			b.Run("cold", func(b *testing.B) {
				for b.Loop() {
					ss, err := benchAdapter(data).Discover(ctx)
					if err != nil || len(ss) != n {
						b.Fatalf("%d sessions, %v", len(ss), err)
					}
				}
				b.ReportMetric(float64(size)/float64(n)/1024, "kB/session")
			})
			b.Run("warm", func(b *testing.B) {
				a := benchAdapter(data)
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
			b.Run("warm-one-changed", func(b *testing.B) {
				a := benchAdapter(data)
				ss, err := a.Discover(ctx)
				if err != nil {
					b.Fatal(err)
				}
				id := ss[len(ss)/2].NativeID
				db, err := opencodesynth.CreateDB(path)
				if err != nil {
					b.Fatal(err)
				}
				defer db.Close()
				for b.Loop() {
					// What OpenCode does as an answer streams in: the row
					// changes, and an event is logged.
					if _, err := db.Exec("UPDATE session SET time_updated = ? WHERE id = ?", time.Now().UnixNano(), id); err != nil {
						b.Fatal(err)
					}
					if _, err := db.Exec("UPDATE event_sequence SET seq = seq + 1 WHERE aggregate_id = ?", id); err != nil {
						b.Fatal(err)
					}
					if _, err := db.Exec(`INSERT INTO event (id, aggregate_id, seq, type, data) SELECT 'evt_' || hex(randomblob(8)), aggregate_id, seq, 'session.updated.1', '{}' FROM event_sequence WHERE aggregate_id = ?`, id); err != nil {
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

// BenchmarkTranscriptTail measures a peek (the last 5 messages) at a
// session of a 1,000-session database.
func BenchmarkTranscriptTail(b *testing.B) {
	data := benchStore(b, 1000)
	a := benchAdapter(data)
	ctx := context.Background()
	ss, err := a.Discover(ctx)
	if err != nil {
		b.Fatal(err)
	}
	id := ss[len(ss)/2].NativeID
	for b.Loop() {
		if _, err := a.Transcript(ctx, id, 5); err != nil {
			b.Fatal(err)
		}
	}
}
