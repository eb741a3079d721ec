package session

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"sync"
	"time"

	"github.com/agentctl/agentctl/adapters"
	"github.com/agentctl/agentctl/proc"
)

// discovery asks every adapter for its native sessions, concurrently, each
// within its own timeout. An adapter that fails or times out contributes a
// warning and vouches for nothing: its sessions become unknown, never
// stopped.
//
// A discovery that outlasts a request's timeout is not thrown away: it goes
// on (up to backgroundLimit), filling the adapter's caches, and a request
// that arrives meanwhile joins it instead of starting another. So a cold
// store costs one read, whoever asks, and the answer after it is complete.
type discovery struct {
	adapters []adapters.Adapter
	timeout  time.Duration
	// first is how long a request waits for an adapter that has not
	// answered yet (firstWait).
	first time.Duration
	// observe, when set, hears how long each adapter took and whether it
	// failed (metrics).
	observe func(adapter string, took time.Duration, err error)

	mu sync.Mutex
	// last holds each adapter's last successful answer, so that when it
	// fails the sessions it vouched for show as unknown rather than vanish.
	last map[string][]adapters.NativeSession
	// inflight is each adapter's discovery under way, which requests join.
	inflight map[string]*flight
	// round is the progress of the discoveries begun since a request
	// found none under way, ended ones too: what reading counts.
	round []*adapters.Progress
	// firstBegan is when each adapter's first discovery began, and
	// firstEnded whether it has ended (answered or failed).
	firstBegan map[string]time.Time
	firstEnded map[string]bool
}

// flight is one adapter's discovery under way; done closes when it ends.
type flight struct {
	done     chan struct{}
	sessions []adapters.NativeSession
	err      error
	// progress counts what it found and read so far.
	progress adapters.Progress
}

// backgroundLimit bounds a discovery that goes on after the request that
// started it timed out.
const backgroundLimit = 2 * time.Minute

// firstWait is how long a request waits for an adapter that has never
// answered since the service started: its first answer is the whole store,
// and a first list without it would show none of its sessions. Once an
// adapter has answered, a request waits its timeout and falls back on the
// last answer.
const firstWait = 30 * time.Second

// wait is how long a request waits for the adapter name: its timeout, or,
// while its first discovery since the service started is under way, until
// firstWait after that discovery began (a hung store delays requests that
// long once, not each request).
func (d *discovery) wait(name string) time.Duration {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.firstEnded[name] {
		return d.timeout
	}
	began, ok := d.firstBegan[name]
	if !ok {
		began = time.Now()
	}
	return max(d.timeout, time.Until(began.Add(d.first)))
}

func newDiscovery(as []adapters.Adapter, timeout time.Duration) *discovery {
	return &discovery{adapters: as, timeout: timeout, first: firstWait, last: map[string][]adapters.NativeSession{}, inflight: map[string]*flight{},
		firstBegan: map[string]time.Time{}, firstEnded: map[string]bool{}}
}

type discovered struct {
	// sessions holds each adapter's answer, one slice per adapter: they are
	// read in place, never copied into one.
	sessions [][]adapters.NativeSession
	// failed names adapters whose discovery failed this time.
	failed   map[string]bool
	warnings []string
	// repeats, when not nil, are the sessions whose id a session before
	// them has (see repeats); nil: merge finds them.
	repeats map[position]bool
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
	d.mu.Lock()
	if len(d.inflight) == 0 {
		d.round = nil // a new round: what reading counts from now
	}
	d.mu.Unlock()
	// One look at the process table serves every adapter this request
	// starts a discovery of.
	ctx = proc.WithSnapshot(ctx, proc.NewSnapshot())
	var wg sync.WaitGroup
	for i, a := range as {
		wg.Add(1)
		go func() {
			defer wg.Done()
			wait := d.wait(a.Name())
			timer := time.NewTimer(wait)
			defer timer.Stop()
			f := d.join(ctx, a)
			select {
			case <-f.done:
				results[i] = result{a.Name(), f.sessions, f.err}
			case <-timer.C:
				results[i] = result{name: a.Name(), err: fmt.Errorf("timed out after %s", shortDuration(wait))}
			case <-ctx.Done():
				results[i] = result{name: a.Name(), err: ctx.Err()}
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
		out.sessions = append(out.sessions, r.sessions)
	}
	return out
}

// shortDuration is d in whole seconds, or milliseconds below a second.
func shortDuration(d time.Duration) time.Duration {
	if d < time.Second {
		return d.Round(time.Millisecond)
	}
	return d.Round(time.Second)
}

// join returns a's discovery under way, or starts one. A discovery runs
// apart from the request that started it: when that request gives up, the
// discovery goes on, up to backgroundLimit.
func (d *discovery) join(ctx context.Context, a adapters.Adapter) *flight {
	name := a.Name()
	d.mu.Lock()
	defer d.mu.Unlock()
	if f, ok := d.inflight[name]; ok {
		return f
	}
	f := &flight{done: make(chan struct{})}
	d.inflight[name] = f
	d.round = append(d.round, &f.progress)
	if _, ok := d.firstBegan[name]; !ok {
		d.firstBegan[name] = time.Now()
	}
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), backgroundLimit)
	fctx = adapters.WithProgress(fctx, &f.progress)
	go func() {
		defer cancel()
		began := time.Now()
		f.sessions, f.err = a.Discover(fctx)
		if d.observe != nil {
			d.observe(name, time.Since(began), f.err)
		}
		d.mu.Lock()
		if f.err == nil {
			d.last[name] = f.sessions
		}
		d.firstEnded[name] = true
		delete(d.inflight, name)
		settled := len(d.inflight) == 0
		d.mu.Unlock()
		close(f.done)
		if settled {
			// The round is over: the work the adapters put off for it
			// (adapters.Settler) may start.
			for _, a := range d.adapters {
				if s, ok := a.(adapters.Settler); ok {
					s.Settled()
				}
			}
		}
	}()
	return f
}

