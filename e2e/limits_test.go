package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
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

// Three Pi sessions a usage limit ends (the fake model answers every
// request with the limit until its window resets, after Pi has given up)
// are resumed by the service after the reset, one per interval,
// each run continuing its native session with a new turn; a fourth, held
// while Pi still retried and stopped by the user then, is not resumed.
// `agentctl limits` shows the provider's held sessions meanwhile.
func TestResumeAfterTheLimit(t *testing.T) {
	t.Parallel()
	p := newPiEnv(t)
	const interval = 5 * time.Second
	if err := os.WriteFile(filepath.Join(p.Home, "config.json"), []byte(`{"limit_resume": {"margin": "1s", "interval": "5s"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	// Pi retries a 429 (backing off 2 s, 4 s, 8 s...) before it gives up:
	// once here, 15 s later, so that it is held while it waits, and has
	// given up well before the window resets.
	settings := filepath.Join(p.home, ".pi", "agent", "settings.json")
	if err := os.WriteFile(settings, []byte(`{"retry": {"maxRetries": 1, "baseDelayMs": 15000}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	p.srv.LimitUntil(time.Now().Add(60 * time.Second))
	var held []api.Session
	for range 4 {
		// A folder each: an agent locks its folder while it runs.
		dir, err := filepath.EvalSymlinks(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, p.launch("work", "--on-limit", "resume", "--cwd", dir))
	}
	stopped := held[3]
	WaitFor(t, 120*time.Second, "the fourth session to be held while Pi retries", func() bool {
		s := p.Session(stopped.ID)
		return s.Status == api.StatusRunning && s.WaitingFor == api.WaitingLimit
	})
	p.MustRun("stop", stopped.ID)
	if s := p.Session(stopped.ID); s.StoppedBy == "" {
		t.Fatalf("the stopped session: %+v", s)
	}
	WaitFor(t, 120*time.Second, "agentctl limits to show the held sessions", func() bool {
		var out struct {
			Limits []api.ProviderLimits `json:"limits"`
		}
		p.JSON(&out, "limits", "--json")
		return len(out.Limits) == 1 && out.Limits[0].Provider == "fakeopenai" && len(out.Limits[0].Sessions) >= 3
	})
	runs := map[string]api.Session{} // held id → the run that resumed it
	WaitFor(t, 240*time.Second, "the three held sessions to be resumed, each with a new turn", func() bool {
		for _, s := range p.List("-a").Sessions {
			if s.ResumeOf != "" {
				runs[s.ResumeOf] = s
			}
		}
		for _, h := range held[:3] {
			r, ok := runs[h.ID]
			if !ok || p.Session(r.ID).Status != api.StatusExited {
				return false
			}
		}
		return true
	})
	var starts []time.Time
	for _, h := range held[:3] {
		r := p.Session(runs[h.ID].ID)
		if r.ExitCode == nil || *r.ExitCode != 0 || r.NativeID != h.NativeID || r.Prompt != "continue" || r.WaitingFor != "" {
			t.Errorf("the run that resumed %s: %+v", h.ID, r)
		}
		var tr api.Transcript
		p.JSON(&tr, "peek", "--json", r.ID)
		if got := texts(tr); len(got) == 0 || got[len(got)-1] != "hi from fakellm" {
			t.Errorf("the resumed run's transcript does not end with the new turn's answer: %q", got)
		}
		starts = append(starts, r.CreatedAt)
	}
	slices.SortFunc(starts, time.Time.Compare)
	for i := 1; i < len(starts); i++ {
		if gap := starts[i].Sub(starts[i-1]); gap < interval-time.Second {
			t.Errorf("resumes %s apart, want one per %s: %v", gap, interval, starts)
		}
	}
	// A tick past the last resume: the stopped one is still not resumed.
	time.Sleep(2 * interval)
	for _, s := range p.List("-a").Sessions {
		if s.ResumeOf == stopped.ID {
			t.Errorf("the session the user stopped was resumed by %s", s.ID)
		}
	}
	resumed := 0
	for _, h := range held[:3] {
		for _, ev := range p.events(t, h.ID) {
			if ev.Type == api.EventSessionResumed && ev.Meta["reason"] == api.WaitingLimit {
				resumed++
			}
		}
	}
	if resumed != 3 {
		t.Errorf("%d session.resumed events of a limit, want 3", resumed)
	}
}

// An interactive Claude Code whose API answers a usage limit stays at its
// prompt: the session reads running, waiting for the limit (not busy, as it
// did), and session.limited goes out with the provider.
func TestClaudeInteractiveUsageLimit(t *testing.T) {
	t.Parallel()
	c := newClaudeEnv(t)
	c.Setenv("CLAUDE_CODE_MAX_RETRIES", "0")
	key := "sk-ant-fake"
	seed := fmt.Sprintf(`{"hasCompletedOnboarding": true, "projects": {%q: {"hasTrustDialogAccepted": true}},
		"customApiKeyResponses": {"approved": [%q], "rejected": []}}`, c.proj, key[len(key)-min(20, len(key)):])
	if err := os.WriteFile(filepath.Join(c.home, ".claude.json"), []byte(seed), 0o600); err != nil {
		t.Fatal(err)
	}
	stream := c.follow(t)
	s := c.launch("work [[limit: 600]]", "-i")
	var got api.Session
	WaitFor(t, 90*time.Second, "the session to wait for the limit", func() bool {
		got = c.Session(s.ID)
		return got.Activity == api.ActivityWaiting && got.WaitingFor == api.WaitingLimit
	})
	if got.Status != api.StatusRunning || got.Waiting.Limit == nil || got.Waiting.Limit.Provider != "anthropic" || got.ActivitySource != api.SourceNative {
		t.Fatalf("held session: status %s source %q waiting %+v", got.Status, got.ActivitySource, got.Waiting)
	}
	ev, _ := stream.wait(t, api.EventSessionLimited, 20*time.Second)
	if ev.SessionID != s.ID || ev.Meta["provider"] != "anthropic" || ev.Meta["reason"] != api.WaitingLimit {
		t.Errorf("session.limited: %+v", ev)
	}
	if out := c.MustRun("explain", s.ID); !strings.Contains(out, "held by the usage limit of anthropic") {
		t.Errorf("explain does not say which limit holds it:\n%s", out)
	}
	c.MustRun("stop", s.ID)
}
