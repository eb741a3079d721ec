// Package adapters knows each coding agent: where its native sessions live
// and how to read them cheaply, how to build the argv and environment to
// launch and resume it headless, how to match a live process to a session,
// and how to read its transcript. An adapter never guesses: what the native
// store does not say stays empty (unknown). Adapters never import the
// supervisor.
package adapters

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// Adapter reads one agent's native store.
type Adapter interface {
	// Name is the adapter's name as users type it: "claude", "codex", ...
	Name() string
	// Discover returns every session the native store knows of, launched by
	// agentctl or not. A session that cannot be read is returned with a
	// warning rather than failing the whole call; an error means the store as
	// a whole could not be read, and the caller marks nothing as stopped.
	Discover(ctx context.Context) ([]NativeSession, error)
	// Transcript returns the last n messages of the native session
	// (n <= 0: all), oldest first.
	Transcript(ctx context.Context, nativeID string, n int) ([]Message, error)
}

// NativeState is the agent's own view of a session, where it has one.
type NativeState string

const (
	NativeUnknown NativeState = ""        // the store does not say
	NativeBusy    NativeState = "busy"    // working on a turn
	NativeIdle    NativeState = "idle"    // alive, waiting for input
	NativeRunning NativeState = "running" // alive, busy/idle not known
	NativeDone    NativeState = "done"    // the last turn completed
	NativeFailed  NativeState = "failed"  // the last turn failed
	NativeAborted NativeState = "aborted" // the last turn was interrupted, or cut off: no process of the store runs it
)

// What a live session's process may wait for, as its agent's own records
// say (NativeSession.WaitingFor); the same words as the API's.
const (
	WaitingPermission = "permission" // a prompt to allow a tool
	WaitingDialog     = "dialog"     // a dialog in its terminal (trust a folder, a setting)
	WaitingInput      = "input"      // the next instruction
	// WaitingLimit: a usage limit of the model provider ended the last
	// turn (NativeSession.Limit says which).
	WaitingLimit = "limit"
)

// LimitHit is a usage limit of the model provider that ended a session's
// last turn, as the agent's own records say it.
type LimitHit struct {
	// Provider is the model provider whose limit it is: "anthropic",
	// "openai", or the agent's own id of it.
	Provider string
	// Window is the limit's window in the provider's words ("five_hour",
	// "primary"); "" when the records do not say.
	Window string
	// ResetsAt is when the window resets; zero when the records do not
	// say.
	ResetsAt time.Time
	// Message is the error's text as the agent recorded it.
	Message string
	// At is when the agent recorded it.
	At time.Time
}

// LimitWindow is one of a provider account's usage windows as the agent's
// own records last saw it (Codex's rate-limit snapshot).
type LimitWindow struct {
	Provider string
	// Name is the window in the provider's words ("primary").
	Name        string
	UsedPercent float64
	// ResetsAt is zero when the records do not say.
	ResetsAt time.Time
	// At is when the agent recorded it.
	At time.Time
}

// LimitStatus is the HTTP status a provider answers a usage or rate limit
// with.
const LimitStatus = 429

// NativeSession is what an agent's own store says about one session.
type NativeSession struct {
	Adapter     string
	NativeID    string
	Cwd         string
	Model       string
	FirstPrompt string
	TokensIn    *int64
	TokensOut   *int64
	CostUSD     *float64
	// TotalsPending says TokensIn, TokensOut and CostUSD are being counted
	// in the background (Env.TotalsLater): unknown for now, not zero.
	TotalsPending bool
	CreatedAt     time.Time
	UpdatedAt     time.Time
	State         NativeState
	// WaitingFor, when set, is what the agent's own records say its live
	// process waits for a person to answer (WaitingPermission,
	// WaitingDialog, WaitingInput), since WaitingSince (zero when not
	// known).
	WaitingFor   string
	WaitingSince time.Time
	// Limit, when set, is the usage limit that ended the last turn; a
	// later turn that went through clears it.
	Limit *LimitHit
	// Windows are the provider account's usage windows as the session's
	// records last gave them, where the agent records them.
	Windows []LimitWindow
	// Process is the live process matched to this session with evidence
	// (the agent's own registry, its argv, an open file); nil when none or
	// when the evidence is ambiguous.
	Process *ProcessRef
	// Hook, when set, is the integration evidence of Process (its reports
	// decided State and WaitingFor).
	Hook *HookTie
	// Path is the native file or database the session was read from.
	Path     string
	Warnings []string
	// Evidence holds what the adapter weighed beyond Path, State and
	// Process: the live processes that may own the session (which keep it
	// unknown) and the candidates it turned down, with why. `agentctl
	// explain` shows them.
	Evidence []Evidence
}

// EvidenceKind names what a piece of evidence is.
type EvidenceKind string

