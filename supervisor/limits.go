package supervisor

import (
	"context"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/config"
	"github.com/agentctl/agentctl/session"
)

// limitsEvery is how often the service looks at the sessions usage limits
// hold (the book's update, and the resumes that are due) while sessions
// run or wait to be resumed; limitsIdleEvery while none does, when a look
// (a whole list) would find nothing new.
const (
	limitsEvery     = 5 * time.Second
	limitsIdleEvery = time.Minute
)

// limitsWindow is how far back ended sessions count as evidence of a
// limit (the longest window providers have is a week).
const limitsWindow = 8 * 24 * time.Hour

// limitKeeper keeps the book of usage limits and resumes, after the reset,
// the sessions a limit ended whose on_limit is resume: staggered, one of a
// provider per interval, never while the provider's window is still used
// up, never one the user stopped (it did not end by itself),
// never twice (a run that resumes it is on disk, ResumeOf it).
type limitKeeper struct {
	book    *session.UsageLimits
	policy  config.ResumePolicy
	onLimit string // the configuration's default
	list    func(ctx context.Context) ([]api.Session, error)
	resume  func(ctx context.Context, id, prompt string) (api.Session, error)
	publish func(api.Event)
	log     *slog.Logger

	// woken makes the loop look now (a session started: something to
	// follow); buffered 1.
	woken chan struct{}

	mu sync.Mutex
	// released is when each provider's last held session was resumed.
	released map[string]time.Time
	// checking are the runs a resume started, by id, with the session
	// they resume, until they show a new turn or end.
	checking map[string]string
}

func newLimitKeeper(cfg config.Config, log *slog.Logger) *limitKeeper {
	policy, err := cfg.LimitResume.Policy()
	if err != nil { // the configuration was checked at load
		policy, _ = config.LimitResume{}.Policy()
	}
	return &limitKeeper{
		book: session.NewUsageLimits(policy.UnknownReset), policy: policy, onLimit: cfg.OnLimit, log: log,
		released: map[string]time.Time{}, checking: map[string]string{}, woken: make(chan struct{}, 1),
	}
}

// wake makes the loop look now, without waiting.
func (k *limitKeeper) wake() {
	select {
	case k.woken <- struct{}{}:
	default:
	}
}

// loop looks until ctx ends: every limitsEvery while there is something
// to follow, else every limitsIdleEvery.
func (k *limitKeeper) loop(ctx context.Context) {
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-k.woken:
			if !t.Stop() {
				select {
				case <-t.C:
				default:
				}
			}
		}
		every := limitsIdleEvery
		if k.tick(ctx, time.Now()) {
			every = limitsEvery
		}
		t.Reset(every)
	}
}

// refresh rebuilds the book from the sessions now, and returns them.
func (k *limitKeeper) refresh(ctx context.Context, now time.Time) ([]api.Session, error) {
	view, err := k.list(ctx)
	if err != nil {
		return nil, err
	}
	k.book.Observe(view, now)
	return view, nil
}

// tick updates the book, checks the runs resumes started, and resumes
// what is due. busy says there is something to follow: a session runs, or
// a held one waits for its resume.
func (k *limitKeeper) tick(ctx context.Context, now time.Time) (busy bool) {
	view, err := k.refresh(ctx, now)
	if err != nil {
		k.log.Warn("usage limits: list the sessions", "err", err)
		return true
	}
	resumed := map[string]bool{}
	for i := range view {
		if view[i].ResumeOf != "" {
			resumed[view[i].ResumeOf] = true
		}
	}
	busy = slices.ContainsFunc(view, func(s api.Session) bool {
		return s.Status == api.StatusRunning || s.Status == api.StatusQueued ||
			s.Waiting != nil && s.Waiting.Limit != nil && s.Status == api.StatusExited && s.OnLimit != api.OnLimitWait && !resumed[s.ID]
	})
	k.check(view)
	k.mu.Lock()
	due := dueResumes(view, now, k.book, k.policy, k.onLimit, k.released)
	k.mu.Unlock()
	for _, s := range due {
		provider := s.Waiting.Limit.Provider
		run, err := k.resume(ctx, s.ID, k.policy.Prompt)
		k.mu.Lock()
		// Tried or not, the provider waits its interval: a failing resume
		// is not retried in a loop.
		k.released[provider] = now
		if err == nil {
			k.checking[run.ID] = s.ID
		}
		k.mu.Unlock()
		if err != nil {
			k.log.Warn("resume after the usage limit failed", "session", s.ID, "provider", provider, "err", err)
			continue
		}
		k.log.Info("resumed after the usage limit", "session", s.ID, "run", run.ID, "provider", provider)
		held := s
		k.publish(api.Event{Type: api.EventSessionResumed, Adapter: s.Adapter, SessionID: s.ID, Session: &held,
			Meta: map[string]any{"reason": api.WaitingLimit, "provider": provider, "run": run.ID}})
	}
	return busy
}

