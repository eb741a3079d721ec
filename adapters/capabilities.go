package adapters

import (
	"context"
	"syscall"
	"time"
)

// The optional capabilities of an adapter, all in one place. Every adapter
// implements Adapter; beyond it, an adapter implements what its agent
// allows, and the session core finds each capability by asserting one of
// these interfaces (never a concrete adapter type). An adapter says which
// it implements with `var _ adapters.X = (*Adapter)(nil)` beside its type,
// and TestCapabilities (adapters/registry) lists them for every adapter of
// the registry, so a capability gained or lost is a visible change.

// Launcher is an adapter whose agent agentctl can start: it builds the argv
// and environment to run the agent headless (or in its own interactive
// interface) and to resume one of its sessions. The session core calls it
// for `launch`, `resume` and `restart`, resolves Binary on the launch's
// PATH, and signals a stop with StopSignal. The names of the launchers are
// api.Agents().
type Launcher interface {
	Launch(req LaunchRequest) (LaunchSpec, error)
	// Resume continues req.NativeID with req.Prompt.
	Resume(req LaunchRequest) (LaunchSpec, error)
	// StopSignal is the agent's own graceful stop signal.
	StopSignal() syscall.Signal
	// Binary is the executable the adapter runs, and InstallHint says how to
	// get it when it is missing.
	Binary() string
	InstallHint() string
}

// Settler is an adapter that puts work off while a discovery is under way
// (Env.TotalsLater: the totals of large transcripts): the session core
// calls Settled when every adapter's discovery of a round has ended, and
// the work put off starts then, rather than competing with the other
// adapters' reads for the first answer. Settled must not block.
type Settler interface {
	Settled()
}

// NativeIDFinder learns the native id of a session it could not pre-assign,
// from the agent's own store or output, for the agent a launch started. The
// session core calls it after a launch whose LaunchSpec carried no NativeID.
type NativeIDFinder interface {
	FindNativeID(ctx context.Context, s Started) (string, error)
}

// Started is what a launch knows of the agent it started: its process, the
// folder it runs in, when it began (no earlier than since), and the prompt
// it was given ("" for none; the head of a long one). The prompt tells the
// agent's session from others begun beside it in the folder when the
// process exited before it was seen holding its own.
type Started struct {
	PID    int
	Cwd    string
	Since  time.Time
	Prompt string
}

// Stopper stops a session the adapter knows but agentctl did not start (a
// gateway run), through the agent's own means. The session core calls it
// for `stop` of a native session that has no launch record.
type Stopper interface {
	Stop(ctx context.Context, nativeID string) error
}

// TurnInterrupter ends a native session's running turn, and the tools it
// started, where they run outside the process agentctl signals (Codex's
// shared app-server daemon), and checks that nothing of the turn runs
// afterwards. It does nothing when the turn runs in the session's own
// process. The session core's stop calls it before it signals the process.
type TurnInterrupter interface {
	InterruptTurn(ctx context.Context, nativeID string) error
}

// ChangeWatcher is an adapter that pushes session changes instead of only
// being asked (a gateway's event stream). The session core follows each
// one for the service's life (Core.WatchAdapters), so starts, ends and
// busy/idle changes reach the observers as they happen.
type ChangeWatcher interface {
	WatchChanges(ctx context.Context) (<-chan Change, error)
}

// NativeIDChecker is an adapter whose native ids take a shape agentctl's own
// ids do not (OpenClaw's gateway keys, agent:main:dashboard:<uuid>). The
// session core accepts such a handle only when an adapter says it is one of
// its ids, and only ever compares it with the ids that adapter lists: it
// never becomes a path. Adapters whose ids are letters, digits, '-', '_'
// and '.' (uuids, ses_…) need not implement it.
type NativeIDChecker interface {
	ValidNativeID(id string) bool
}

