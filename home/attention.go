package home

// Files of a session's folder that hold its attention evidence.
const (
	// TerminalFile is what the session's monitor saw on the terminal: the
	// last notification (OSC 9, OSC 777, OSC 99, BEL) and window title,
	// and when output and input last went through. Written by the monitor.
	TerminalFile = "terminal.json"
	// AttentionFile is the last state the agent's hooks reported (busy,
	// idle, waiting and for what). Written by the service.
	AttentionFile = "attention.json"
	// DecisionsFile has one JSON line per answer given to the session
	// (approve, deny, answer): who, when, what.
	DecisionsFile = "decisions.jsonl"
)

// ServerFile names the agent's own server, where it has one agentctl can
// ask about its permission requests (OpenCode's TUI): {"url": ...}.
const ServerFile = "agent-server.json"
