package adapters

import (
	"regexp"
	"strings"
	"time"
)

// tryAgainRE finds the wait an OpenAI-style rate-limit message names:
// "Please try again in 20s.", "try again in 1m30s", "try again in 250ms".
var tryAgainRE = regexp.MustCompile(`(?i)try again in ((?:\d+(?:\.\d+)?(?:ms|h|m|s))+)`)

// TryAgainAt is when a provider's error text, recorded at at, says to try
// again; zero when it names no wait.
func TryAgainAt(text string, at time.Time) time.Time {
	m := tryAgainRE.FindStringSubmatch(text)
	if m == nil || at.IsZero() {
		return time.Time{}
	}
	d, err := time.ParseDuration(strings.ToLower(m[1]))
	if err != nil || d <= 0 || d > 31*24*time.Hour {
		return time.Time{}
	}
	return at.Add(d).Truncate(time.Second)
}

// The providers whose usage limits agents with a fixed provider meet, as
// limits name them (the names api.Provider gives a launch's).
const (
	ProviderAnthropic = "anthropic" // Claude Code
	ProviderOpenAI    = "openai"    // Codex
)
