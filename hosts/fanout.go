package hosts

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/client"
	"github.com/agentctl/agentctl/internal/atomicfile"
	"github.com/agentctl/agentctl/internal/text"
)

// Answer is one host's answer to a list.
type Answer struct {
	Host Host
	List api.SessionList
	Err  error
}

// ListAll asks every host for its sessions at once, each within timeout
// (0: no limit but ctx's): a slow host costs its own time, not the
// others'. Answers come in the hosts' order.
func ListAll(ctx context.Context, hs []Host, o api.ListOptions, timeout time.Duration) []Answer {
	out := make([]Answer, len(hs))
	var wg sync.WaitGroup
	for i, h := range hs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			hctx, cancel := ctx, context.CancelFunc(func() {})
			if timeout > 0 {
				hctx, cancel = context.WithTimeout(ctx, timeout)
			}
			defer cancel()
			l, err := h.API.List(hctx, o)
			if err != nil && hctx.Err() != nil && ctx.Err() == nil {
				err = fmt.Errorf("no answer within %s", timeout)
			}
			out[i] = Answer{Host: h, List: l, Err: err}
		}()
	}
	wg.Wait()
	return out
}

// Merge makes one list of the hosts' answers: each session names its host
// and its handle is HOST/handle; each host's warnings are prefixed with
// its name. A host that did not answer is a warning naming it, and the
// sessions it had running when last seen (from cache) are listed as
// unknown: nobody can vouch for them now, and nothing says they stopped.
// Answers from hosts that did answer refresh the cache.
func Merge(answers []Answer, cache Cache, o api.ListOptions, now time.Time) api.SessionList {
	out := api.SessionList{Sessions: []api.Session{}}
	for _, a := range answers {
		name := a.Host.Name
		if a.Err == nil {
			for _, s := range a.List.Sessions {
				out.Sessions = append(out.Sessions, qualify(name, s))
			}
			for _, w := range a.List.Warnings {
				out.Warnings = append(out.Warnings, name+": "+w)
			}
			if unfiltered(o) {
				cache.Save(name, now, a.List.Sessions)
			}
			continue
		}
		seen, at, _ := cache.Load(name)
		var shown int
		for _, s := range seen {
			if !matches(o, s) {
				continue
			}
			s.Status = api.StatusUnknown
			s.Activity, s.ActivitySource, s.ActivitySince, s.WaitingFor, s.Waiting = "", "", nil, "", nil
			s.Warnings = append(s.Warnings, fmt.Sprintf("host %s did not answer; last seen running %s", name, at.Local().Format(time.RFC3339)))
			out.Sessions = append(out.Sessions, qualify(name, s))
			shown++
		}
		w := fmt.Sprintf("host %s did not answer: %v", name, a.Err)
		if shown > 0 {
			w += fmt.Sprintf("; its %d sessions running or unknown when last seen (%s ago) are shown as unknown", shown, text.Ago(now, at))
		}
		out.Warnings = append(out.Warnings, w)
	}
	return out
}

// Failed names the hosts whose answer was an error.
func Failed(answers []Answer) []string {
	var out []string
	for _, a := range answers {
		if a.Err != nil {
			out = append(out, a.Host.Name)
		}
	}
	return out
}

// qualify marks a session as host name's: its host, and a handle that
// names the host.
func qualify(name string, s api.Session) api.Session {
	s.Host = name
	h := s.Handle
	if h == "" {
		h = s.ID
	}
	s.Handle = Handle(name, h)
	return s
}

// unfiltered reports whether a list answers for every running session of
// a host, so it may stand as the host's last-seen state.
func unfiltered(o api.ListOptions) bool {
	return o.Status == "" && o.Adapter == "" && o.Group == "" && len(o.Labels) == 0 && !o.Waiting
}

