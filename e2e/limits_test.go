package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/api"
)

// limitCase is what one agent makes of the fake model's usage-limit error
// (the provider's real shape): the provider it names, whether it gives
// the reset time, and how long it retries before it gives up.
type limitCase struct {
	provider string
	resets   bool
	wait     time.Duration
}

// limitCases: Claude Code gives up at once (x-should-retry: false) and its
// record has no reset time with an API key; Codex turns the ChatGPT
// backend's usage_limit_reached into UsageLimitExceeded with the window's
// reset; OpenCode and Pi retry a 429 a while, then record the error with
// its "try again in" text.
var limitCases = map[string]limitCase{
	"claude":   {provider: "anthropic", wait: 60 * time.Second},
	"codex":    {provider: "openai", resets: true, wait: 60 * time.Second},
	"opencode": {provider: "fake", resets: true, wait: 240 * time.Second},
	"pi":       {provider: "fakeopenai", resets: true, wait: 120 * time.Second},
}

// Each real agent, launched headless against a model that answers its
// provider's usage-limit error, ends held by the limit: status says
// waiting for limit, with the provider and, where the agent gives it, the
// reset time (the fake's window resets 600 s after the request).
func TestAgentUsageLimit(t *testing.T) {
	t.Parallel()
	for _, ac := range agentCases {
		lc, ok := limitCases[ac.name]
		if !ok {
			t.Fatalf("no limit case for %s", ac.name)
		}
		t.Run(ac.name, func(t *testing.T) {
			t.Parallel()
			r := ac.start(t)
			e := r.Env
			before := time.Now()
			s := r.launch("work [[limit: 600]]")
			var got api.Session
			WaitFor(t, lc.wait, "the session to end held by the limit", func() bool {
				got = e.Session(s.ID)
				return got.Status.Ended() && got.WaitingFor == api.WaitingLimit
			})
			h := got.Waiting.Limit
			if got.Waiting.For != api.WaitingLimit || h == nil || h.Provider != lc.provider || h.Message == "" {
				t.Fatalf("held by %+v (waiting %+v), want a limit of %s with its message", h, got.Waiting, lc.provider)
			}
			switch {
			case lc.resets && h.ResetsAt == nil:
				t.Errorf("no reset time: %+v", h)
			case lc.resets && (h.ResetsAt.Before(before.Add(590*time.Second)) || h.ResetsAt.After(time.Now().Add(610*time.Second))):
				t.Errorf("resets at %v, want about 600 s after the request (%v)", h.ResetsAt, before)
			case !lc.resets && h.ResetsAt != nil:
				t.Errorf("a reset time the agent does not give: %+v", h)
			}
			if out := e.MustRun("status", s.ID); !strings.Contains(out, "held by") || !strings.Contains(out, "limit "+lc.provider) {
				t.Errorf("status does not show the limit:\n%s", out)
			}
		})
	}
}
