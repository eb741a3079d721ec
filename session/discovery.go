package session

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/agentctl/agentctl/adapters"
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

// run asks every adapter.
func (d *discovery) run(ctx context.Context) discovered { return d.runOf(ctx, d.adapters) }

// runOf asks the given adapters, each within its own timeout.
func (d *discovery) runOf(ctx context.Context, as []adapters.Adapter) discovered {
	type result struct {
		name     string
		sessions []adapters.NativeSession
		err      error
	}
	results := make([]result, len(as))
	// One look at the process table serves every adapter.
	ctx = proc.WithSnapshot(ctx, proc.NewSnapshot())
	var wg sync.WaitGroup
	for i, a := range as {
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
