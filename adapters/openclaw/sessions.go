package openclaw

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/agentctl/agentctl/adapters"
)

// sessionRow is the part of a gateway session row agentctl reads. Numbers
// that may be absent or null are pointers: absent is unknown, not zero.
type sessionRow struct {
	Key              string   `json:"key"`
	SessionID        string   `json:"sessionId"`
	AgentID          string   `json:"agentId"`
	Kind             string   `json:"kind"`
	Label            string   `json:"label"`
	DisplayName      string   `json:"displayName"`
	DerivedTitle     string   `json:"derivedTitle"`
	Channel          string   `json:"channel"`
	CreatedAt        *int64   `json:"createdAt"`
	UpdatedAt        *int64   `json:"updatedAt"`
	Status           string   `json:"status"`
	HasActiveRun     *bool    `json:"hasActiveRun"`
	ActiveRunIDs     []string `json:"activeRunIds"`
	StartedAt        *int64   `json:"startedAt"`
	EndedAt          *int64   `json:"endedAt"`
	AbortedLastRun   *bool    `json:"abortedLastRun"`
	LastRunError     *string  `json:"lastRunError"`
	Model            string   `json:"model"`
	ModelProvider    string   `json:"modelProvider"`
	InputTokens      *int64   `json:"inputTokens"`
	OutputTokens     *int64   `json:"outputTokens"`
	EstimatedCostUSD *float64 `json:"estimatedCostUsd"`
	Archived         bool     `json:"archived"`
}

// listParams are the sessions.list parameters agentctl sends.
type listParams struct {
	Limit                int  `json:"limit"`
	Offset               int  `json:"offset,omitempty"`
	IncludeDerivedTitles bool `json:"includeDerivedTitles,omitempty"`
}

// listResult is a sessions.list answer.
type listResult struct {
	Count      int    `json:"count"`
	TotalCount *int   `json:"totalCount"`
	HasMore    bool   `json:"hasMore"`
	NextOffset *int   `json:"nextOffset"`
	Path       string `json:"path"`
	Defaults   struct {
		Model         string `json:"model"`
		ModelProvider string `json:"modelProvider"`
	} `json:"defaults"`
	Sessions []json.RawMessage `json:"sessions"`
}

// Gateway run statuses (the row's status field, for the latest run).
const (
	runRunning = "running"
	runDone    = "done"
	runFailed  = "failed"
	runKilled  = "killed"
	runTimeout = "timeout"
)

func msTime(ms *int64) time.Time {
	if ms == nil || *ms <= 0 {
		return time.Time{}
	}
	return time.UnixMilli(*ms)
}

// nativeState reads the gateway's own word on a session: hasActiveRun says
// whether it is working now, status how the latest run ended. Nothing is
// inferred from timestamps; what the row does not say stays unknown.
//
// What runs on a gateway is a run, not the session: a session without an
// active run is over as far as agentctl can act on it, whether its last run
// finished or it never had one. So a session that never ran is "done" like
// one whose run completed; calling it idle would list every session ever
// opened in the dashboard as running, forever.
func nativeState(r sessionRow) (adapters.NativeState, []string) {
	if r.HasActiveRun != nil && *r.HasActiveRun {
		return adapters.NativeBusy, nil
	}
	// Past the check above, a present hasActiveRun is false: the gateway
	// says no run is active.
	saysIdle := r.HasActiveRun != nil
	switch r.Status {
	case "":
		if saysIdle {
			// Never ran: nothing is running and nothing failed.
			return adapters.NativeDone, nil
		}
		return adapters.NativeUnknown, nil
	case runRunning:
		if saysIdle {
			return adapters.NativeUnknown, []string{"gateway reports the latest run as running but no active run"}
		}
		return adapters.NativeRunning, nil
	case runDone:
		// A run aborted before it got going can end as "done"; the
		// gateway's abortedLastRun says what happened.
		if r.AbortedLastRun != nil && *r.AbortedLastRun {
			return adapters.NativeAborted, nil
		}
		return adapters.NativeDone, nil
	case runFailed:
		if r.LastRunError != nil && *r.LastRunError != "" {
			return adapters.NativeFailed, []string{"last run failed: " + *r.LastRunError}
		}
		return adapters.NativeFailed, nil
	case runTimeout:
		return adapters.NativeFailed, []string{"last run timed out"}
	case runKilled:
		return adapters.NativeAborted, nil
	}
	return adapters.NativeUnknown, []string{fmt.Sprintf("unknown gateway run status %q", r.Status)}
}

// toNative maps a row to agentctl's view. source names the gateway.
func toNative(r sessionRow, defaultModel, source string) adapters.NativeSession {
	state, warnings := nativeState(r)
	model := r.Model
	if model == "" {
		model = defaultModel
	}
	return adapters.NativeSession{
		Adapter:     Name,
		NativeID:    r.Key,
		Model:       model,
		FirstPrompt: strings.TrimSpace(r.DerivedTitle),
		TokensIn:    r.InputTokens,
		TokensOut:   r.OutputTokens,
		CostUSD:     r.EstimatedCostUSD,
		CreatedAt:   msTime(r.CreatedAt),
		UpdatedAt:   msTime(r.UpdatedAt),
		State:       state,
		Path:        source,
		Warnings:    warnings,
	}
}

// maxKeyLen bounds a session key agentctl accepts from a user.
const maxKeyLen = 512

// ValidNativeID reports whether id can be a gateway session key (or a
// prefix of one) as a user types it: parts joined by ':' as in
// agent:main:dashboard:<uuid>, agent:main:main or hook:<uuid>, each of
// letters, digits and '-', '_', '.', '+', '@' (channel peers such as
// +15551234567 or a mail address), with no part starting with '.'. The
// key only ever goes to the gateway in a JSON frame; the rule keeps
// paths, spaces and control characters out of it all the same.
func (a *Adapter) ValidNativeID(id string) bool { return ValidKey(id) }

// ValidKey is the rule ValidNativeID applies.
func ValidKey(id string) bool {
	if id == "" || len(id) > maxKeyLen {
		return false
	}
	for _, part := range strings.Split(id, ":") {
		if strings.HasPrefix(part, ".") {
			return false
		}
		for _, r := range part {
			ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' ||
				r == '-' || r == '_' || r == '.' || r == '+' || r == '@'
			if !ok {
				return false
			}
		}
	}
	return true
}
