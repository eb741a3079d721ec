package api

import "strings"

// Admission caps the sessions a service runs at once and keeps a memory
// floor (config.json's "admission"). Zero is no cap; in each map, the key
// AdmissionAny caps every name without a key of its own.
type Admission struct {
	MaxSessions      int            `json:"max_sessions,omitempty"`
	PerAdapter       map[string]int `json:"per_adapter,omitempty"`
	PerProvider      map[string]int `json:"per_provider,omitempty"`
	PerGroup         map[string]int `json:"per_group,omitempty"`
	MemoryFloorBytes int64          `json:"memory_floor_bytes,omitempty"`
}

// AdmissionAny is the key of a per-name cap that applies to every name
// without one of its own.
const AdmissionAny = "*"

// Zero reports whether the admission admits everything.
func (a Admission) Zero() bool {
	return a.MaxSessions == 0 && len(a.PerAdapter) == 0 && len(a.PerProvider) == 0 && len(a.PerGroup) == 0 && a.MemoryFloorBytes == 0
}

// Provider is the model provider account a session of adapter with model
// spends: Claude Code's is Anthropic's, Codex's OpenAI's; an agent that
// takes a provider/model pair (OpenCode, Pi) spends that provider's; else
// the adapter's own name. A plain command spends none ("").
func Provider(adapter, model string) string {
	switch adapter {
	case ExecAdapter, "":
		return ""
	case "claude":
		return "anthropic"
	case "codex":
		return "openai"
	}
	if p, _, ok := strings.Cut(model, "/"); ok && p != "" {
		return p
	}
	return adapter
}
