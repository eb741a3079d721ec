package claude

import (
	"testing"
	"time"

	"github.com/agentctl/agentctl/adapters"
)

// limitRec is the API error message Claude Code 2.1.330 writes when the
// API answers 429 rate_limit_error with x-should-retry: false (recorded
// from a real run against the fake model).
func limitRec(text string) string {
	return `{"parentUuid":"u1","isSidechain":false,"type":"assistant","uuid":"d6a2","timestamp":"2026-11-26T22:05:52.860Z","message":{"id":"e910","model":"<synthetic>","role":"assistant","stop_reason":"stop_sequence","stop_sequence":"","type":"message","usage":{"input_tokens":0,"output_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0},"content":[{"type":"text","text":"` + text + `"}]},"apiErrorIsTransient":false,"error":"rate_limit","isApiErrorMessage":true,"apiErrorStatus":429,"apiErrorType":"rate_limit_error","cwd":"/w/p","sessionId":"s","version":"2.1.330"}`
}

// A usage limit on the last turn is the session's Limit, with the reset
// time where the text gives one; any other API error is not, and a later
// turn clears it.
func TestDiscoverLimit(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 26, 22, 5, 52, 860e6, time.UTC)
	good := lines(userRec("do it"), assistantRec("m1", "done it", "end_turn", 10, 5))
	apiErr := `{"type":"assistant","isApiErrorMessage":true,"error":"unknown","apiErrorStatus":500,"message":{"id":"e","model":"<synthetic>","role":"assistant","content":[{"type":"text","text":"API Error: 500"}],"stop_reason":"stop_sequence"}}`
	tests := []struct {
		name    string
		content string
		want    *adapters.LimitHit
	}{
		{"limit last", good + lines(userRec("next"), limitRec("API Error: Request rejected (429) · usage limit reached")),
			&adapters.LimitHit{Provider: Provider, Message: "API Error: Request rejected (429) · usage limit reached", At: at}},
		{"limit with its reset", good + lines(userRec("next"), limitRec("Claude AI usage limit reached|1795748400")),
			&adapters.LimitHit{Provider: Provider, Message: "Claude AI usage limit reached|1795748400", At: at, ResetsAt: time.Unix(1795748400, 0).UTC()}},
		{"a later turn went through", lines(userRec("go"), limitRec("limit"), userRec("continue"), assistantRec("m2", "done", "end_turn", 1, 1)), nil},
		{"a new prompt after the limit", lines(userRec("go"), limitRec("limit"), userRec("continue")), nil},
		{"another API error", good + lines(userRec("next"), apiErr), nil},
		{"error of another shape", good + lines(userRec("next"), `{"type":"assistant","isApiErrorMessage":true,"error":{"x":1},"apiErrorStatus":"429","message":{"content":[]}}`), nil},
		{"no error", good, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			home := t.TempDir()
			id := "0b6c1b1e-0000-4000-8000-000000000001"
			writeTranscript(t, home, "/w/p", id, tt.content)
			s := discover(t, newAdapter(home))[id]
			switch {
			case (s.Limit == nil) != (tt.want == nil):
				t.Fatalf("limit %+v, want %+v", s.Limit, tt.want)
			case s.Limit != nil && *s.Limit != *tt.want:
				t.Errorf("limit %+v, want %+v", *s.Limit, *tt.want)
			}
			if len(s.Warnings) != 0 {
				t.Errorf("warnings %q", s.Warnings)
			}
		})
	}
}
