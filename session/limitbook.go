package session

import (
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/agentctl/agentctl/api"
)

// UsageLimits is the one book of the model providers' usage limits: which
// windows are used up until when, and which sessions a limit holds, from
// the freshest first-hand evidence (the sessions' Waiting.Limit, which the
// agents' own records gave). Observe rebuilds it from a whole view; Held
// is what admission and the resumer ask.
type UsageLimits struct {
	// unknownFor is how long a limit whose reset time no evidence gives
	// holds its provider, from when it was recorded.
	unknownFor time.Duration

	mu        sync.Mutex
	providers map[string]providerLimits
}

type providerLimits struct {
	report api.ProviderLimits
	until  time.Time // the hold's end; zero when not held
}

// NewUsageLimits returns an empty book; a limit without a reset time holds
// its provider for unknownFor after it was recorded.
func NewUsageLimits(unknownFor time.Duration) *UsageLimits {
	return &UsageLimits{unknownFor: unknownFor, providers: map[string]providerLimits{}}
}

// HoldUntil is when a limit stops holding: its reset, or, when no evidence
// gives one, unknownFor after it was recorded (at: its record, else the
// session's end). Zero when neither is known.
func HoldUntil(l *api.LimitHold, at *time.Time, unknownFor time.Duration) time.Time {
	switch {
	case l.ResetsAt != nil:
		return *l.ResetsAt
	case l.Since != nil:
		return l.Since.Add(unknownFor)
	case at != nil:
		return at.Add(unknownFor)
	}
	return time.Time{}
}

// Observe rebuilds the book from a whole view of the sessions at now. A
// session a later run resumed no longer counts: the run carries on.
func (b *UsageLimits) Observe(view []api.Session, now time.Time) {
	resumed := map[string]bool{}
	for i := range view {
		if view[i].ResumeOf != "" {
			resumed[view[i].ResumeOf] = true
		}
	}
	held := make([]*api.Session, 0, 4)
	for i := range view {
		s := &view[i]
		if s.Waiting != nil && s.Waiting.Limit != nil && !resumed[s.ID] {
			held = append(held, s)
		}
	}
	slices.SortStableFunc(held, func(a, b *api.Session) int { return a.CreatedAt.Compare(b.CreatedAt) })
	next := map[string]providerLimits{}
	latest := map[string]time.Time{}
	for _, s := range held {
		l := s.Waiting.Limit
		p := next[l.Provider]
		p.report.Provider = l.Provider
		if l.Account != "" {
			p.report.Account = l.Account
		}
		p.report.Sessions = append(p.report.Sessions, s.ID)
		if until := HoldUntil(l, s.EndedAt, b.unknownFor); until.After(now) && until.After(p.until) {
			p.until = until
		}
		at := s.CreatedAt
		if l.Since != nil {
			at = *l.Since
		}
		if !at.Before(latest[l.Provider]) {
			latest[l.Provider] = at
			p.report.Message = l.Message
		}
		used := usedUp
		p.report.Windows = freshest(p.report.Windows, api.LimitWindow{Name: l.Window, UsedPercent: &used, ResetsAt: l.ResetsAt, At: &at, Session: s.ID})
		next[l.Provider] = p
	}
	// The windows the agents' records give, held or not (Codex's
	// snapshot of the account's windows).
	for i := range view {
		s := &view[i]
		for _, w := range s.LimitWindows {
			if w.Provider == "" {
				continue
			}
			provider := w.Provider
			p := next[provider]
			p.report.Provider = provider
			w.Provider, w.Session = "", s.ID
			p.report.Windows = freshest(p.report.Windows, w)
			next[provider] = p
		}
	}
	for k, p := range next {
		if !p.until.IsZero() {
			t := p.until
			p.report.Held, p.report.HeldUntil = true, &t
		}
		next[k] = p
	}
	b.mu.Lock()
	b.providers = next
	b.mu.Unlock()
}

// usedUp is a used-up window's share.
const usedUp = 100.0

// freshest keeps in ws the freshest evidence of w's window (by name): a
// window without a time of its own is older than any that has one.
func freshest(ws []api.LimitWindow, w api.LimitWindow) []api.LimitWindow {
	i := slices.IndexFunc(ws, func(o api.LimitWindow) bool { return o.Name == w.Name })
	switch {
	case i < 0:
		return append(ws, w)
	case w.At != nil && (ws[i].At == nil || !w.At.Before(*ws[i].At)):
		ws[i] = w
	}
	return ws
}

// Held says whether a usage limit of provider holds it now, and until when
// (zero when the end is not known).
func (b *UsageLimits) Held(provider string) (until time.Time, held bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	p, ok := b.providers[provider]
	if !ok || p.until.IsZero() || !p.until.After(time.Now()) {
		return time.Time{}, false
	}
	return p.until, true
}

// Report is the book as GET /v1/limits answers it, by provider; Held is
// judged at now.
func (b *UsageLimits) Report(now time.Time) []api.ProviderLimits {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]api.ProviderLimits, 0, len(b.providers))
	for _, k := range slices.Sorted(maps.Keys(b.providers)) {
		p := b.providers[k]
		r := p.report
		r.Sessions = slices.Clone(r.Sessions)
		r.Windows = slices.Clone(r.Windows)
		if !p.until.After(now) {
			r.Held, r.HeldUntil = false, nil
		}
		out = append(out, r)
	}
	return out
}
