// Package metrics exposes the service's Prometheus metrics on its own
// registry (never the process-wide default). Names of the tool agentctl
// replaces are kept where they mean the same thing, so dashboards keep
// working: agentctl_sessions_active, agentctl_sessions_total,
// agentctl_session_duration_seconds, agentctl_locks_active,
// agentctl_fuses_active, agentctl_fuses_expired_total.
package metrics

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

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
}

// Metrics holds the collectors the service feeds.
type Metrics struct {
	reg               *prometheus.Registry
	sessionsEnded     *prometheus.CounterVec
	sessionDuration   *prometheus.HistogramVec
	fusesExpired      prometheus.Counter
	hookRuns          *prometheus.CounterVec
	webhookDeliveries *prometheus.CounterVec
	spawnDuration     *prometheus.HistogramVec
	discoveryDuration *prometheus.HistogramVec
	discoveryErrors   *prometheus.CounterVec
}

// DurationBuckets are the session duration histogram's bounds, in seconds:
// those of the tool agentctl replaces.
func DurationBuckets() []float64 { return []float64{60, 300, 600, 1800, 3600, 7200} }

// New builds the metrics on a fresh registry.
func New(src Sources) *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		sessionsEnded: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agentctl_sessions_total",
			Help: "Sessions that ended, by adapter and outcome: completed (exit 0), failed (other exit code), stopped (killed by a signal), lost (gone without an exit record).",
		}, []string{"adapter", "status"}),
		sessionDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "agentctl_session_duration_seconds",
			Help:    "How long sessions ran, from start to end, by adapter.",
			Buckets: DurationBuckets(),
		}, []string{"adapter"}),
		fusesExpired: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "agentctl_fuses_expired_total",
			Help: "Fuses that expired.",
		}),
		hookRuns: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agentctl_hook_runs_total",
			Help: "Lifecycle hook runs, by phase and outcome (ok, failed, timeout, error).",
		}, []string{"phase", "outcome"}),
		webhookDeliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agentctl_webhook_deliveries_total",
			Help: "Webhook deliveries, by outcome (delivered, failed, dropped).",
		}, []string{"outcome"}),
		spawnDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "agentctl_spawn_duration_seconds",
			Help:    "Time from a run request to the command confirmed started, by adapter.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 14), // 1 ms .. 8 s
		}, []string{"adapter"}),
		discoveryDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "agentctl_discovery_duration_seconds",
			Help:    "Time an adapter took to read its native sessions, by adapter.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 14),
		}, []string{"adapter"}),
		discoveryErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agentctl_discovery_errors_total",
			Help: "Adapter discoveries that failed, by adapter. A request that stops waiting for a slow discovery says so in a warning; the discovery goes on.",
		}, []string{"adapter"}),
	}
	m.reg.MustRegister(
		m.sessionsEnded, m.sessionDuration, m.fusesExpired, m.hookRuns,
		m.webhookDeliveries, m.spawnDuration, m.discoveryDuration, m.discoveryErrors,
		newStateCollector(src),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return m
}

// Registry is the metrics' registry, for tests and extra collectors.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

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
	m.sessionsEnded.WithLabelValues(adapter, EndStatus(status, exitCode)).Inc()
	if ran >= 0 {
		m.sessionDuration.WithLabelValues(adapter).Observe(ran.Seconds())
	}
}

// FuseExpired counts an expired fuse.
func (m *Metrics) FuseExpired() { m.fusesExpired.Inc() }

// HookRun counts a hook run.
func (m *Metrics) HookRun(phase, outcome string) { m.hookRuns.WithLabelValues(phase, outcome).Inc() }

// WebhookDelivery counts a webhook delivery's outcome.
func (m *Metrics) WebhookDelivery(outcome string) { m.webhookDeliveries.WithLabelValues(outcome).Inc() }

// Spawned records a spawn's latency.
func (m *Metrics) Spawned(adapter string, took time.Duration) {
	m.spawnDuration.WithLabelValues(adapter).Observe(took.Seconds())
}

// Discovered records an adapter discovery's latency and failure.
func (m *Metrics) Discovered(adapter string, took time.Duration, err error) {
	m.discoveryDuration.WithLabelValues(adapter).Observe(took.Seconds())
	if err != nil {
		m.discoveryErrors.WithLabelValues(adapter).Inc()
	}
}

// stateCollector derives the gauges from Sources at scrape time.
type stateCollector struct {
	src                                           Sources
	sessions, active, locks, fuses, eventsDropped *prometheus.Desc
	waiting                                       *prometheus.Desc
}

func newStateCollector(src Sources) stateCollector {
	return stateCollector{
		src:           src,
		sessions:      prometheus.NewDesc("agentctl_sessions", "Sessions known to the service, by adapter and status.", []string{"adapter", "status"}, nil),
		active:        prometheus.NewDesc("agentctl_sessions_active", "Sessions running now.", nil, nil),
		locks:         prometheus.NewDesc("agentctl_locks_active", "Directory locks held, by type (auto, manual).", []string{"type"}, nil),
		fuses:         prometheus.NewDesc("agentctl_fuses_active", "Fuses armed.", nil, nil),
		eventsDropped: prometheus.NewDesc("agentctl_events_dropped_total", "Events a subscriber's full buffer could not take (read back from the journal while it still holds them).", nil, nil),
		waiting:       prometheus.NewDesc("agentctl_sessions_waiting", "Running sessions waiting for a person, by what for (permission, question, input).", []string{"reason"}, nil),
	}
}

func (c stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.sessions, c.active, c.locks, c.fuses, c.eventsDropped, c.waiting} {
		ch <- d
	}
}

func (c stateCollector) Collect(ch chan<- prometheus.Metric) {
	if c.src.Sessions != nil {
		active := 0
		for _, s := range c.src.Sessions() {
			ch <- prometheus.MustNewConstMetric(c.sessions, prometheus.GaugeValue, float64(s.Count), s.Adapter, string(s.Status))
			if s.Status == api.StatusRunning {
				active += s.Count
			}
		}
		ch <- prometheus.MustNewConstMetric(c.active, prometheus.GaugeValue, float64(active))
	}
	if c.src.Locks != nil {
		counts := c.src.Locks()
		for _, typ := range []string{"auto", "manual"} {
			ch <- prometheus.MustNewConstMetric(c.locks, prometheus.GaugeValue, float64(counts[typ]), typ)
		}
	}
	if c.src.Fuses != nil {
		ch <- prometheus.MustNewConstMetric(c.fuses, prometheus.GaugeValue, float64(c.src.Fuses()))
	}
	if c.src.Waiting != nil {
		counts := c.src.Waiting()
		for _, reason := range []string{api.WaitingPermission, api.WaitingQuestion, api.WaitingInput} {
			ch <- prometheus.MustNewConstMetric(c.waiting, prometheus.GaugeValue, float64(counts[reason]), reason)
		}
	}
	if c.src.EventsDropped != nil {
		ch <- prometheus.MustNewConstMetric(c.eventsDropped, prometheus.CounterValue, float64(c.src.EventsDropped()))
	}
}

// Handler serves /metrics in the Prometheus text format; other paths are
// 404, as in the tool agentctl replaces.
func (m *Metrics) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}))
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
