// Package metrics exposes the service's Prometheus metrics, written in the
// text exposition format by hand (the client library's package init alone
// cost the CLI milliseconds at every start). Each Metrics has its own series,
// never process-wide ones. Names of the tool agentctl
// replaces are kept where they mean the same thing, so dashboards keep
// working: agentctl_sessions_active, agentctl_sessions_total,
// agentctl_session_duration_seconds, agentctl_locks_active,
// agentctl_fuses_active, agentctl_fuses_expired_total.
package metrics

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentctl/agentctl/api"
)

// SessionCount is how many sessions of one adapter have one status.
type SessionCount struct {
	Adapter string
	Status  api.Status
	Count   int
}

// Sources are read at scrape time, so the gauges are derived from the
// service's state when asked rather than kept in step by hand. Any may be
// nil.
type Sources struct {
	Sessions      func() []SessionCount
	Locks         func() map[string]int // by lock type: "auto", "manual"
	Fuses         func() int
	EventsDropped func() uint64
	// Waiting counts running sessions waiting for a person, by what they
	// wait for ("permission", "question", "input").
	Waiting func() map[string]int
	// HeldByLimit counts the sessions a usage limit holds, by provider.
	HeldByLimit func() map[string]int
	// Resources is what each running session costs now.
	Resources func() []SessionResources
	// Queued counts queued sessions by what holds them ("cap", "memory",
	// "limit", "lock").
	Queued func() map[string]int
}

// SessionResources is one running session's cost.
type SessionResources struct {
	ID, Adapter string
	Resources   api.Resources
}

// MaxSessionSeries bounds the sessions the per-session families show (the
// first by id), so a scrape's size stays bounded however many run;
// agentctl_session_series_dropped counts the ones left out.
const MaxSessionSeries = 1000

// Metrics holds the series the service feeds. Each family keeps its own
// lock, so a count never waits on a scrape of another family.
type Metrics struct {
	src               Sources
	sessionsEnded     *family
	sessionDuration   *family
	fusesExpired      *family
	hookRuns          *family
	webhookDeliveries *family
	spawnDuration     *family
	discoveryDuration *family
	discoveryErrors   *family
}

// DurationBuckets are the session duration histogram's bounds, in seconds:
// those of the tool agentctl replaces.
func DurationBuckets() []float64 { return []float64{60, 300, 600, 1800, 3600, 7200} }

// latencyBuckets are 1 ms doubling to about 8 s.
func latencyBuckets() []float64 {
	b := make([]float64, 14)
	for i := range b {
		b[i] = 0.001 * math.Pow(2, float64(i))
	}
	return b
}

// New builds the metrics; each Metrics has its own series.
func New(src Sources) *Metrics {
	return &Metrics{
		src: src,
		sessionsEnded: newFamily("agentctl_sessions_total", "counter",
			"Sessions that ended, by adapter and outcome: completed (exit 0), failed (other exit code), stopped (killed by a signal), lost (gone without an exit record).",
			nil, "adapter", "status"),
		sessionDuration: newFamily("agentctl_session_duration_seconds", "histogram",
			"How long sessions ran, from start to end, by adapter.", DurationBuckets(), "adapter"),
		fusesExpired: newFamily("agentctl_fuses_expired_total", "counter", "Fuses that expired.", nil),
		hookRuns: newFamily("agentctl_hook_runs_total", "counter",
			"Lifecycle hook runs, by phase and outcome (ok, failed, timeout, error).", nil, "phase", "outcome"),
		webhookDeliveries: newFamily("agentctl_webhook_deliveries_total", "counter",
			"Webhook deliveries, by outcome (delivered, failed, dropped).", nil, "outcome"),
		spawnDuration: newFamily("agentctl_spawn_duration_seconds", "histogram",
			"Time from a run request to the command confirmed started, by adapter.", latencyBuckets(), "adapter"),
		discoveryDuration: newFamily("agentctl_discovery_duration_seconds", "histogram",
			"Time an adapter took to read its native sessions, by adapter.", latencyBuckets(), "adapter"),
		discoveryErrors: newFamily("agentctl_discovery_errors_total", "counter",
			"Adapter discoveries that failed, by adapter. A request that stops waiting for a slow discovery says so in a warning; the discovery goes on.",
			nil, "adapter"),
	}
}

