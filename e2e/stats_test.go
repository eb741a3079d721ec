package e2e

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/internal/testutil"
	"github.com/agentctl/agentctl/proc"
)

// monitorPID is the pid of a session's monitor, from its launch record.
func monitorPID(t *testing.T, e *Env, id string) int {
	t.Helper()
	var rec struct {
		Shim struct {
			PID int `json:"pid"`
		} `json:"shim"`
	}
	b, err := os.ReadFile(filepath.Join(e.SessionDir(id), "launch.json"))
	if err != nil || json.Unmarshal(b, &rec) != nil || rec.Shim.PID == 0 {
		t.Fatalf("read the monitor of %s: %v", id, err)
	}
	return rec.Shim.PID
}

// A session of a program that holds about 100 MB and spins a CPU: stats
// reads its memory within 5% of what /proc says of its processes (the
// program and its monitor), and its CPU over the interval as the kernel's
// ticks say it (over 50% of a core unless the machine's load took that
// from it). The answer's JSON has the documented shape. Once stopped, its
// peak is still given, across a restart of the service.
func TestStatsOfAHog(t *testing.T) {
	t.Parallel()
	e := NewEnv(t)
	hog := e.Start("--name", "hog", "--", "sh", "-c", `x=$(head -c 100000000 /dev/zero | tr '\0' a); echo held; while :; do :; done`)
	mon := monitorPID(t, e, hog.ID)
	// Held, and the pipeline that built it gone: the session is the
	// monitor and the shell.
	WaitFor(t, 30*time.Second, "the hog to hold 100 MB", func() bool {
		out, _, _ := e.Run("logs", hog.ID)
		table, err := proc.Table()
		if err != nil || !strings.Contains(out, "held") {
			return false
		}
		return len(proc.Descendants(table, mon)) == 1 && testutil.ProcStatus(t, hog.PID, "VmRSS") > 95_000_000
	})
	before, err := proc.Lookup(hog.PID)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Now()
	out := e.MustRun("stats", "--no-stream", "--json", "hog")
	after, err := proc.Lookup(hog.PID)
	if err != nil {
		t.Fatal(err)
	}
	kernelPct := 100 * (after.CPU - before.CPU).Seconds() / time.Since(at).Seconds()
	rss := testutil.ProcStatus(t, hog.PID, "VmRSS")

	// The shape, as a script reads it.
	var raw map[string]any
	if err := json.Unmarshal([]byte(out), &raw); err != nil {
		t.Fatalf("stats --json: %v\n%s", err, out)
	}
	for _, key := range []string{"sessions", "machine", "total"} {
		if raw[key] == nil {
			t.Errorf("stats --json has no %q:\n%s", key, out)
		}
	}
	row := raw["sessions"].([]any)[0].(map[string]any)
	for _, key := range []string{"id", "handle", "name", "adapter", "status", "label", "resources"} {
		if row[key] == nil {
			t.Errorf("a session of stats --json has no %q:\n%s", key, out)
		}
	}
	res := row["resources"].(map[string]any)
	for _, key := range []string{"sampled_at", "source", "cpu_percent", "cpu_window_s", "cpu_seconds", "memory_bytes", "memory_peak_bytes", "pids", "processes", "io_read_bytes", "io_write_bytes"} {
		if res[key] == nil {
			t.Errorf("the resources of stats --json have no %q:\n%s", key, out)
		}
	}
	machine := raw["machine"].(map[string]any)
	for _, key := range []string{"cpus", "load1", "load5", "load15", "mem_total_bytes", "mem_available_bytes"} {
		if machine[key] == nil {
			t.Errorf("the machine of stats --json has no %q:\n%s", key, out)
		}
	}

	var st api.Stats
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatal(err)
	}
	r := st.Sessions[0].Resources
	if r == nil || r.MemoryBytes == nil {
		t.Fatalf("no memory in %s", out)
	}
	if math.Abs(float64(*r.MemoryBytes)-float64(rss)) > 0.05*float64(rss) {
		t.Fatalf("memory %d (from the %s); /proc says %d for the hog", *r.MemoryBytes, r.Source, rss)
	}
	if r.CPUPercent != nil {
		t.Logf("memory %d, /proc %d; cpu %.1f%% over %.2fs, the kernel %.1f%%", *r.MemoryBytes, rss, *r.CPUPercent, r.CPUWindowS, kernelPct)
	}
	switch {
	case r.CPUPercent == nil:
		t.Errorf("no cpu percent")
	case r.CPUWindowS < 0.5 || r.CPUWindowS > 2.5:
		// stats measures over the second it waits, not since a sample
		// taken earlier (the launch's, a status's).
		t.Errorf("cpu %.1f%% over %.2fs: want a percent over the last second or so", *r.CPUPercent, r.CPUWindowS)
	case math.Abs(*r.CPUPercent-kernelPct) > 20:
		t.Errorf("cpu %.1f%%; the kernel's ticks around the call say %.1f%%", *r.CPUPercent, kernelPct)
	case kernelPct >= 60 && *r.CPUPercent <= 50:
		t.Errorf("cpu %.1f%% for a spinning program; want over 50%%", *r.CPUPercent)
	}
	if *r.PIDs < 1 || *r.Processes != 1 {
		t.Errorf("pids %d, processes %d; want the shell alone (its monitor is agentctl's)", *r.PIDs, *r.Processes)
	}

	// status says it too.
	if s := e.Session("hog"); s.Resources == nil || s.Resources.MemoryBytes == nil {
		t.Errorf("status --json of a running session has no resources: %+v", s.Resources)
	}
	human := e.MustRun("status", "hog")
	for _, want := range []string{"cpu ", "memory ", "pids "} {
		if !strings.Contains(human, "\n"+want) {
			t.Errorf("status has no %q line:\n%s", want, human)
		}
	}

	// Ended, then the service restarted: the peak is kept.
	e.MustRun("stop", "hog")
	e.MustRun("daemon", "restart")
	s := e.Session("hog")
	if s.Resources == nil || s.Resources.MemoryPeakBytes == nil || *s.Resources.MemoryPeakBytes < 95_000_000 || s.Resources.MemoryBytes != nil {
		t.Fatalf("an ended session's resources %+v; want its peak only", s.Resources)
	}
	if out := e.MustRun("stats", "--no-stream", "hog"); !strings.Contains(out, "killed") || !strings.Contains(out, "MiB") {
		t.Errorf("stats of the ended session:\n%s", out)
	}
}

