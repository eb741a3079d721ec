package api

import "time"

// Activities of a running session. ActivityUnknown is the empty string: no
// evidence says (shown as "-").
const (
	ActivityBusy    = "busy"
	ActivityIdle    = "idle"
	ActivityWaiting = "waiting"
)

// What a waiting session waits for.
const (
	// WaitingPermission: the agent asks to run a tool (Waiting.Tool and
	// Waiting.Input say which and with what).
	WaitingPermission = "permission"
	// WaitingQuestion: the agent asks the person a question (Waiting.Text,
	// Waiting.Options).
	WaitingQuestion = "question"
	// WaitingInput: the agent finished a turn and sits at its prompt
	// (interactive sessions), or a program asked for attention on its
	// terminal (Waiting.Text is what it said).
	WaitingInput = "input"
	// WaitingDialog: the agent shows a dialog in its terminal that only a
	// person at it can answer (Claude's "trust this folder?"): attach to
	// answer it; input sent blind could pick the wrong choice.
	WaitingDialog = "dialog"
)

// Sources of the activity: which evidence decided it.
const (
	// SourceHook: the agent's own hooks, which agentctl configured when it
	// launched it (Claude Code).
	SourceHook = "hook"
	// SourceTerminal: a terminal notification (OSC 9, OSC 777 notify, OSC
	// 99, BEL) the session's monitor saw in the output.
	SourceTerminal = "terminal"
	// SourceNative: the agent's own records or server.
	SourceNative = "native"
	// SourceIntegration: the agent's user-level integration (`agentctl
	// integrate`) reported it, for a session started by hand.
	SourceIntegration = "integration"
)

// Waiting is what a waiting session waits for, as first-hand evidence said.
type Waiting struct {
	// For is WaitingPermission, WaitingQuestion or WaitingInput.
	For string `json:"for"`
	// Request identifies a pending request that `approve`/`deny` can answer
	// (a permission request whose hook waits for the service's decision);
	// empty when the agent can only be answered in its terminal.
	Request string `json:"request,omitempty"`
	// Tool and Input are the tool a permission is asked for and its input
	// (e.g. "Bash", "rm -rf build").
	Tool  string `json:"tool,omitempty"`
	Input string `json:"input,omitempty"`
	// Text is the question, or the notification's text.
	Text    string   `json:"text,omitempty"`
	Options []string `json:"options,omitempty"`
	// Limit is the usage limit that holds the session (For is WaitingLimit).
	Limit *LimitHold `json:"limit,omitempty"`
	// Kind is the evidence's own name: the hook event ("PermissionRequest",
	// "Notification/permission_prompt", "Stop") or the terminal sequence
	// ("osc9", "osc777", "osc99", "bel").
	Kind string `json:"kind,omitempty"`
}

// Summary is the one-line reason: "permission: Bash: rm -rf build".
func (w *Waiting) Summary() string {
	if w == nil {
		return ""
	}
	s := w.For
	detail := w.Text
	if w.Tool != "" {
		detail = w.Tool
		if w.Input != "" {
			detail += ": " + w.Input
		}
	}
	if detail != "" {
		s += ": " + detail
	}
	return s
}

// AttentionReport is what a session's monitor or an agent's hook tells the
// service (POST /v1/sessions/{id}/attention and /hooks/{agent}).
type AttentionReport struct {
	// Source is SourceTerminal or SourceHook.
	Source string `json:"source"`
}

// Decision answers a waiting session: approve or deny a pending
// permission, or answer a question / give the next instruction.
type Decision struct {
	// Action is DecisionApprove, DecisionDeny or DecisionAnswer.
	Action string `json:"action"`
	// Request is the pending request answered (Waiting.Request, as the
	// person saw it). An approval needs it; a denial without it denies
	// whatever is pending. A request that is no longer the pending one is
	// refused with CodeChanged.
	Request string `json:"request,omitempty"`
	// Reason goes with a denial, to the agent.
	Reason string `json:"reason,omitempty"`
	// Text is the answer typed into the session.
	Text string `json:"text,omitempty"`
	// Via says through what the person answered when the caller relays
	// for them ("web from 192.0.2.7:51234"): recorded beside the caller
	// the service proved from the socket, never instead of it.
	Via string `json:"via,omitempty"`
}