// AssistantReader is an adapter that reads a native session's last n
// assistant messages (peek) back from the end of its transcript only as far
// as they go. Transcript's last n messages may hold none of them when tool
// calls and results fill a turn, and reading further each time would parse
// the same end again. The session core's `peek` calls it; without it, peek
// reads Transcript.
type AssistantReader interface {
	// LastAssistant returns messages from the end of the transcript,
	// oldest first, holding its last n assistant messages (fewer when the
	// transcript has fewer); other roles may be among them.
	LastAssistant(ctx context.Context, nativeID string, n int) ([]Message, error)
}

// OneReader is an adapter that can say what its store holds of one
// session without discovering the whole store: the session core's `status`
// and `peek` of one id. DiscoverOne returns what Discover would say of the
// session nativeID (a whole id), or an error wrapping ErrNoSession when the
// store has none. Without it, the core runs a whole discovery.
type OneReader interface {
	DiscoverOne(ctx context.Context, nativeID string) (NativeSession, error)
}

// HookReader is an adapter whose agent can report its events to agentctl
// through a user-level integration (`agentctl integrate`: Claude Code's
// hooks, an OpenCode plugin, a Pi extension, Codex's notify program). Those
// run `agentctl hook AGENT --event E` with the event's JSON on stdin; the
// service proves which process of the agent sent it (the caller's peer
// credentials and parentage, never the payload), then asks the adapter
// what the payload says. ReadHook must refuse what it cannot read with an
// error that says why; it never guesses a field.
type HookReader interface {
	ReadHook(event string, payload []byte) (HookFacts, error)
}

// HookFacts is what one integration report says of its session: every
// field may be empty (not said).
type HookFacts struct {
	// Event is the agent's own name of the event ("PermissionRequest",
	// "permission.asked", "agent-turn-complete", "tool_call").
	Event string
	// NativeID is the agent's session id the report is about.
	NativeID string
	// Cwd is the agent's working directory, as the report says.
	Cwd string
	// State is NativeBusy or NativeIdle when the report says which.
	State NativeState
	// WaitingFor is WaitingPermission, WaitingInput, "question" or
	// "limit" (api.WaitingQuestion/WaitingLimit) when the agent now waits;
	// Tool, Input and Text say what for.
	WaitingFor string
	Tool       string
	Input      string
	Text       string
	// Request is the agent's own id of a pending permission request, when
	// the integration can carry an answer back to the agent (Claude's
	// PermissionRequest hook, OpenCode's permission event through the
	// plugin); "" when it can only be answered at the agent's terminal.
	Request string
	// Ended says the session ended (Claude's SessionEnd).
	Ended bool
	// Sent is when the integration saw the event, by its own clock (zero
	// when it does not say): what the report took to arrive is measured
	// from it.
	Sent time.Time
}

// HookTies is the service's book of integration evidence: what the
// integrations' reports proved of the agents' live processes. An adapter
// that has it (Env.Hooks) ties each such process to the session its
// reports name at once, before the agent's store says anything, and takes
// its state from the reports.
type HookTies interface {
	// HookTies lists the live processes of agent with evidence, as of now.
	HookTies(agent string) []HookTie
}

// HookTie is what the reports of one live process of an agent proved: the
// process (its pid, proven by the reporting hook's parentage, with its
// start stamp), the session it works on, and its last state.
type HookTie struct {
	PID   int
	Start uint64
	// NativeID and Cwd are the session and folder its reports name.
	NativeID string
	Cwd      string
	// Event and At are the last report's event and time.
	Event string
	At    time.Time
	// State is NativeBusy or NativeIdle when a report said which, and
	// WaitingFor what it waits for (with Tool, Input, Text) since
	// WaitingSince; Request is the service's id of a permission request
	// the service can answer for it ("" when none).
	State        NativeState
	WaitingFor   string
	WaitingSince time.Time
	Tool         string
	Input        string
	Text         string
	Request      string
}

// Source is how `explain` names the evidence: "integration (hook
// PermissionRequest at 15:04:05)".
func (t HookTie) Source() string {
	return "integration (hook " + t.Event + " at " + t.At.Local().Format("15:04:05") + ")"
}