// EndStatus maps an ended session to the agentctl_sessions_total status
// label: the old tool's completed/failed/stopped, plus lost.
func EndStatus(status api.Status, exitCode *int) string {
	switch {
	case status == api.StatusExited && exitCode != nil && *exitCode == 0:
		return "completed"
	case status == api.StatusExited:
		return "failed"
	case status == api.StatusKilled:
		return "stopped"
	case status == api.StatusLost:
		return "lost"
	}
	return string(status)
}

// SessionEnded counts an ended session and records how long it ran; ran < 0
// means unknown and is not recorded.
func (m *Metrics) SessionEnded(adapter string, status api.Status, exitCode *int, ran time.Duration) {
	m.sessionsEnded.add(1, adapter, EndStatus(status, exitCode))
	if ran >= 0 {
		m.sessionDuration.observe(ran.Seconds(), adapter)
	}
}

// FuseExpired counts an expired fuse.
func (m *Metrics) FuseExpired() { m.fusesExpired.add(1) }

// HookRun counts a hook run.
func (m *Metrics) HookRun(phase, outcome string) { m.hookRuns.add(1, phase, outcome) }

// WebhookDelivery counts a webhook delivery's outcome.
func (m *Metrics) WebhookDelivery(outcome string) { m.webhookDeliveries.add(1, outcome) }

// Spawned records a spawn's latency.
func (m *Metrics) Spawned(adapter string, took time.Duration) {
	m.spawnDuration.observe(took.Seconds(), adapter)
}

// Discovered records an adapter discovery's latency and failure.
func (m *Metrics) Discovered(adapter string, took time.Duration, err error) {
	m.discoveryDuration.observe(took.Seconds(), adapter)
	if err != nil {
		m.discoveryErrors.add(1, adapter)
	}
}

// write renders every family in the text exposition format, sorted by name,
// into memory: no family's lock is held while a scraper reads.
func (m *Metrics) write(w *bytes.Buffer) {
	fams := []*family{
		m.sessionsEnded, m.sessionDuration, m.fusesExpired, m.hookRuns,
		m.webhookDeliveries, m.spawnDuration, m.discoveryDuration, m.discoveryErrors,
	}
	fams = append(fams, stateFamilies(m.src)...)
	fams = append(fams, runtimeFamilies()...)
	fams = append(fams, processFamilies()...)
	slices.SortFunc(fams, func(a, b *family) int { return strings.Compare(a.name, b.name) })
	for _, f := range fams {
		f.write(w)
	}
}

// stateFamilies derives the gauges from Sources at scrape time.
func stateFamilies(src Sources) []*family {
	var out []*family
	if src.Sessions != nil {
		sessions := newFamily("agentctl_sessions", "gauge", "Sessions known to the service, by adapter and status.", nil, "adapter", "status")
		active := 0
		for _, s := range src.Sessions() {
			sessions.set(float64(s.Count), s.Adapter, string(s.Status))
			if s.Status == api.StatusRunning {
				active += s.Count
			}
		}
		out = append(out, sessions, gauge("agentctl_sessions_active", "Sessions running now.", float64(active)))
	}
	if src.Locks != nil {
		locks := newFamily("agentctl_locks_active", "gauge", "Directory locks held, by type (auto, manual).", nil, "type")
		counts := src.Locks()
		for _, typ := range []string{"auto", "manual"} {
			locks.set(float64(counts[typ]), typ)
		}
		out = append(out, locks)
	}
	if src.Fuses != nil {
		out = append(out, gauge("agentctl_fuses_active", "Fuses armed.", float64(src.Fuses())))
	}
	if src.Waiting != nil {
		waiting := newFamily("agentctl_sessions_waiting", "gauge", "Running sessions waiting for a person, by what for (permission, question, input).", nil, "reason")
		counts := src.Waiting()
		for _, reason := range []string{api.WaitingPermission, api.WaitingQuestion, api.WaitingInput} {
			waiting.set(float64(counts[reason]), reason)
		}
		out = append(out, waiting)
	}
	if src.Queued != nil {
		queued := newFamily("agentctl_sessions_queued", "gauge", "Queued sessions, by what holds them (cap, memory, limit, lock).", nil, "reason")
		counts := src.Queued()
		for _, reason := range []string{"cap", "memory", "limit", "lock"} {
			queued.set(float64(counts[reason]), reason)
		}
		out = append(out, queued)
	}
	if src.HeldByLimit != nil {
		held := newFamily("agentctl_sessions_held_by_limit", "gauge", "Sessions a usage limit of their model provider holds, by provider.", nil, "provider")
		counts := src.HeldByLimit()
		for _, p := range slices.Sorted(maps.Keys(counts)) {
			held.set(float64(counts[p]), p)
		}
		out = append(out, held)
	}
	if src.Resources != nil {
		out = append(out, resourceFamilies(src.Resources())...)
	}
	if src.EventsDropped != nil {
		f := newFamily("agentctl_events_dropped_total", "counter", "Events a subscriber's full buffer could not take (read back from the journal while it still holds them).", nil)
		f.set(float64(src.EventsDropped()))
		out = append(out, f)
	}
	return out
}