// stats in a real terminal shows a row for each of 50 running sessions,
// redrawn in the alternate screen until Ctrl-C; top shows their CPU and
// memory, and the machine's line.
func TestStatsAndTopShow50Sessions(t *testing.T) {
	t.Parallel()
	e := NewEnv(t)
	const n = 50
	for i := range n {
		e.MustRun("run", "--name", fmt.Sprintf("st%02d", i), "--", "sleep", "600")
	}
	tm := newTmux(t, e, 200, n+12)
	tm.text(e.Bin + " stats --refresh 1s")
	tm.keys("Enter")
	rows := func(s string) int {
		c := 0
		for i := range n {
			if r := statsRow(s, fmt.Sprintf("st%02d", i)); r != "" && strings.Contains(r, "%") && strings.Contains(r, "iB ") {
				c++
			}
		}
		return c
	}
	s := tm.waitScreen(30*time.Second, "50 rows of stats", func(s string) bool { return rows(s) == n })
	if !strings.Contains(s, "load ") || !strings.Contains(s, fmt.Sprintf("%d sessions", n)) || !strings.Contains(s, "CPU %") {
		t.Errorf("the machine's line or the header is missing:\n%s", s)
	}
	if got := tm.altScreen(); got != "1" {
		t.Errorf("alternate screen = %q while stats runs, want 1", got)
	}
	tm.keys("C-c")
	tm.waitScreen(10*time.Second, "stats to end", func(string) bool { return tm.altScreen() == "0" })

	tm.text(e.Bin + " top --refresh 1s")
	tm.keys("Enter")
	tm.waitFor(10*time.Second, "agentctl top ·")
	tm.text("d") // no detail pane: the rows take the screen
	s = tm.waitScreen(30*time.Second, "50 rows of top with CPU and memory", func(s string) bool {
		c := 0
		for i := range n {
			if r := rowOf(s, fmt.Sprintf("st%02d", i)); strings.Contains(r, "%") && strings.Contains(r, "iB ") {
				c++
			}
		}
		return c == n
	})
	if !strings.Contains(s, "CPU%") || !strings.Contains(s, "MEM") || !strings.Contains(s, "load ") {
		t.Errorf("top has no CPU%% and MEM columns or no machine line:\n%s", s)
	}
	tm.text("q")
}

