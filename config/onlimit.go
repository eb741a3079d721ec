package config

import (
	"fmt"
	"time"

	"github.com/agentctl/agentctl/api"
)

// Defaults of what happens when a usage limit holds a session.
const (
	// DefaultResumeMargin is how long after a limit's reset a held session
	// is resumed: providers' clocks and windows are not to the second.
	DefaultResumeMargin = 2 * time.Minute
	// DefaultResumeInterval is the time between two resumes of one
	// provider's held sessions, so that a fleet does not hit the limit
	// again at once.
	DefaultResumeInterval = time.Minute
	// DefaultUnknownReset is how long a limit whose reset time the agent
	// does not give holds its provider, from when it was recorded.
	DefaultUnknownReset = time.Hour
	// DefaultResumePrompt is the message a resume after a limit sends.
	DefaultResumePrompt = "continue"
)

// LimitResume is config.json's "limit_resume": how held sessions are
// resumed after their limit resets (for those whose on_limit is resume).
type LimitResume struct {
	// Margin, Interval and UnknownReset are Go durations ("2m"); ""
	// means the default.
	Margin       string `json:"margin,omitempty"`
	Interval     string `json:"interval,omitempty"`
	UnknownReset string `json:"unknown_reset,omitempty"`
	// Prompt is the message the resumed run is given.
	Prompt string `json:"prompt,omitempty"`
}

// ResumePolicy is LimitResume parsed, with the defaults filled in.
type ResumePolicy struct {
	Margin, Interval, UnknownReset time.Duration
	Prompt                         string
}

// Policy parses r.
func (r LimitResume) Policy() (ResumePolicy, error) {
	p := ResumePolicy{Margin: DefaultResumeMargin, Interval: DefaultResumeInterval, UnknownReset: DefaultUnknownReset, Prompt: DefaultResumePrompt}
	for _, f := range []struct {
		key, val string
		into     *time.Duration
	}{{"margin", r.Margin, &p.Margin}, {"interval", r.Interval, &p.Interval}, {"unknown_reset", r.UnknownReset, &p.UnknownReset}} {
		if f.val == "" {
			continue
		}
		d, err := time.ParseDuration(f.val)
		if err != nil || d < 0 {
			return ResumePolicy{}, fmt.Errorf("limit_resume.%s %q: want a duration such as 2m", f.key, f.val)
		}
		*f.into = d
	}
	if r.Prompt != "" {
		p.Prompt = r.Prompt
	}
	return p, nil
}

// ValidOnLimit checks an on_limit value: "", wait or resume.
func ValidOnLimit(v string) error {
	switch v {
	case "", api.OnLimitWait, api.OnLimitResume:
		return nil
	}
	return fmt.Errorf("on_limit %q: want %s or %s", v, api.OnLimitWait, api.OnLimitResume)
}
