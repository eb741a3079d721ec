package fakemodel

import (
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// LimitMessage is the text of the fake's usage-limit errors.
const LimitMessage = "fakellm: usage limit reached"

// limitAnswer is a usage limit the fake answers with: the window resets at
// resetsAt.
type limitAnswer struct {
	resetsAt time.Time
}

// limitWindowMinutes is the length the fake gives its limited window: a
// five-hour one, as both providers' subscriptions have.
const limitWindowMinutes = 300

// writeLimit answers with a's protocol's usage-limit error, as the real
// providers send it: Anthropic's 429 rate_limit_error with the unified
// rate-limit headers and x-should-retry: false (without it the SDK backs
// off and retries); for the Responses API (Codex), the ChatGPT backend's 429
// usage_limit_reached with resets_at, which Codex turns into its
// UsageLimitExceeded error; for Chat Completions, the 429
// rate_limit_exceeded of OpenAI-compatible servers.
func writeLimit(w http.ResponseWriter, a api, l limitAnswer, now time.Time) {
	reset := l.resetsAt.Unix()
	in := max(int64(l.resetsAt.Sub(now).Round(time.Second).Seconds()), 0)
	h := w.Header()
	switch a.(type) {
	case anthropicAPI:
		h.Set("retry-after", strconv.FormatInt(in, 10))
		h.Set("x-should-retry", "false")
		h.Set("anthropic-ratelimit-unified-status", "rejected")
		h.Set("anthropic-ratelimit-unified-reset", strconv.FormatInt(reset, 10))
		h.Set("anthropic-ratelimit-unified-representative-claim", "five_hour")
		h.Set("anthropic-ratelimit-unified-5h-status", "rejected")
		h.Set("anthropic-ratelimit-unified-5h-reset", strconv.FormatInt(reset, 10))
		h.Set("anthropic-ratelimit-unified-5h-utilization", "1.0")
		h.Set("anthropic-ratelimit-unified-7d-status", "allowed")
		h.Set("anthropic-ratelimit-unified-7d-reset", strconv.FormatInt(reset+6*24*3600, 10))
		h.Set("anthropic-ratelimit-unified-7d-utilization", "0.42")
		writeJSON(w, http.StatusTooManyRequests, map[string]any{
			"type":  "error",
			"error": map[string]any{"type": "rate_limit_error", "message": LimitMessage},
		})
	case responsesAPI:
		h.Set("retry-after", strconv.FormatInt(in, 10))
		h.Set("x-codex-primary-used-percent", "100")
		h.Set("x-codex-primary-window-minutes", strconv.Itoa(limitWindowMinutes))
		h.Set("x-codex-primary-reset-at", strconv.FormatInt(reset, 10))
		h.Set("x-codex-primary-reset-after-seconds", strconv.FormatInt(in, 10))
		h.Set("x-codex-secondary-used-percent", "42")
		h.Set("x-codex-secondary-window-minutes", strconv.Itoa(7*24*60))
		writeJSON(w, http.StatusTooManyRequests, map[string]any{
			"error": map[string]any{
				"type": "usage_limit_reached", "message": LimitMessage, "plan_type": "plus",
				"resets_at": reset, "resets_in_seconds": in,
			},
		})
	default:
		// No retry-after: OpenAI-compatible clients (the openai SDK) wait
		// out whatever it says before their next try, silently.
		writeJSON(w, http.StatusTooManyRequests, map[string]any{
			"error": map[string]any{
				"type": "rate_limit_exceeded", "code": "rate_limit_exceeded",
				"message": fmt.Sprintf("%s; try again in %ds", LimitMessage, in), "param": nil,
			},
		})
	}
}

// LimitUntil makes every model request answered before t a usage-limit
// error whose window resets at t, as a provider does for an exhausted
// account; the zero time lifts it.
func (s *Server) LimitUntil(t time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.limitUntil = t
}

// limited is the limit the server answers every request with now, if any.
func (s *Server) limited(now time.Time) (limitAnswer, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.limitUntil.IsZero() || !now.Before(s.limitUntil) {
		return limitAnswer{}, false
	}
	return limitAnswer{resetsAt: s.limitUntil}, true
}
