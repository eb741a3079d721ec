package opencode

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/agentctl/agentctl/adapters"
	"github.com/agentctl/agentctl/adapters/attribute"
)

// limitMessage is the shape of the assistant message OpenCode 1.18 stores
// when an OpenAI-compatible provider answers 429 and it stops retrying: an
// APIError with the status.
const limitMessage = `{"id":"msg_1","sessionID":"ses_x","role":"assistant","providerID":"fake","modelID":"fake-model","time":{"created":1795730997000,"completed":1795731020286},"error":{"name":"APIError","data":{"message":"fakellm: usage limit reached; try again in 600s","statusCode":429,"isRetryable":true,"responseBody":"{\"error\":{\"type\":\"rate_limit_exceeded\"}}"}}}`

func TestLimitFromLastMessage(t *testing.T) {
	t.Parallel()
	at := time.UnixMilli(1795731020286)
	tests := []struct {
		name string
		msg  string
		want *adapters.LimitHit
	}{
		{"429", limitMessage, &adapters.LimitHit{Provider: "fake", Message: "fakellm: usage limit reached; try again in 600s", At: at, ResetsAt: at.Add(600 * time.Second).Truncate(time.Second)}},
		{"another API error", `{"role":"assistant","error":{"name":"APIError","data":{"message":"bad request","statusCode":400}}}`, nil},
		{"aborted", `{"role":"assistant","error":{"name":"MessageAbortedError"}}`, nil},
		{"status of another type", `{"role":"assistant","error":{"name":"APIError","data":{"message":"x","statusCode":"429"}}}`, nil},
		{"answered", `{"role":"assistant","finish":"stop","time":{"created":1,"completed":2}}`, nil},
	}
	for _, tt := range tests {
		var m messageData
		if err := json.Unmarshal([]byte(tt.msg), &m); err != nil {
			t.Fatal(err)
		}
		s := &session{id: "ses_x", last: lastOf(m)}
		got := s.native(attribute.Attribution{}).Limit
		switch {
		case (got == nil) != (tt.want == nil):
			t.Errorf("%s: limit %+v, want %+v", tt.name, got, tt.want)
		case got != nil && *got != *tt.want:
			t.Errorf("%s: limit %+v, want %+v", tt.name, *got, *tt.want)
		}
	}
}
