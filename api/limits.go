package api

import "time"

// ProviderLimits is what the service knows of one model provider's usage
// limits (GET /v1/limits): its windows from the freshest evidence, and the
// sessions a limit of it holds.
type ProviderLimits struct {
	Provider string `json:"provider"`
	// Account names the provider account when the evidence does.
	Account string `json:"account,omitempty"`
	// Held says a window of the provider is used up now: nothing of it is
	// started or resumed until HeldUntil (when known).
	Held      bool          `json:"held"`
	HeldUntil *time.Time    `json:"held_until,omitempty"`
	Windows   []LimitWindow `json:"windows,omitempty"`
	// Sessions are the sessions a limit of the provider holds, oldest
	// first.
	Sessions []string `json:"sessions,omitempty"`
	// Message is the latest error text of a limit.
	Message string `json:"message,omitempty"`
}

// LimitWindow is one usage window of a provider, as its freshest evidence
// says.
type LimitWindow struct {
	// Provider is the window's provider (in a session's LimitWindows;
	// a report groups them by provider).
	Provider string `json:"provider,omitempty"`
	// Name is the window in the provider's words ("five_hour",
	// "primary"); "" when the evidence does not name it.
	Name string `json:"name"`
	// UsedPercent is how much of it is used, where known.
	UsedPercent *float64   `json:"used_percent,omitempty"`
	ResetsAt    *time.Time `json:"resets_at,omitempty"`
	// At is when the evidence was recorded, and Session the session whose
	// records gave it.
	At      *time.Time `json:"at,omitempty"`
	Session string     `json:"session,omitempty"`
}
