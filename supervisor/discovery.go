package supervisor

import (
	"context"
	"fmt"
	"sort"
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
	sessions []adapters.NativeSession
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
			out.sessions = append(out.sessions, d.last[r.name]...)
			continue
		}
		d.last[r.name] = r.sessions
		out.sessions = append(out.sessions, r.sessions...)
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

// merge enriches launched sessions with their native facts and adds the
// sessions only the adapters know.
func merge(launched []api.Session, disc discovered) []api.Session {
	byNative := map[string]adapters.NativeSession{}
	for _, ns := range disc.sessions {
		byNative[ns.Adapter+"\x00"+ns.NativeID] = ns
	}
	out := make([]api.Session, 0, len(launched)+len(disc.sessions))
	// Resumed runs share one native session: every run is enriched, and the
	// native session is not listed again as discovered.
	// Native ids are claimed alone, not per adapter: two adapters may read
	// one store (pi and pi-rust share theirs).
	claimed := map[string]bool{}
	for _, s := range launched {
		if s.NativeID != "" {
			key := s.Adapter + "\x00" + s.NativeID
			if ns, ok := byNative[key]; ok {
				enrich(&s, ns)
			}
			claimed[s.NativeID] = true
		}
		out = append(out, s)
	}
	for _, ns := range disc.sessions {
		if claimed[ns.NativeID] {
			continue
		}
		claimed[ns.NativeID] = true
		out = append(out, fromNative(ns))
	}
	for i := range out {
		if out[i].Origin == api.OriginLaunched || !disc.failed[out[i].Adapter] {
			continue
		}
		out[i].Status = api.StatusUnknown
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].CreatedAt.Before(out[j].CreatedAt) })
	return out
}

// enrich copies native facts into a launched session; status stays derived
// from the process, except for the agent's own busy/idle signal.
func enrich(s *api.Session, ns adapters.NativeSession) {
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
func fromNative(ns adapters.NativeSession) api.Session {
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
