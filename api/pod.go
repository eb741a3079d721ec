package api

// InPod is a cluster session as the agentctl in its pod derives it from
// the session's record, the agent's liveness and the agent's own files
// there (`agentctl pod-session`, run through the API's exec): the agent's
// native truth, which the API server does not have.
type InPod struct {
	Session Session `json:"session"`
	// Transcript and Explanation are there when asked for.
	Transcript  *Transcript  `json:"transcript,omitempty"`
	Explanation *Explanation `json:"explanation,omitempty"`
}
