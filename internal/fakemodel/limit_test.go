package fakemodel

import (
	"net/http"
	"strconv"
	"testing"
	"time"
)

// Each protocol's usage-limit error has the shape its real provider sends
// and its agent acts on, with the reset time where the provider gives one.
func TestLimitShapes(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	before := time.Now()
	tests := []struct {
		path   string
		header map[string]string // headers that must be there
		check  func(v map[string]any, resetAt int64) bool
	}{
		{"/v1/messages",
			map[string]string{"x-should-retry": "false", "anthropic-ratelimit-unified-status": "rejected",
				"anthropic-ratelimit-unified-representative-claim": "five_hour", "anthropic-ratelimit-unified-5h-status": "rejected"},
			func(v map[string]any, _ int64) bool {
				return v["type"] == "error" && field(v, "error", "type") == "rate_limit_error" && field(v, "error", "message") == LimitMessage
			}},
		{"/v1/responses",
			map[string]string{"x-codex-primary-used-percent": "100", "x-codex-primary-window-minutes": "300"},
			func(v map[string]any, resetAt int64) bool {
				return field(v, "error", "type") == "usage_limit_reached" && field(v, "error", "resets_at") == float64(resetAt) &&
					field(v, "error", "resets_in_seconds") != nil
			}},
		{"/v1/chat/completions", nil,
			func(v map[string]any, _ int64) bool {
				return field(v, "error", "type") == "rate_limit_exceeded" && field(v, "error", "code") == "rate_limit_exceeded"
			}},
	}
	for _, tt := range tests {
		body := map[string]any{"stream": true, "messages": []any{map[string]any{"role": "user", "content": "go [[limit: 120]]"}}}
		if tt.path == "/v1/responses" {
			body = map[string]any{"stream": true, "input": "go [[limit: 120]]"}
		}
		resp := post(t, srv.URL()+tt.path, body, nil)
		v := decodeJSON(t, resp.Body)
		if resp.StatusCode != http.StatusTooManyRequests {
			t.Errorf("%s: status %d, want 429", tt.path, resp.StatusCode)
		}
		var resetAt int64
		if tt.path == "/v1/messages" {
			var err error
			if resetAt, err = strconv.ParseInt(resp.Header.Get("anthropic-ratelimit-unified-reset"), 10, 64); err != nil {
				t.Errorf("%s: unified reset %q: %v", tt.path, resp.Header.Get("anthropic-ratelimit-unified-reset"), err)
			}
		} else if tt.path == "/v1/responses" {
			resetAt = int64(field(v, "error", "resets_at").(float64))
		}
		if resetAt != 0 && (resetAt < before.Add(119*time.Second).Unix() || resetAt > time.Now().Add(121*time.Second).Unix()) {
			t.Errorf("%s: resets at %d, want about 120 s after %d", tt.path, resetAt, before.Unix())
		}
		for k, want := range tt.header {
			if got := resp.Header.Get(k); got != want {
				t.Errorf("%s: header %s = %q, want %q", tt.path, k, got, want)
			}
		}
		if !tt.check(v, resetAt) {
			t.Errorf("%s: body %v", tt.path, v)
		}
	}
}

// LimitUntil answers every request with the limit until its time, and
// normally after it.
func TestLimitUntil(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	body := map[string]any{"messages": []any{map[string]any{"role": "user", "content": "hello"}}}
	srv.LimitUntil(time.Now().Add(time.Hour))
	resp := post(t, srv.URL()+"/v1/chat/completions", body, nil)
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("while limited: status %d, want 429", resp.StatusCode)
	}
	srv.LimitUntil(time.Now().Add(-time.Second))
	resp = post(t, srv.URL()+"/v1/chat/completions", body, nil)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("after the reset: status %d, want 200", resp.StatusCode)
	}
}
