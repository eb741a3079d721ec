package metrics

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/agentctl/agentctl/api"
)

// scrape serves m on a real 127.0.0.1 port and parses /metrics with the
// Prometheus text parser.
func scrape(t *testing.T, m *Metrics) (map[string]*dto.MetricFamily, http.Header) {
	t.Helper()
	ln, err := Listen(0)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- Serve(ctx, ln, m.Handler(), nil) }()
	defer func() {
		cancel()
		if err := <-served; err != nil {
			t.Error(err)
		}
	}()
	base := "http://" + ln.Addr().String()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %s", resp.Status)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		t.Fatalf("parse /metrics: %v\n%s", err, body)
	}
	// Every family's HELP and TYPE appear once (the old tool repeated them).
	for name := range families {
		if n := strings.Count(string(body), "# TYPE "+name+" "); n != 1 {
			t.Errorf("%s has %d TYPE lines", name, n)
		}
	}
	other, err := http.Get(base + "/other")
	if err != nil {
		t.Fatal(err)
	}
	other.Body.Close()
	if other.StatusCode != http.StatusNotFound {
		t.Errorf("GET /other: %s, want 404", other.Status)
	}
	return families, resp.Header
}

// value returns the sample of family name whose labels include want.
func value(t *testing.T, fams map[string]*dto.MetricFamily, name string, want map[string]string) *dto.Metric {
	t.Helper()
	f, ok := fams[name]
	if !ok {
		t.Fatalf("no family %s", name)
	}
	for _, m := range f.GetMetric() {
		match := true
		for k, v := range want {
			found := false
			for _, l := range m.GetLabel() {
				if l.GetName() == k && l.GetValue() == v {
					found = true
				}
			}
			match = match && found
		}
		if match {
			return m
		}
	}
	t.Fatalf("%s has no sample with labels %v", name, want)
	return nil
}

func TestScrape(t *testing.T) {
	code0, code2 := 0, 2
	m := New(Sources{
		Sessions: func() []SessionCount {
			return []SessionCount{{"claude", api.StatusRunning, 2}, {"exec", api.StatusRunning, 1}, {"exec", api.StatusExited, 4}}
		},
		Locks:         func() map[string]int { return map[string]int{"auto": 3, "manual": 1} },
		Fuses:         func() int { return 2 },
		EventsDropped: func() uint64 { return 7 },
		Queued:        func() map[string]int { return map[string]int{"cap": 3, "memory": 1} },
		HeldByLimit:   func() map[string]int { return map[string]int{"anthropic": 3, "openai": 1} },
	})
	m.SessionEnded("exec", api.StatusExited, &code0, 90*time.Second)
	m.SessionEnded("exec", api.StatusExited, &code2, 10*time.Second)
	m.SessionEnded("claude", api.StatusKilled, nil, 4000*time.Second)
	m.SessionEnded("claude", api.StatusLost, nil, -1)   // how long: unknown
	m.SessionEnded("exec", api.StatusExited, &code0, 0) // over within the clock's resolution
	m.FuseExpired()
	m.HookRun("on-complete", "ok")
	m.HookRun("on-complete", "timeout")
	m.HookRun("odd \"phase\"\\\n", "ok") // label values are escaped
	m.WebhookDelivery("delivered")
	m.WebhookDelivery("failed")
	m.Spawned("exec", 3*time.Millisecond)
	m.Discovered("claude", 20*time.Millisecond, nil)
	m.Discovered("codex", 5*time.Second, errors.New("timed out"))

	fams, hdr := scrape(t, m)
	if ct := hdr.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Errorf("Content-Type %q", ct)
	}
	gauges := []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"agentctl_sessions_active", nil, 3},
		{"agentctl_sessions", map[string]string{"adapter": "exec", "status": "exited"}, 4},
		{"agentctl_locks_active", map[string]string{"type": "auto"}, 3},
		{"agentctl_locks_active", map[string]string{"type": "manual"}, 1},
		{"agentctl_fuses_active", nil, 2},
		{"agentctl_sessions_queued", map[string]string{"reason": "cap"}, 3},
		{"agentctl_sessions_queued", map[string]string{"reason": "memory"}, 1},
		{"agentctl_sessions_queued", map[string]string{"reason": "limit"}, 0},
		{"agentctl_sessions_held_by_limit", map[string]string{"provider": "anthropic"}, 3},
		{"agentctl_sessions_held_by_limit", map[string]string{"provider": "openai"}, 1},
	}
	for _, g := range gauges {
		if got := value(t, fams, g.name, g.labels).GetGauge().GetValue(); got != g.want {
			t.Errorf("%s%v = %v, want %v", g.name, g.labels, got, g.want)
		}
	}
	counters := []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"agentctl_sessions_total", map[string]string{"adapter": "exec", "status": "completed"}, 2},
		{"agentctl_sessions_total", map[string]string{"adapter": "exec", "status": "failed"}, 1},
		{"agentctl_sessions_total", map[string]string{"adapter": "claude", "status": "stopped"}, 1},
		{"agentctl_sessions_total", map[string]string{"adapter": "claude", "status": "lost"}, 1},
		{"agentctl_fuses_expired_total", nil, 1},
		{"agentctl_hook_runs_total", map[string]string{"phase": "on-complete", "outcome": "timeout"}, 1},
		{"agentctl_hook_runs_total", map[string]string{"phase": "odd \"phase\"\\\n", "outcome": "ok"}, 1},
		{"agentctl_webhook_deliveries_total", map[string]string{"outcome": "failed"}, 1},
		{"agentctl_discovery_errors_total", map[string]string{"adapter": "codex"}, 1},
		{"agentctl_events_dropped_total", nil, 7},
	}
	for _, c := range counters {
		if got := value(t, fams, c.name, c.labels).GetCounter().GetValue(); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	// The duration histogram is fed, with the old tool's buckets.
	h := value(t, fams, "agentctl_session_duration_seconds", map[string]string{"adapter": "exec"}).GetHistogram()
	if h.GetSampleCount() != 3 || h.GetSampleSum() != 100 {
		t.Errorf("exec durations: count %d sum %v, want 3 and 100", h.GetSampleCount(), h.GetSampleSum())
	}
	var bounds []float64
	for _, b := range h.GetBucket() {
		bounds = append(bounds, b.GetUpperBound())
	}
	want := append(DurationBuckets(), math.Inf(1))
	if !slices.Equal(bounds, want) {
		t.Errorf("buckets %v, want %v", bounds, want)
	}
	// A lost session's unknown duration is not recorded.
	if c := value(t, fams, "agentctl_session_duration_seconds", map[string]string{"adapter": "claude"}).GetHistogram().GetSampleCount(); c != 1 {
		t.Errorf("claude durations: %d samples, want 1", c)
	}
	if value(t, fams, "agentctl_spawn_duration_seconds", map[string]string{"adapter": "exec"}).GetHistogram().GetSampleCount() != 1 {
		t.Error("spawn latency not recorded")
	}
	for _, name := range []string{"go_goroutines", "process_cpu_seconds_total", "process_start_time_seconds"} {
		if _, ok := fams[name]; !ok {
			t.Errorf("no %s", name)
		}
	}
	// An observation equal to a bound counts in that bound's bucket (le).
	m.Spawned("edge", 2*time.Millisecond)
	fams, _ = scrape(t, m)
	for _, b := range value(t, fams, "agentctl_spawn_duration_seconds", map[string]string{"adapter": "edge"}).GetHistogram().GetBucket() {
		want := uint64(0)
		if b.GetUpperBound() >= 0.002 {
			want = 1
		}
		if b.GetCumulativeCount() != want {
			t.Errorf("bucket le=%v: %d, want %d", b.GetUpperBound(), b.GetCumulativeCount(), want)
		}
	}
}