// statsRow is the line of stats' table whose last column is name.
func statsRow(screen, name string) string {
	for _, l := range strings.Split(screen, "\n") {
		f := strings.Fields(l)
		if len(f) > 3 && f[len(f)-1] == name {
			return l
		}
	}
	return ""
}

// TestStatsCost measures what accounting costs the service at 500 live
// sessions: the service's CPU time (utime+stime from /proc) per request of
// a list without resources, of the same list with them (what top asks for
// at each refresh), and of stats. It starts 500 sessions (or
// AGENTCTL_MEASURE_STATS of them), so it runs only when that is set; the
// figures are in its log.
func TestStatsCost(t *testing.T) {
	if os.Getenv("AGENTCTL_MEASURE_STATS") == "" {
		t.Skip("set AGENTCTL_MEASURE_STATS=1 to measure the cost of accounting at 500 sessions")
	}
	e := NewEnv(t)
	n := 500
	if v, err := strconv.Atoi(os.Getenv("AGENTCTL_MEASURE_STATS")); err == nil && v > 1 {
		n = v
	}
	work := make(chan int)
	done := make(chan error)
	for range 4 {
		go func() {
			for range work {
				_, stderr, code := e.Run("run", "--", "sleep", "3600")
				if code != 0 {
					done <- fmt.Errorf("run: %s", stderr)
					continue
				}
				done <- nil
			}
		}()
	}
	go func() {
		for i := range n {
			work <- i
		}
		close(work)
	}()
	for range n {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	svc := e.DaemonPID()
	// utime+stime of the service, without its children's.
	cpu := func() time.Duration {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", svc))
		if err != nil {
			t.Fatal(err)
		}
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
		ut, _ := strconv.ParseUint(f[11], 10, 64)
		st, _ := strconv.ParseUint(f[12], 10, 64)
		return time.Duration(ut+st) * 10 * time.Millisecond
	}
	// Each kind of request in turn, many times over, each request's own
	// service CPU (the clock ticks at 10 ms: only an average says), so
	// that the machine's other load falls on every kind alike.
	kinds := []struct {
		what string
		args []string
	}{
		{"list --json (no resources)", []string{"list", "--json"}},
		{"list -o wide (with resources: top's request)", []string{"list", "-o", "wide"}},
		{"stats --no-stream --json (and I/O)", []string{"stats", "--no-stream", "--json"}},
	}
	for _, k := range kinds {
		e.MustRun(k.args...) // warm: the first read of each record, the first sample
	}
	const rounds = 40
	used := make([]time.Duration, len(kinds))
	for i := range rounds {
		for j := range kinds {
			k := kinds[(i+j)%len(kinds)]
			time.Sleep(300 * time.Millisecond)
			before := cpu()
			e.MustRun(k.args...)
			used[(i+j)%len(kinds)] += cpu() - before
		}
	}
	per := make([]time.Duration, len(kinds))
	for j, k := range kinds {
		per[j] = used[j] / rounds
		t.Logf("%-46s %6.1f ms of service CPU per request", k.what, float64(per[j].Microseconds())/1000)
	}
	acct := per[1] - per[0]
	t.Logf("%d sessions: accounting costs %.1f ms of service CPU per refresh (a list with resources less one without), %.2f%% of one core at a refresh every 2 s",
		n, float64(acct.Microseconds())/1000, 100*acct.Seconds()/2)
}
