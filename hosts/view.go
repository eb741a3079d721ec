package hosts

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/client"
)

// View is several hosts as one source of sessions, for views written
// against client.Sessions (the live view): its sessions' ids are HOST/ID,
// and whatever is asked of one goes to its host.
type View struct {
	Hosts []Host
	// Cache keeps each host's sessions seen running, shown as unknown
	// while it does not answer; Timeout bounds each host's answer.
	Cache   Cache
	Timeout time.Duration
}

var _ client.Sessions = (*View)(nil)

// List asks every host at once and merges the answers (see Merge), ids
// made HOST/ID. It fails only when no host answers.
func (v *View) List(ctx context.Context, o api.ListOptions) (api.SessionList, error) {
	answers := ListAll(ctx, v.Hosts, o, v.Timeout)
	l := Merge(answers, v.Cache, o, time.Now())
	if failed := Failed(answers); len(failed) == len(v.Hosts) {
		return l, fmt.Errorf("no host answered: %s", strings.Join(l.Warnings, "; "))
	}
	for i := range l.Sessions {
		l.Sessions[i].ID = Handle(l.Sessions[i].Host, l.Sessions[i].ID)
	}
	return l, nil
}

// route finds the host of a HOST/ID handle.
func (v *View) route(handle string) (Host, string, error) {
	name, id, ok := strings.Cut(handle, "/")
	if ok {
		for _, h := range v.Hosts {
			if h.Name == name {
				return h, id, nil
			}
		}
	}
	return Host{}, "", fmt.Errorf("%q names no session of these hosts (%s): give HOST/ID", handle, strings.Join(Names(v.Hosts), ", "))
}

// marked makes a session of host h one of the view's (its id HOST/ID),
// and an error h's.
func marked(h Host) func(api.Session, error) (api.Session, error) {
	return func(s api.Session, err error) (api.Session, error) {
		if err != nil {
			return s, fmt.Errorf("host %s: %w", h.Name, err)
		}
		s = qualify(h.Name, s)
		s.ID = Handle(h.Name, s.ID)
		return s, nil
	}
}

// Launch has no host to choose: a view over several hosts starts nothing
// but on the host named (LaunchOn).
func (v *View) Launch(context.Context, api.RunRequest) (api.Session, error) {
	return api.Session{}, errors.New("start a session on one host (--host NAME)")
}

// LaunchOn starts a session on the view's host named host; its id is then
// a handle (HOST/ID).
func (v *View) LaunchOn(ctx context.Context, host string, req api.RunRequest) (api.Session, error) {
	for _, h := range v.Hosts {
		if h.Name == host {
			return marked(h)(h.API.Launch(ctx, req))
		}
	}
	return api.Session{}, fmt.Errorf("%q is none of these hosts (%s): start a session on one of them", host, strings.Join(Names(v.Hosts), ", "))
}

// HostNames names the view's hosts, in order.
func (v *View) HostNames() []string { return Names(v.Hosts) }

func (v *View) Get(ctx context.Context, id string) (api.Session, error) {
	h, id, err := v.route(id)
	if err != nil {
		return api.Session{}, err
	}
	return marked(h)(h.API.Get(ctx, id))
}

func (v *View) Stop(ctx context.Context, id string, req api.StopRequest) (api.Session, error) {
	h, id, err := v.route(id)
	if err != nil {
		return api.Session{}, err
	}
	return marked(h)(h.API.Stop(ctx, id, req))
}

func (v *View) Input(ctx context.Context, id string, data []byte) (api.Session, error) {
	h, id, err := v.route(id)
	if err != nil {
		return api.Session{}, err
	}
	return marked(h)(h.API.Input(ctx, id, data))
}

func (v *View) Decide(ctx context.Context, id string, d api.Decision) (api.Session, error) {
	h, id, err := v.route(id)
	if err != nil {
		return api.Session{}, err
	}
	dec, ok := h.API.(Decider)
	if !ok {
		return api.Session{}, fmt.Errorf("host %s does not take decisions", h.Name)
	}
	return marked(h)(dec.Decide(ctx, id, d))
}