const (
	// EvidenceContender: a live process of the agent that may be working
	// on the session, which no evidence ties to one session; the session
	// is unknown while it lives.
	EvidenceContender EvidenceKind = "contender"
	// EvidenceRejected: a process or record that pointed at the session
	// and was turned down (another user or store, a recycled pid, a stale
	// registry entry).
	EvidenceRejected EvidenceKind = "rejected"
	// EvidenceCandidate: a live process of the agent that holds the
	// session in some assignment consistent with the facts, while every
	// such assignment gives it one of them: the session runs, and which of
	// them runs it is not known.
	EvidenceCandidate EvidenceKind = "candidate"
)

// Evidence is one fact an adapter weighed for a session: of what kind,
// from which source (a file, a server, a process), and what it says.
type Evidence struct {
	Kind   EvidenceKind
	PID    int    // the process it is about, when it is about one
	Source string // the file or server it was read from, when one
	Says   string
}

// ContenderEvidence is the evidence of the live processes (pids) of agent
// that may each be working on a session.
func ContenderEvidence(agent string, pids []int) []Evidence {
	out := make([]Evidence, 0, len(pids))
	for _, pid := range pids {
		out = append(out, Evidence{Kind: EvidenceContender, PID: pid,
			Says: fmt.Sprintf("a live %s process that may be working on this session: nothing ties it to one session", agent)})
	}
	return out
}

// ProcessRef identifies a live process: pid plus its start stamp (see
// proc.Identity), so a recycled pid never matches.
type ProcessRef struct {
	PID   int
	Start uint64
	// Evidence says how the match was made: "registry", "argv", "open-file",
	// "cwd+start".
	Evidence string
}

// Message is one transcript entry.
type Message struct {
	Role string    `json:"role"` // "user", "assistant", "tool"
	Text string    `json:"text"`
	Time time.Time `json:"time,omitempty"`
}

// LaunchRequest is what a launch or resume asks of an adapter.
type LaunchRequest struct {
	Prompt string
	Model  string
	Cwd    string
	// Env is the environment the agent starts from (the caller's, with
	// --env overrides applied); the adapter returns its adjusted copy.
	Env []string
	// NativeID is set on resume: the native session to continue.
	NativeID string
	// SessionDir is agentctl's folder for this session, where an adapter may
	// put a prompt file.
	SessionDir string
	// BinaryPath is the absolute path of the launcher's Binary(), resolved
	// by the caller with the launch's PATH and cwd (once per launch).
	BinaryPath string
	// Interactive asks for the agent's own interactive interface, with the
	// prompt as its first message, rather than a headless run.
	Interactive bool
	// PermissionMode is one of api.PermissionModes (Claude Code's names),
	// or "" for the adapter's default; an adapter maps it onto its agent's
	// flags, or refuses a mode its agent has no equivalent of.
	PermissionMode string
	// Args go to the agent as given, after the adapter's own flags (and
	// before the prompt). An adapter leaves out its default permission
	// flags when Args set the agent's own.
	Args []string
	// HookCommand is the argv that reports an agent's hook to the service
	// ("agentctl hook --home H"); an adapter whose agent has hooks adds the
	// agent's name and its flags and configures the agent to run it.
	HookCommand []string
}

// NoPermissionModes is the check of an adapter whose agent has no
// permission modes agentctl can set: any mode but those it always runs in
// (always) is refused, saying why (how the agent decides).
func NoPermissionModes(agent, mode, how string, always ...string) error {
	if mode == "" || slices.Contains(always, mode) {
		return nil
	}
	return fmt.Errorf("%s has no permission mode %q agentctl can set: %s", agent, mode, how)
}

// PromptFile is the file, in the session folder, a prompt that cannot go
// in argv (too long, a NUL byte, read as an option) is written to.
const PromptFile = "prompt.txt"

// PromptOnStdin writes the prompt to the session folder and returns the
// argv that runs the agent (BinaryPath, then args) through /bin/sh with
// that file as its standard input. It serves agents that read a prompt
// from a stdin that is not a terminal: under agentctl's pty stdin is one.
func (r LaunchRequest) PromptOnStdin(args []string) ([]string, error) {
	if r.SessionDir == "" {
		return nil, errors.New("a prompt passed through stdin needs the session folder, and none was given")
	}
	if r.BinaryPath == "" {
		return nil, errors.New("a prompt passed through stdin needs the agent's resolved path, and none was given")
	}
	if err := os.MkdirAll(r.SessionDir, 0o700); err != nil {
		return nil, fmt.Errorf("write the prompt file: %w", err)
	}
	file := filepath.Join(r.SessionDir, PromptFile)
	if err := os.WriteFile(file, []byte(r.Prompt), 0o600); err != nil {
		return nil, fmt.Errorf("write the prompt file: %w", err)
	}
	// $0 is the prompt file, "$@" the agent's argv.
	return append([]string{"/bin/sh", "-c", `exec "$@" <"$0"`, file, r.BinaryPath}, args...), nil
}

