package hosts

import (
	"context"
	"io"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/client"
	"github.com/agentctl/agentctl/cluster/k8shelper"
)

// What a kind of host must and may answer, all in one place. A kind of host
// opens (its Opener) to a client.Sessions: Launch, List, Get, Stop, Input,
// Transcript and Logs are required of every kind, and the fan-out, handles
// and views are written against them alone. Beyond them, a kind answers
// what it can; the CLI finds each capability by asserting one of these
// interfaces on Host.API (never a concrete type), and a host without one
// gets the CLI's one-line refusal naming the host. TestHostCapabilities
// lists them for every kind of Schemes(), so a capability gained or lost is
// a visible change.

// Service is a host that is an agentctl service (this machine's, another
// local home's, another machine's over ssh): it answers the whole API, and
// ServiceClient is its client, for what only a service has (locks, fuses,
// groups, worktrees, the service's own status, watching without starting
// it). Host.Client calls it; commands over the service's own state go
// through Host.Client.
type Service interface {
	ServiceClient() *client.Client
}

// EventSource is a host that streams events: `events`, `list -w`, `top`
// and the fan-out over several hosts (Events) read it.
type EventSource interface {
	Events(ctx context.Context, o client.EventOptions, started func(after uint64), fn func(api.Event) error) error
}

// Decider is a host that answers a session waiting for a permission or a
// question: `approve`, `deny`, `answer` and the live view call it.
type Decider interface {
	Decide(ctx context.Context, id string, d api.Decision) (api.Session, error)
}

// Explainer is a host that says how a session's status was derived:
// `explain` calls it.
type Explainer interface {
	Explain(ctx context.Context, id string) (api.Explanation, error)
}

// Remover is a host that keeps records of ended sessions and removes them:
// `rm` calls it.
type Remover interface {
	Remove(ctx context.Context, id string, force bool) (api.Session, error)
}

// Restarter is a host that runs a session again with what it was launched
// with: `restart` calls it.
type Restarter interface {
	Restart(ctx context.Context, id string, req api.RestartRequest) (api.Session, error)
}

// Renamer is a host that renames a session: `rename` calls it.
type Renamer interface {
	Rename(ctx context.Context, id, name string) (api.Session, error)
}

// Signaler is a host that sends a session any signal: `kill -s` calls it
// (a plain stop is Stop, which every host answers).
type Signaler interface {
	Signal(ctx context.Context, id string, req api.SignalRequest) (api.Session, error)
}

// FrameAttacher is a host that joins a session's terminal through the
// service's attach frames (the latest screen first, the window's size, the
// session's end): `attach` prefers it.
type FrameAttacher interface {
	Attach(ctx context.Context, id string, rows, cols uint16) (*client.Attachment, error)
}

// StreamAttacher is a host that joins a session's terminal as two byte
// streams (a cluster's attach to the pod's monitor): what is read from in
// is typed into the terminal and its output is written to out, until the
// session ends (its final state returned) or ctx ends. `attach` uses it
// when the host has no FrameAttacher.
type StreamAttacher interface {
	AttachStreams(ctx context.Context, id string, in io.Reader, out io.Writer) (api.Session, error)
}

// Remoter is a host that says whether it is another machine: `run` does
// not send this machine's directories and environment to one. A host
// without it is far unless it is the local one.
type Remoter interface {
	Remote() bool
}

// What each kind of host implements: this machine's service, another local
// home's and another machine's over ssh are all a *client.Client; a
// Kubernetes cluster is a *k8shelper.Sessions.
var (
	_ client.Sessions = (*client.Client)(nil)
	_ Service         = (*client.Client)(nil)
	_ EventSource     = (*client.Client)(nil)
	_ Decider         = (*client.Client)(nil)
	_ Explainer       = (*client.Client)(nil)
	_ Remover         = (*client.Client)(nil)
	_ Restarter       = (*client.Client)(nil)
	_ Renamer         = (*client.Client)(nil)
	_ Signaler        = (*client.Client)(nil)
	_ FrameAttacher   = (*client.Client)(nil)
	_ Remoter         = (*client.Client)(nil)

	_ client.Sessions = (*k8shelper.Sessions)(nil)
	_ EventSource     = (*k8shelper.Sessions)(nil)
	_ Explainer       = (*k8shelper.Sessions)(nil)
	_ StreamAttacher  = (*k8shelper.Sessions)(nil)

	_ client.Sessions = (*View)(nil)
	_ Decider         = (*View)(nil)
	_ EventSource     = (*View)(nil)
	_ Explainer       = (*View)(nil)
	_ Restarter       = (*View)(nil)
	_ FrameAttacher   = (*View)(nil)
	_ Remoter         = (*View)(nil)
)
