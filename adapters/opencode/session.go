package opencode

import (
	"time"

	"github.com/agentctl/agentctl/adapters"
	"github.com/agentctl/agentctl/adapters/attribute"
	"github.com/agentctl/agentctl/internal/text"
)

// session is what the store says about one session, from the database or
// the legacy JSON tree.
type session struct {
	id        string
	parentID  string
	directory string
	model     string
	created   time.Time
	updated   time.Time
	tokensIn  int64
	tokensOut int64
	hasTokens bool
	cost      float64
	hasCost   bool

	firstPrompt string
	last        lastMessage

	// path is the database or session file the session was read from.
	path     string
	warnings []string
}

// lastMessage is how the session's latest message stands.
type lastMessage struct {
	role      string // "user", "assistant", or "" when there is none
	completed bool
	finish    string
	errText   string
	errName   string
	// errStatus is the HTTP status of an API error, provider the message's
	// provider id, and at when the message was written.
	errStatus int64
	provider  string
	at        time.Time
}

// limit is the usage limit that ended the last turn, nil when none did:
// the API answered 429 and OpenCode gave up retrying.
func (l lastMessage) limit() *adapters.LimitHit {
	if l.role != "assistant" || l.errText == "" || l.errStatus != adapters.LimitStatus {
		return nil
	}
	return &adapters.LimitHit{Provider: l.provider, Message: l.errText, At: l.at, ResetsAt: adapters.TryAgainAt(l.errText, l.at)}
}

// lastOf describes m as the latest message.
func lastOf(m messageData) lastMessage {
	l := lastMessage{role: m.Role, finish: m.Finish, completed: !timeOf(m.Time.Completed).IsZero()}
	l.errText, l.errName = errorText(m.Error)
	if l.errText != "" {
		l.errStatus, l.provider = errorStatus(m.Error), m.ProviderID
		if l.at = timeOf(m.Time.Completed); l.at.IsZero() {
			l.at = timeOf(m.Time.Created)
		}
	}
	return l
}

// state maps the latest message to the agent's own view: a completed
// answer is done (idle while a process is attached), an error failed or
// aborted, anything else a turn in progress. Without a live process a turn
// in progress was cut off (OpenCode killed mid-turn, by SIGTERM, leaves
// exactly that behind); Discover keeps it unknown while a process that may
// be working on it lives.
func (s *session) state(alive bool) adapters.NativeState {
	l := s.last
	ended := func(st adapters.NativeState) adapters.NativeState {
		if alive {
			return adapters.NativeIdle
		}
		return st
	}
	switch {
	case l.role == "":
		if alive {
			return adapters.NativeRunning
		}
		return adapters.NativeAborted
	case l.role == "assistant" && l.errText != "":
		if l.errName == abortedError {
			return ended(adapters.NativeAborted)
		}
		return ended(adapters.NativeFailed)
	case l.role == "assistant" && l.completed && l.finish != "tool-calls" && l.finish != "tool_calls":
		return ended(adapters.NativeDone)
	}
	if alive {
		return adapters.NativeBusy
	}
	return adapters.NativeAborted
}

// settled reports whether the session's last turn is over (its facts
// change only with a new message).
func (s *session) settled() bool {
	switch s.state(false) {
	case adapters.NativeDone, adapters.NativeFailed, adapters.NativeAborted:
		return s.firstPrompt != ""
	}
	return false
}

// native builds the session the adapter reports.
func (s *session) native(at attribute.Attribution) adapters.NativeSession {
	ns := adapters.NativeSession{
		Adapter:     Name,
		NativeID:    s.id,
		Cwd:         s.directory,
		Model:       s.model,
		FirstPrompt: s.firstPrompt,
		CreatedAt:   s.created,
		UpdatedAt:   s.updated,
		State:       s.state(at.Running),
		Process:     at.Ref,
		Path:        s.path,
	}
	if s.hasTokens {
		in, out := s.tokensIn, s.tokensOut
		ns.TokensIn, ns.TokensOut = &in, &out
	}
	if s.hasCost {
		c := s.cost
		ns.CostUSD = &c
	}
	ns.Limit = s.last.limit()
	if s.last.errText != "" && s.last.errName != abortedError {
		ns.Warnings = append(ns.Warnings, "last message failed: "+text.Ellipsis(s.last.errText, messageRunes))
	}
	ns.Warnings = append(ns.Warnings, s.warnings...)
	if at.Unknown {
		ns.State = adapters.NativeUnknown
	}
	if at.Warning != "" {
		ns.Warnings = append(ns.Warnings, at.Warning)
	}
	ns.Evidence = append(ns.Evidence, at.Evidence...)
	return ns
}
