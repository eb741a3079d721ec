package supervisor

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/agentctl/agentctl/adapters"
	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/proc"
)

// discovery asks every adapter for its native sessions, concurrently, each
// within its own timeout. An adapter that fails or times out contributes a
// warning and vouches for nothing: its sessions become unknown, never
// stopped.
type discovery struct {
	adapters []adapters.Adapter
	timeout  time.Duration
	// observe, when set, hears how long each adapter took and whether it
	// failed (metrics).
	observe func(adapter string, took time.Duration, err error)

	// last holds each adapter's last successful answer, so that when it
	// fails the sessions it vouched for show as unknown rather than vanish.
	mu   sync.Mutex
	last map[string][]adapters.NativeSession
}

func newDiscovery(as []adapters.Adapter, timeout time.Duration) *discovery {
	return &discovery{adapters: as, timeout: timeout, last: map[string][]adapters.NativeSession{}}
}

type discovered struct {
	// sessions holds each adapter's answer, one slice per adapter: they are
	// read in place, never copied into one.
	sessions [][]adapters.NativeSession
	// failed names adapters whose discovery failed this time.
	failed   map[string]bool
	warnings []string
}

func (d *discovery) run(ctx context.Context) discovered {
	type result struct {
		name     string
		sessions []adapters.NativeSession
		err      error
	}
	results := make([]result, len(d.adapters))
	// One look at the process table serves every adapter.
	ctx = proc.WithSnapshot(ctx, proc.NewSnapshot())
	var wg sync.WaitGroup
	for i, a := range d.adapters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			actx, cancel := context.WithTimeout(ctx, d.timeout)
			defer cancel()
			began := time.Now()
			if d.observe != nil {
				defer func() { d.observe(results[i].name, time.Since(began), results[i].err) }()
			}
			done := make(chan result, 1)
			go func() {
				ss, err := a.Discover(actx)
				done <- result{a.Name(), ss, err}
			}()
			select {
			case r := <-done:
				results[i] = r
			case <-actx.Done():
				results[i] = result{name: a.Name(), err: fmt.Errorf("timed out after %s", d.timeout)}
			}
		}()
	}
	wg.Wait()
	out := discovered{failed: map[string]bool{}}
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, r := range results {
		if r.err != nil {
			out.failed[r.name] = true
			out.warnings = append(out.warnings, fmt.Sprintf("adapter %s: %v (its sessions are shown as unknown)", r.name, r.err))
			out.sessions = append(out.sessions, d.last[r.name])
			continue
		}
		d.last[r.name] = r.sessions
		out.sessions = append(out.sessions, r.sessions)
	}
	return out
}

func (d *discovery) adapter(name string) adapters.Adapter {
	for _, a := range d.adapters {
		if a.Name() == name {
			return a
		}
	}
	return nil
}

// nativeKey names one native session of one adapter.
type nativeKey struct{ adapter, id string }

// merge enriches launched sessions with their native facts and adds the
// sessions only the adapters know, keeping those keep accepts (all when
// keep is nil). Filtering here, rather than after, spares building every
// session of a large store for a list that shows a few. The order is not
// defined: callers that show a list sort what is left (sortByCreation).
func merge(launched []api.Session, disc discovered, keep func(*api.Session) bool) []api.Session {
	// Launched sessions by native session: few, so the lookup for each
	// discovered session is cheap.
	launchedBy := map[nativeKey][]int{}
	// Resumed runs share one native session: every run is enriched, and the
	// native session is not listed again as discovered.
	// Native ids are claimed alone, not per adapter: two adapters may read
	// one store (pi and pi-rust share theirs).
	n := 0
	for _, ss := range disc.sessions {
		n += len(ss)
	}
	claimed := make(map[string]bool, len(launched)+n)
	for i, s := range launched {
		if s.NativeID != "" {
			k := nativeKey{s.Adapter, s.NativeID}
			launchedBy[k] = append(launchedBy[k], i)
		}
	}
	enriched := make([]api.Session, len(launched))
	copy(enriched, launched)
	var out []api.Session
	for _, ss := range disc.sessions {
		for i := range ss {
			ns := &ss[i]
			k := nativeKey{ns.Adapter, ns.NativeID}
			if idx, ok := launchedBy[k]; ok {
				for _, j := range idx {
					enrich(&enriched[j], ns)
				}
				delete(launchedBy, k) // a duplicate in the store enriches once
			}
		}
	}
	for _, s := range enriched {
		if s.NativeID != "" {
			claimed[s.NativeID] = true
		}
		if keep == nil || keep(&s) {
			out = append(out, s)
		}
	}
	for _, ss := range disc.sessions {
		for i := range ss {
			ns := &ss[i]
			if claimed[ns.NativeID] {
				continue
			}
			claimed[ns.NativeID] = true
			s := fromNative(ns)
			if disc.failed[s.Adapter] {
				// Its adapter could not vouch for it this time.
				s.Status = api.StatusUnknown
			}
			if keep == nil || keep(&s) {
				out = append(out, s)
			}
		}
	}
	return out
}

// sortByCreation orders sessions oldest first (ties keep their order). It
// sorts indices rather than the sessions themselves: a session is a large
// value, and moving thousands of them dominated list's time.
func sortByCreation(ss []api.Session) {
	idx := make([]int, len(ss))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return ss[a].CreatedAt.Compare(ss[b].CreatedAt) })
	sorted := make([]api.Session, len(ss))
	for i, j := range idx {
		sorted[i] = ss[j]
	}
	copy(ss, sorted)
}

// enrich copies native facts into a launched session; status stays derived
// from the process, except for the agent's own busy/idle signal.
func enrich(s *api.Session, ns *adapters.NativeSession) {
	if ns.Model != "" {
		s.Model = ns.Model
	}
	s.TokensIn, s.TokensOut, s.CostUSD = ns.TokensIn, ns.TokensOut, ns.CostUSD
	if !ns.UpdatedAt.IsZero() {
		t := ns.UpdatedAt
		s.LastActivity = &t
	}
	if s.Prompt == "" {
		s.Prompt = truncate(ns.FirstPrompt, 200)
	}
	if s.Status == api.StatusRunning {
		switch ns.State {
		case adapters.NativeBusy, adapters.NativeIdle:
			s.Activity = string(ns.State)
		}
	}
	s.Warnings = append(s.Warnings, ns.Warnings...)
}

// fromNative is the session object for a session only an adapter knows.
// Its id is the native id.
func fromNative(ns *adapters.NativeSession) api.Session {
	s := api.Session{
		ID:        ns.NativeID,
		Adapter:   ns.Adapter,
		Origin:    api.OriginDiscovered,
		NativeID:  ns.NativeID,
		Cwd:       ns.Cwd,
		CreatedAt: ns.CreatedAt,
	}
	enrich(&s, ns)
	switch {
	case ns.Process != nil && proc.Alive(proc.Identity{PID: ns.Process.PID, Start: ns.Process.Start}):
		s.Status = api.StatusRunning
		s.PID = ns.Process.PID
	case ns.State == adapters.NativeBusy || ns.State == adapters.NativeIdle || ns.State == adapters.NativeRunning:
		s.Status = api.StatusRunning
	case ns.State == adapters.NativeDone || ns.State == adapters.NativeFailed || ns.State == adapters.NativeAborted:
		s.Status = api.StatusEnded
	default:
		s.Status = api.StatusUnknown
	}
	if s.Status == api.StatusRunning && (ns.State == adapters.NativeBusy || ns.State == adapters.NativeIdle) {
		s.Activity = string(ns.State)
	}
	return s
}
