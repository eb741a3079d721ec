package adapters

import (
	"testing"
	"time"
)

func TestTryAgainAt(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 26, 22, 0, 0, 0, time.UTC)
	tests := []struct {
		text string
		want time.Time
	}{
		{"429 fakellm: usage limit reached; try again in 600s", at.Add(10 * time.Minute)},
		{"Rate limit reached for gpt-x. Please try again in 1m30s.", at.Add(90 * time.Second)},
		{"Please Try Again In 20S", at.Add(20 * time.Second)},
		{"try again later", time.Time{}},
		{"try again in 99999h", time.Time{}},
		{"", time.Time{}},
	}
	for _, tt := range tests {
		if got := TryAgainAt(tt.text, at); !got.Equal(tt.want) {
			t.Errorf("TryAgainAt(%q) = %v, want %v", tt.text, got, tt.want)
		}
	}
}