func (v *View) Transcript(ctx context.Context, id string, n int) (api.Transcript, error) {
	h, id, err := v.route(id)
	if err != nil {
		return api.Transcript{}, err
	}
	t, err := h.API.Transcript(ctx, id, n)
	if err != nil {
		return t, fmt.Errorf("host %s: %w", h.Name, err)
	}
	t.Session, _ = marked(h)(t.Session, nil)
	return t, nil
}

func (v *View) Logs(ctx context.Context, id string, o api.LogOptions, emit func(api.LogChunk) error) error {
	h, id, err := v.route(id)
	if err != nil {
		return err
	}
	return h.API.Logs(ctx, id, o, func(ch api.LogChunk) error {
		if ch.Session != nil {
			s, _ := marked(h)(*ch.Session, nil)
			ch.Session = &s
		}
		return emit(ch)
	})
}

// Events merges the hosts' streams (see Events), each event's session
// id made HOST/ID. The merged stream numbers its events itself, in the
// order it hands them on: each host's own numbers mean nothing beside
// another's. started is called once every host's stream has opened or
// failed once; a host whose stream breaks is reopened by itself, so this
// returns only when ctx ends or fn fails.
func (v *View) Events(ctx context.Context, o client.EventOptions, started func(after uint64), fn func(api.Event) error) error {
	var mu sync.Mutex
	var seq uint64
	pending := map[string]bool{}
	for _, h := range v.Hosts {
		pending[h.Name] = true
	}
	announce := func(h Host) {
		mu.Lock()
		defer mu.Unlock()
		if len(pending) == 0 {
			return
		}
		delete(pending, h.Name)
		if len(pending) == 0 && started != nil {
			started(seq)
		}
	}
	return Events(ctx, v.Hosts, o, func(e api.Event) error {
		mu.Lock()
		seq++
		e.Seq = seq
		mu.Unlock()
		if e.SessionID != "" {
			e.SessionID = Handle(e.Host, e.SessionID)
		}
		if e.Session != nil {
			e.Session.ID = Handle(e.Host, e.Session.ID)
		}
		return fn(e)
	}, func(h Host, _ error) { announce(h) })
}

func (v *View) Explain(ctx context.Context, id string) (api.Explanation, error) {
	h, id, err := v.route(id)
	if err != nil {
		return api.Explanation{}, err
	}
	ex, ok := h.API.(Explainer)
	if !ok {
		return api.Explanation{}, fmt.Errorf("host %s does not explain its sessions", h.Name)
	}
	e, err := ex.Explain(ctx, id)
	if err != nil {
		return e, fmt.Errorf("host %s: %w", h.Name, err)
	}
	e.Session, _ = marked(h)(e.Session, nil)
	return e, nil
}

func (v *View) Restart(ctx context.Context, id string, req api.RestartRequest) (api.Session, error) {
	h, id, err := v.route(id)
	if err != nil {
		return api.Session{}, err
	}
	r, ok := h.API.(Restarter)
	if !ok {
		return api.Session{}, fmt.Errorf("host %s does not restart sessions", h.Name)
	}
	return marked(h)(r.Restart(ctx, id, req))
}

// Attach joins a session's terminal on its host, through the service's
// attach frames.
func (v *View) Attach(ctx context.Context, id string, rows, cols uint16) (*client.Attachment, error) {
	h, id, err := v.route(id)
	if err != nil {
		return nil, err
	}
	a, ok := h.API.(FrameAttacher)
	if !ok {
		return nil, fmt.Errorf("host %s has no terminal to join here (agentctl attach %s/%s)", h.Name, h.Name, id)
	}
	at, err := a.Attach(ctx, id, rows, cols)
	if err != nil {
		return nil, fmt.Errorf("host %s: %w", h.Name, err)
	}
	return at, nil
}

// Remote reports whether any of the hosts is another machine (a host that
// does not say is taken as one).
func (v *View) Remote() bool {
	for _, h := range v.Hosts {
		if r, ok := h.API.(Remoter); !ok || r.Remote() {
			return true
		}
	}
	return false
}
