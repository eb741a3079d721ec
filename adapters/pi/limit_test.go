package pi

import (
	"testing"
	"time"

	"github.com/agentctl/agentctl/adapters"
)

// piLimitRecord is the assistant message Pi 0.73 writes when an
// OpenAI-compatible provider answers 429 (from a real run against the
// fake model); it writes one per try.
const piLimitRecord = `{"type":"message","id":"8ac31613","parentId":"8a577cf9","timestamp":"2026-11-26T22:09:32.841Z","message":{"role":"assistant","content":[],"api":"openai-completions","provider":"fakeopenai","model":"fake-model","usage":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"error","timestamp":1795730971579,"errorMessage":"429 fakellm: usage limit reached; try again in 600s"}}`

func TestLimitFromTail(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 26, 22, 9, 32, 841e6, time.UTC)
	user := `{"type":"message","id":"8a577cf9","parentId":null,"timestamp":"2026-11-26T22:09:10.000Z","message":{"role":"user","content":[{"type":"text","text":"go"}]}}`
	other := `{"type":"message","id":"9","parentId":"8a577cf9","timestamp":"2026-11-26T22:09:32.841Z","message":{"role":"assistant","content":[],"provider":"fakeopenai","model":"fake-model","stopReason":"error","errorMessage":"400 bad request"}}`
	answer := `{"type":"message","id":"a","parentId":"8ac31613","timestamp":"2026-11-26T22:19:40.000Z","message":{"role":"assistant","content":[{"type":"text","text":"done"}],"provider":"fakeopenai","model":"fake-model","stopReason":"stop"}}`
	tests := []struct {
		name  string
		lines []string
		want  *adapters.LimitHit
	}{
		{"429 last", []string{user, piLimitRecord}, &adapters.LimitHit{Provider: "fakeopenai", Message: "429 fakellm: usage limit reached; try again in 600s", At: at, ResetsAt: at.Add(600 * time.Second).Truncate(time.Second)}},
		{"another error", []string{user, other}, nil},
		{"answered after", []string{user, piLimitRecord, answer}, nil},
	}
	for _, tt := range tests {
		var x facts
		var lines [][]byte
		for _, l := range tt.lines {
			lines = append(lines, []byte(l))
		}
		x.tailRecords(lines)
		got := x.limit()
		switch {
		case (got == nil) != (tt.want == nil):
			t.Errorf("%s: limit %+v, want %+v", tt.name, got, tt.want)
		case got != nil && *got != *tt.want:
			t.Errorf("%s: limit %+v, want %+v", tt.name, *got, *tt.want)
		}
	}
}