// check follows the runs resumes started: a turn recorded after the run
// began (the store shows a new turn) means the resume went through.
func (k *limitKeeper) check(view []api.Session) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for i := range view {
		s := &view[i]
		of, ok := k.checking[s.ID]
		if !ok {
			continue
		}
		turned := s.LastActivity != nil && s.StartTime != nil && s.LastActivity.After(*s.StartTime)
		switch {
		case turned && s.WaitingFor != api.WaitingLimit:
			k.log.Info("the resumed run took a new turn", "session", of, "run", s.ID)
		case s.WaitingFor == api.WaitingLimit:
			k.log.Info("the resumed run hit the limit again", "session", of, "run", s.ID)
		case s.Status.Ended():
			k.log.Warn("the resumed run ended without a new turn in its store", "session", of, "run", s.ID, "status", s.Status)
		default:
			continue
		}
		delete(k.checking, s.ID)
	}
}

// dueResumes are the held sessions to resume now, at most one per
// provider (the oldest first): those a limit ended by themselves, whose
// on_limit (or the configuration's) is resume, that no run resumed yet,
// whose reset plus the margin has passed, of a provider the book does not
// hold and whose last resume is an interval old.
func dueResumes(view []api.Session, now time.Time, book *session.UsageLimits, p config.ResumePolicy, onLimit string, released map[string]time.Time) []api.Session {
	resumed := map[string]bool{}
	for i := range view {
		if view[i].ResumeOf != "" {
			resumed[view[i].ResumeOf] = true
		}
	}
	var held []api.Session
	for _, s := range view {
		want := s.OnLimit
		if want == "" {
			want = onLimit
		}
		if s.Origin != api.OriginLaunched || s.Adapter == api.ExecAdapter || s.NativeID == "" || want != api.OnLimitResume ||
			s.Waiting == nil || s.Waiting.Limit == nil || resumed[s.ID] {
			continue
		}
		// Ended by itself on the limit: a session killed by a signal was
		// stopped (by the user, or on purpose), and a running one is
		// still its agent's.
		if s.Status != api.StatusExited || s.StoppedBy != "" {
			continue
		}
		until := session.HoldUntil(s.Waiting.Limit, s.EndedAt, p.UnknownReset)
		if until.IsZero() || now.Before(until.Add(p.Margin)) {
			continue
		}
		held = append(held, s)
	}
	slices.SortStableFunc(held, func(a, b api.Session) int { return a.CreatedAt.Compare(b.CreatedAt) })
	var out []api.Session
	picked := map[string]bool{}
	for _, s := range held {
		provider := s.Waiting.Limit.Provider
		if picked[provider] {
			continue
		}
		if _, still := book.Held(provider); still {
			continue
		}
		if last, ok := released[provider]; ok && now.Sub(last) < p.Interval {
			continue
		}
		picked[provider] = true
		out = append(out, s)
	}
	return out
}

// heldCounts counts the sessions usage limits hold, by provider (metrics).
func (k *limitKeeper) heldCounts() map[string]int {
	out := map[string]int{}
	for _, p := range k.book.Report(time.Now()) {
		out[p.Provider] = len(p.Sessions)
	}
	return out
}

func (s *Server) limitsRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /v1/limits", s.handleLimits)
}

// handleLimits answers the book, brought up to date first.
func (s *Server) handleLimits(w http.ResponseWriter, r *http.Request) {
	now := time.Now()
	if _, err := s.limits.refresh(r.Context(), now); err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, s.limits.book.Report(now))
}

// startLimits arms the keeper, whose book the core's admission already
// asks, over the core.
func (s *Server) startLimits(k *limitKeeper) {
	k.list = func(ctx context.Context) ([]api.Session, error) {
		return s.core.LimitsView(ctx, limitsWindow)
	}
	k.resume = func(ctx context.Context, id, prompt string) (api.Session, error) {
		return s.core.ResumeAfterLimit(ctx, id, prompt, os.Environ())
	}
	k.publish = func(e api.Event) { s.ops.bus.Publish(e) }
	s.limits, s.ops.limits = k, k
}