// matches applies a list's filters to a session seen before, which is
// shown as unknown.
func matches(o api.ListOptions, s api.Session) bool {
	switch {
	case o.Status != "" && o.Status != string(api.StatusUnknown),
		o.Waiting,
		o.Adapter != "" && s.Adapter != o.Adapter,
		o.Group != "" && s.Group != o.Group:
		return false
	}
	for _, l := range o.Labels {
		k, v, _ := strings.Cut(l, "=")
		if got, ok := s.Labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// Cache keeps, per host, the sessions it had running when it last
// answered, in a folder of the local home (hosts/NAME.json): what a view
// shows, as unknown, for a host that does not answer. The zero Cache
// keeps nothing.
type Cache struct{ Dir string }

type cached struct {
	SeenAt   time.Time     `json:"seen_at"`
	Sessions []api.Session `json:"sessions"`
}

func (c Cache) path(name string) string {
	return filepath.Join(c.Dir, strings.NewReplacer("/", "_", ":", "_", "\\", "_").Replace(name)+".json")
}

// Save records the sessions of a host's answer that may be live (running
// or unknown).
func (c Cache) Save(name string, at time.Time, sessions []api.Session) error {
	if c.Dir == "" {
		return nil
	}
	running := make([]api.Session, 0, len(sessions))
	for _, s := range sessions {
		// Unknown ones too: they may be live, and are never left out.
		if !s.Status.Ended() {
			running = append(running, s)
		}
	}
	if err := os.MkdirAll(c.Dir, 0o700); err != nil {
		return fmt.Errorf("keep the last-seen sessions of %s: %w", name, err)
	}
	b, err := json.Marshal(cached{SeenAt: at, Sessions: running})
	if err != nil {
		return fmt.Errorf("keep the last-seen sessions of %s: %w", name, err)
	}
	// Unsynced: a cache written on every list; losing it to a crash costs
	// only the hint, and fsyncs here would be most of a list's time.
	return atomicfile.WriteUnsynced(c.path(name), b, 0o600)
}

// Load returns the sessions a host had running when last seen, and when.
func (c Cache) Load(name string) ([]api.Session, time.Time, error) {
	if c.Dir == "" {
		return nil, time.Time{}, nil
	}
	b, err := os.ReadFile(c.path(name))
	if errors.Is(err, os.ErrNotExist) {
		return nil, time.Time{}, nil
	}
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("read the last-seen sessions of %s: %w", name, err)
	}
	var v cached
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, time.Time{}, fmt.Errorf("read the last-seen sessions of %s: %w", name, err)
	}
	return v.Sessions, v.SeenAt, nil
}

// Events merges the hosts' event streams until ctx ends: each event names
// its host and its session's handle is HOST/ID. fn is called from one
// goroutine at a time. link hears of each host's stream: nil when it
// opens, the error when it cannot open or breaks off; it is then reopened
// (from the last event seen) after a pause. Events returns when ctx ends
// or fn fails.
func Events(ctx context.Context, hs []Host, o client.EventOptions, fn func(api.Event) error, link func(Host, error)) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, h := range hs {
		src, ok := h.API.(EventSource)
		if !ok {
			link(h, fmt.Errorf("host %s has no event stream", h.Name))
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			opts := o
			seen := false // the stream opened once: Since is where it is
			backoff := 500 * time.Millisecond
			for ctx.Err() == nil {
				err := src.Events(ctx, opts, func(after uint64) {
					backoff = 500 * time.Millisecond
					if opts.Since == "" || !seen {
						// Reopened, it carries on from here: none missed.
						opts.Since, seen = fmt.Sprint(after), true
					}
					link(h, nil)
				}, func(e api.Event) error {
					opts.Since = fmt.Sprint(e.Seq)
					e.Host = h.Name
					if e.Session != nil {
						s := qualify(h.Name, *e.Session)
						e.Session = &s
					}
					mu.Lock()
					defer mu.Unlock()
					if err := fn(e); err != nil {
						cancel(err)
						return err
					}
					return nil
				})
				if ctx.Err() != nil {
					return
				}
				if err == nil {
					err = errors.New("the event stream ended (the service stopped?)")
				}
				link(h, err)
				select {
				case <-ctx.Done():
					return
				case <-time.After(backoff):
				}
				backoff = min(2*backoff, 10*time.Second)
			}
		}()
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return ctx.Err()
}

// Names returns the hosts' names, in order.
func Names(hs []Host) []string {
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = h.Name
	}
	return slices.Clip(out)
}
