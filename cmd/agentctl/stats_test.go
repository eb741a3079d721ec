package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/api"
)

// The stats table: the machine's line, a header, a row per session with
// its figures (a dash for what is unknown, the peak alone for an ended
// one); --no-headers leaves rows only.
func TestPrintStats(t *testing.T) {
	pct, secs, mem, peak, rd, wr, tasks := 12.5, 83.0, uint64(300<<20), uint64(410<<20), uint64(1<<20), uint64(5<<20), 14
	st := api.Stats{
		Sessions: []api.SessionStats{
			{ID: "k3x9abcdefghjkmn01m88g26q1", Handle: "k3x9", Adapter: "claude", Status: api.StatusRunning, Label: "review\x1b[31m-bot",
				Resources: &api.Resources{CPUPercent: &pct, CPUSeconds: &secs, MemoryBytes: &mem, MemoryPeakBytes: &peak, PIDs: &tasks, IOReadBytes: &rd, IOWriteBytes: &wr}},
			{ID: "q7rmabcdefghjkmn01m88g26q1", Handle: "q7rm", Adapter: "exec", Status: api.StatusExited, Label: "make test",
				Resources: &api.Resources{Source: "record", MemoryPeakBytes: &peak}},
			{ID: "w2aaabcdefghjkmn01m88g26q1", Adapter: "exec", Status: api.StatusRunning, Label: "unsampled"},
		},
		Machine: &api.Machine{CPUs: 4, Load1: 1.5, Load5: 1, Load15: 0.5, MemTotalBytes: 16 << 30, MemAvailableBytes: 9 << 30},
		Total:   &api.Resources{CPUPercent: &pct, MemoryBytes: &mem, PIDs: &tasks},
	}
	for _, tc := range []struct {
		name    string
		headers bool
		want    []string
		notWant []string
		lines   int
	}{
		{"with headers", true, []string{
			"load 1.50 1.00 0.50 (4 CPUs) · memory 9.00GiB available of 16.0GiB · 3 sessions: 12.5% CPU, 300MiB, 14 pids",
			"CPU %", "BLOCK I/O",
			"k3x9 claude running 12.5% 300MiB 410MiB 14 1m23s 1.00MiB / 5.00MiB review?[31m-bot",
			"q7rm exec exited - - 410MiB - - - make test",
			"w2aaabcdefghjkmn01m88g26q1 exec running - - - - - - unsampled",
		}, nil, 5},
		{"no headers", false, []string{"k3x9", "q7rm"}, []string{"load", "CPU %"}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := printStats(&b, st, time.Now(), tc.headers); err != nil {
				t.Fatal(err)
			}
			out := b.String()
			// The columns' alignment aside: one space between cells.
			var flat strings.Builder
			for _, l := range strings.Split(out, "\n") {
				flat.WriteString(strings.Join(strings.Fields(l), " ") + "\n")
			}
			for _, w := range tc.want {
				if !strings.Contains(flat.String(), w) {
					t.Errorf("no %q in:\n%s", w, out)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(out, w) {
					t.Errorf("%q in:\n%s", w, out)
				}
			}
			if n := strings.Count(out, "\n"); n != tc.lines {
				t.Errorf("%d lines, want %d:\n%s", n, tc.lines, out)
			}
		})
	}
}