// LaunchSpec is how to start the agent.
type LaunchSpec struct {
	Argv []string
	Env  []string
	// Stdin, when non-nil, is written to the agent's terminal after start
	// (and followed by end-of-file where the agent needs it).
	Stdin []byte
	// NativeID is the native session id when it is known before start (an id
	// the adapter pre-assigned); empty when it must be learned afterwards.
	NativeID string
	// Server is the base URL of the agent's own HTTP server on 127.0.0.1,
	// when the launch gives it one (OpenCode's TUI): where its permission
	// requests and questions can be read and answered.
	Server string
}

// Env is where an adapter looks for its agent's files: the home directory
// and the environment (CODEX_HOME, XDG_DATA_HOME, PI_CODING_AGENT_DIR, ...).
// It is passed in rather than read from the process so tests and the
// service can point adapters at any tree.
type Env struct {
	Home   string
	Getenv func(string) string
	// Folders, when set, says which of the store's folders changed since
	// they were last read (the kernel's file notifications), so an
	// adapter re-reads only those; without it, every query stats every
	// file.
	Folders FolderWatch
	// CacheDir is where an adapter may keep what it read across restarts
	// of the service (a cache, never the truth); empty: nowhere.
	CacheDir string
	// Logf, when set, hears what is worth a line in the service's log but
	// is no warning of a session (a cache file ignored).
	Logf func(format string, args ...any)
	// Hooks, when set, is the service's book of integration evidence
	// (`agentctl integrate`): an adapter that reads it ties the processes
	// it names first-hand.
	Hooks HookTies
	// TotalsLater lets an adapter answer a first read of a large
	// transcript without its token and cost totals (NativeSession's
	// TotalsPending) and count them in the background: the first list of
	// a big store need not wait for what only the totals need.
	TotalsLater bool
}

// HookTiesOf lists what the book says of agent's live processes (none
// without a book).
func (e Env) HookTiesOf(agent string) []HookTie {
	if e.Hooks == nil {
		return nil
	}
	return e.Hooks.HookTies(agent)
}

// CachePath is the file named name under CacheDir, "" without one.
func (e Env) CachePath(name string) string {
	if e.CacheDir == "" {
		return ""
	}
	return filepath.Join(e.CacheDir, name)
}

// FolderWatch tells whether a folder changed: equal tokens from Token mean
// nothing in dir changed in between; ok is false when dir is not watched
// (read it by stat).
type FolderWatch interface {
	Token(dir string) (token uint64, ok bool)
}

// Lookup returns the value of key, or "" when Getenv is nil.
func (e Env) Lookup(key string) string {
	if e.Getenv == nil {
		return ""
	}
	return e.Getenv(key)
}

// Errors an adapter's Stop wraps, so callers can tell the cases apart
// without knowing the adapter.
var (
	ErrNotRunning = errors.New("session is not running")
	ErrNoSession  = errors.New("no such session")
	ErrForbidden  = errors.New("not allowed")
)

// Change is one push from an adapter that watches its source.
type Change struct {
	// Session is the session's state after the change.
	Session *NativeSession
	// Err says the watch lost its source; it retries by itself.
	Err error
}

// EnoughAssistant is the test an AssistantReader reads back until: msgs
// hold n assistant messages.
func EnoughAssistant(msgs []Message, n int) bool {
	count := 0
	for i := len(msgs) - 1; i >= 0 && count < n; i-- {
		if msgs[i].Role == "assistant" {
			count++
		}
	}
	return count >= n
}

// DiscoverOneOf is DiscoverOne through a's whole discovery: for an adapter
// whose answer for one session depends on others (a live process that may
// hold any of them).
func DiscoverOneOf(ctx context.Context, a Adapter, nativeID string) (NativeSession, error) {
	ss, err := a.Discover(ctx)
	if err != nil {
		return NativeSession{}, err
	}
	for _, ns := range ss {
		if ns.NativeID == nativeID {
			return ns, nil
		}
	}
	return NativeSession{}, fmt.Errorf("%s session %s: %w", a.Name(), nativeID, ErrNoSession)
}

// launchedKey keys the launch records a Discover is handed.
type launchedKey struct{}

// WithLaunched hands Discover agentctl's launch records of running
// sessions whose native id is known: per adapter, the agent's pid and its
// native session. They pin those processes to their sessions, so that the
// processes started by hand beside them are weighed without them.
func WithLaunched(ctx context.Context, launched map[string]map[int]string) context.Context {
	return context.WithValue(ctx, launchedKey{}, launched)
}

// LaunchedFrom returns adapter's launch records handed by WithLaunched
// (pid -> native id); nil when none were.
func LaunchedFrom(ctx context.Context, adapter string) map[int]string {
	m, _ := ctx.Value(launchedKey{}).(map[string]map[int]string)
	return m[adapter]
}