// RelayedHeader carries, as JSON, the Relayed a request is made for: a
// relay (the web dashboard) names the process it acts for, and the service
// holds that process to the rules its direct caller is held to (both must
// pass). A request to another machine's service carries none: the pid is
// this machine's.
const RelayedHeader = "Agentctl-Relayed"

// Relayed is a process of the service's machine a relay acts for.
type Relayed struct {
	PID int `json:"pid"`
	// Start is the process's start stamp: a pid reused since is not it.
	Start uint64 `json:"start"`
	// UID is the process's user, as the service read it.
	UID int `json:"uid"`
	// Via names the relay and how the process reached it ("web from
	// 127.0.0.1:51234").
	Via string `json:"via,omitempty"`
}

// Decision actions.
const (
	DecisionApprove = "approve"
	DecisionDeny    = "deny"
	DecisionAnswer  = "answer"
)

// DecisionRecord is one line of a session's decisions.jsonl: who answered
// what, when.
type DecisionRecord struct {
	Time   time.Time `json:"time"`
	Action string    `json:"action"`
	UID    int       `json:"uid"`
	PID    int       `json:"pid"`
	// Request, Tool and Input name what was answered.
	Request string `json:"request,omitempty"`
	For     string `json:"for,omitempty"`
	Tool    string `json:"tool,omitempty"`
	Input   string `json:"input,omitempty"`
	Reason  string `json:"reason,omitempty"`
	Text    string `json:"text,omitempty"`
	// Via is what the caller (UID, PID, proven) said it relayed for
	// (Decision.Via): a claim of that caller's, not a proof.
	Via string `json:"via,omitempty"`
	// Relayed is the process the caller relayed for (the one at the other
	// end of the dashboard's connection), held to the same rules.
	Relayed *Relayed `json:"relayed,omitempty"`
	// Delivered says how the answer reached the agent: "hook" (the
	// waiting PermissionRequest hook took it) or "terminal" (typed in).
	Delivered string `json:"delivered"`
}

// HookReply is the service's answer to a hook report: for a Claude
// PermissionRequest, the decision the hook prints for Claude.
type HookReply struct {
	// Behavior is "allow", "deny" or "" (no decision: the agent asks in its
	// own terminal as usual).
	Behavior string `json:"behavior,omitempty"`
	Message  string `json:"message,omitempty"`
}

// WaitingLimit: a usage limit of the agent's provider holds the session
// (Waiting.Limit says which window, and until when where the agent says).
const WaitingLimit = "limit"

// LimitHold is the usage limit a session is held by, as the agent's own
// records or mechanisms said it.
type LimitHold struct {
	// Provider is the model provider whose limit it is: "anthropic",
	// "openai", or the agent's own name for it.
	Provider string `json:"provider"`
	// Account names the provider account when the evidence does (an email,
	// an organisation id); "" when not known.
	Account string `json:"account,omitempty"`
	// Window is the limit's window in the provider's words: "five_hour",
	// "seven_day", "primary", "secondary"; "" when not known.
	Window string `json:"window,omitempty"`
	// ResetsAt is when the window resets, where the agent says.
	ResetsAt *time.Time `json:"resets_at,omitempty"`
	// Message is the agent's or provider's own text of the error.
	Message string `json:"message,omitempty"`
	// Since is when the agent recorded the limit, where known.
	Since *time.Time `json:"since,omitempty"`
}

// MaxHookReport bounds one integration report (`agentctl hook` without a
// session: POST /v1/hooks/{agent}): the hook sends nothing larger, and the
// service refuses it.
const MaxHookReport = 1 << 20

// IntegrationStatus is what the service knows of the integrations (GET
// /v1/hooks): when each agent's last report arrived (none since the
// service started: absent).
type IntegrationStatus struct {
	LastReport map[string]time.Time `json:"last_report,omitempty"`
}