// resourceFamilies are the per-session gauges: CPU seconds, memory and
// tasks, labelled with the session's id and adapter. Only running sessions
// have series: an ended one's go with it.
func resourceFamilies(rows []SessionResources) []*family {
	slices.SortFunc(rows, func(a, b SessionResources) int { return strings.Compare(a.ID, b.ID) })
	dropped := 0
	if len(rows) > MaxSessionSeries {
		dropped = len(rows) - MaxSessionSeries
		rows = rows[:MaxSessionSeries]
	}
	cpu := newFamily("agentctl_session_cpu_seconds_total", "counter", "Processor time a running session's processes used, by session and adapter.", nil, "session", "adapter")
	mem := newFamily("agentctl_session_memory_bytes", "gauge", "Memory a running session uses now (its cgroup's, or its processes' resident sets added up), by session and adapter.", nil, "session", "adapter")
	peak := newFamily("agentctl_session_memory_peak_bytes", "gauge", "The most memory a running session was seen to use, by session and adapter.", nil, "session", "adapter")
	tasks := newFamily("agentctl_session_pids", "gauge", "Tasks (threads included) of a running session, by session and adapter.", nil, "session", "adapter")
	for _, r := range rows {
		res := r.Resources
		if res.CPUSeconds != nil {
			cpu.set(*res.CPUSeconds, r.ID, r.Adapter)
		}
		if res.MemoryBytes != nil {
			mem.set(float64(*res.MemoryBytes), r.ID, r.Adapter)
		}
		if res.MemoryPeakBytes != nil {
			peak.set(float64(*res.MemoryPeakBytes), r.ID, r.Adapter)
		}
		if res.PIDs != nil {
			tasks.set(float64(*res.PIDs), r.ID, r.Adapter)
		}
	}
	return []*family{cpu, mem, peak, tasks,
		gauge("agentctl_session_series_dropped", fmt.Sprintf("Running sessions left out of the per-session families (they show %d at most).", MaxSessionSeries), float64(dropped))}
}

// Handler serves /metrics in the Prometheus text format; other paths are
// 404, as in the tool agentctl replaces.
func (m *Metrics) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, _ *http.Request) {
		var b bytes.Buffer
		m.write(&b)
		w.Header().Set("Content-Type", contentType)
		w.Write(b.Bytes())
	})
	return mux
}

// Listen binds 127.0.0.1:port (port 0: any free port). Metrics are never
// served beyond the loopback interface.
func Listen(port int) (net.Listener, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return nil, fmt.Errorf("listen for metrics on 127.0.0.1:%d: %w (set metrics_port in config.json to another port, or 0 to turn metrics off)", port, err)
	}
	return ln, nil
}

// Serve serves h on ln until ctx ends.
func Serve(ctx context.Context, ln net.Listener, h http.Handler, log *slog.Logger) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		srv.Shutdown(shutdown)
	}()
	if log != nil {
		log.Info("serving metrics", "url", "http://"+ln.Addr().String()+"/metrics")
	}
	err := srv.Serve(ln)
	cancel()
	<-stopped
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return fmt.Errorf("serve metrics: %w", err)
}
