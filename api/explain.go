package api

// Kinds of evidence behind a session's status (Evidence.Kind).
const (
	// EvidenceLaunchRecord: launch.json, the process and monitor agentctl
	// started, with their start stamps.
	EvidenceLaunchRecord = "launch-record"
	// EvidenceExitRecord: exit.json, written by the agent's own parent
	// (its monitor) when it ended, or its absence.
	EvidenceExitRecord = "exit-record"
	// EvidenceProcess: a process checked now by pid and start stamp.
	EvidenceProcess = "process"
	// EvidenceMonitor: the session's monitor, checked by pid and start stamp.
	EvidenceMonitor = "monitor"
	// EvidenceStore: what the agent's own file, database or server says.
	EvidenceStore = "store"
	// EvidenceAttributed: the live process an adapter tied to the native
	// session, and by which evidence.
	EvidenceAttributed = "attributed"
	// EvidenceContender: a live process that may own the session, which
	// nothing ties to one session.
	EvidenceContender = "contender"
	// EvidenceCandidate: a live process that may be the one running the
	// session, which runs whichever of them it is.
	EvidenceCandidate = "candidate"
	// EvidenceRejected: a candidate turned down, and why.
	EvidenceRejected = "rejected"
	// EvidenceAdapter: the adapter could not answer this time.
	EvidenceAdapter = "adapter"
	// EvidenceActivity: the source of the busy/idle/waiting signal.
	EvidenceActivity = "activity"
	// EvidenceQueueRecord: a queued session's record (queued, its start
	// claimed, or cancelled), and what holds it back.
	EvidenceQueueRecord = "queue-record"
)

// Evidence is one fact behind a session's status: of what kind, from which
// source (a file, a server, a process), and what it says.
type Evidence struct {
	Kind   string `json:"kind"`
	PID    int    `json:"pid,omitempty"`
	Source string `json:"source,omitempty"`
	Says   string `json:"says"`
}

// Explanation is a session with the evidence behind its status (`agentctl
// explain`, `status --why`).
type Explanation struct {
	Session Session `json:"session"`
	// Rule is the status rule that applies: "launched" (exit record, then
	// pid + start stamp) or "native" (an attributed process, then the
	// agent's own record).
	Rule string `json:"rule"`
	// Reason says in a sentence why the status is what it is.
	Reason   string     `json:"reason"`
	Evidence []Evidence `json:"evidence"`
}

// Rules Explanation.Rule names.
const (
	RuleLaunched = "launched"
	RuleNative   = "native"
	// RuleCluster: a session on a cluster, as the API server reports its
	// pod and Job.
	RuleCluster = "cluster"
)