// Two services in one process (tests, or two homes) do not collide: each
// has its own registry.
func TestIndependentRegistries(t *testing.T) {
	a, b := New(Sources{}), New(Sources{})
	a.FuseExpired()
	fa, _ := scrape(t, a)
	fb, _ := scrape(t, b)
	if value(t, fa, "agentctl_fuses_expired_total", nil).GetCounter().GetValue() != 1 || value(t, fb, "agentctl_fuses_expired_total", nil).GetCounter().GetValue() != 0 {
		t.Fatal("registries share state")
	}
}

func TestListenBusyPort(t *testing.T) {
	ln, err := Listen(0)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	n := ln.Addr().(*net.TCPAddr).Port
	if _, err := Listen(n); err == nil || !strings.Contains(err.Error(), "metrics_port") {
		t.Fatalf("second Listen on %d: %v, want an error saying how to fix it", n, err)
	}
}

func TestEndStatus(t *testing.T) {
	zero, one := 0, 1
	tests := []struct {
		status api.Status
		code   *int
		want   string
	}{
		{api.StatusExited, &zero, "completed"},
		{api.StatusExited, &one, "failed"},
		{api.StatusKilled, nil, "stopped"},
		{api.StatusLost, nil, "lost"},
	}
	for _, tt := range tests {
		if got := EndStatus(tt.status, tt.code); got != tt.want {
			t.Errorf("EndStatus(%s) = %s, want %s", tt.status, got, tt.want)
		}
	}
}

// Each running session has its CPU, memory, peak and tasks with its id and
// adapter; the number of sessions shown is bounded, and the rest counted.
func TestSessionResources(t *testing.T) {
	t.Parallel()
	secs, mem, peak, tasks := 12.5, uint64(300<<20), uint64(400<<20), 7
	rows := []SessionResources{
		{ID: "s-one", Adapter: "claude", Resources: api.Resources{CPUSeconds: &secs, MemoryBytes: &mem, MemoryPeakBytes: &peak, PIDs: &tasks}},
		{ID: "s-unknown", Adapter: "exec"}, // nothing known: no series
	}
	for i := range MaxSessionSeries {
		rows = append(rows, SessionResources{ID: fmt.Sprintf("z-%04d", i), Adapter: "exec", Resources: api.Resources{MemoryBytes: &mem}})
	}
	fams, _ := scrape(t, New(Sources{Resources: func() []SessionResources { return rows }}))
	one := map[string]string{"session": "s-one", "adapter": "claude"}
	if v := value(t, fams, "agentctl_session_cpu_seconds_total", one).GetCounter().GetValue(); v != secs {
		t.Errorf("cpu seconds %v, want %v", v, secs)
	}
	if v := value(t, fams, "agentctl_session_memory_bytes", one).GetGauge().GetValue(); v != float64(mem) {
		t.Errorf("memory %v, want %v", v, mem)
	}
	if v := value(t, fams, "agentctl_session_memory_peak_bytes", one).GetGauge().GetValue(); v != float64(peak) {
		t.Errorf("peak %v, want %v", v, peak)
	}
	if v := value(t, fams, "agentctl_session_pids", one).GetGauge().GetValue(); v != float64(tasks) {
		t.Errorf("pids %v, want %v", v, tasks)
	}
	if n := len(fams["agentctl_session_memory_bytes"].GetMetric()); n != MaxSessionSeries-1 {
		t.Errorf("%d memory series; want %d (the first %d sessions by id, one of which has no figure)", n, MaxSessionSeries-1, MaxSessionSeries)
	}
	if v := value(t, fams, "agentctl_session_series_dropped", nil).GetGauge().GetValue(); v != 2 {
		t.Errorf("dropped %v, want 2", v)
	}
}