// reading says how far the discoveries under way got, with those of their
// round that ended: the sessions read of those found (ok false: none under
// way).
func (d *discovery) reading() (read, found int64, ok bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.inflight) == 0 {
		return 0, 0, false
	}
	for _, p := range d.round {
		r, n := p.Counts()
		read, found, ok = read+r, found+n, true
	}
	return read, found, ok
}

// owners returns the adapters whose last answer holds a native id that
// starts with prefix (any case), and every adapter's last answer, read in
// place. A lookup of one native id asks those adapters alone: ids do not
// move between stores.
func (d *discovery) owners(prefix string) ([]adapters.Adapter, map[string][]adapters.NativeSession) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []adapters.Adapter
	for _, a := range d.adapters {
		for _, ns := range d.last[a.Name()] {
			if hasPrefixFold(ns.NativeID, prefix) {
				out = append(out, a)
				break
			}
		}
	}
	return out, maps.Clone(d.last)
}

// knownIDs appends to ids the native ids of every adapter's last answer
// that claimed does not hold.
func (d *discovery) knownIDs(ids []string, claimed map[string]bool) []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, ss := range d.last {
		for i := range ss {
			if !claimed[ss[i].NativeID] {
				ids = append(ids, ss[i].NativeID)
			}
		}
	}
	return ids
}

// holder returns the one adapter whose last answer holds id as a whole
// native id (any case), with the id as it has it, when that adapter can
// read one session alone (adapters.OneReader) and accepted (when not nil)
// names it; nil when none does, or when several adapters hold it (two
// reading one store: the merge of their answers decides).
func (d *discovery) holder(id string, accepted map[string]bool) (adapters.Adapter, string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var found adapters.Adapter
	var native string
	for _, a := range d.adapters {
		for _, ns := range d.last[a.Name()] {
			if len(ns.NativeID) != len(id) || !strings.EqualFold(ns.NativeID, id) {
				continue
			}
			if found != nil {
				return nil, ""
			}
			found, native = a, ns.NativeID
			break
		}
	}
	if _, ok := found.(adapters.OneReader); !ok || (accepted != nil && !accepted[found.Name()]) {
		return nil, ""
	}
	return found, native
}

// one reads the session id alone from a, within the adapter's timeout,
// when a can (adapters.OneReader); an error otherwise, or when the read
// fails. Only the discoveries vouch for a store as a whole: a failed read
// of one session is not remembered as the adapter's failure.
func (d *discovery) one(ctx context.Context, a adapters.Adapter, id string) (adapters.NativeSession, error) {
	r, ok := a.(adapters.OneReader)
	if !ok || id == "" {
		return adapters.NativeSession{}, fmt.Errorf("adapter %s does not read one session alone", a.Name())
	}
	ctx, cancel := context.WithTimeout(proc.WithSnapshot(ctx, proc.NewSnapshot()), d.timeout)
	defer cancel()
	ns, err := r.DiscoverOne(ctx, id)
	if err != nil {
		return adapters.NativeSession{}, fmt.Errorf("adapter %s, session %s: %w", a.Name(), id, err)
	}
	return ns, nil
}

// hasPrefixFold is strings.HasPrefix, ignoring case.
func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}
