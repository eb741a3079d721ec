package adapters

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
)

// MaxHookPayload bounds one integration report an adapter reads: an
// event's JSON, never a transcript.
const MaxHookPayload = 1 << 20

// MaxHookText bounds the tool input and text a HookFacts carries.
const MaxHookText = 4 << 10

// SentAt is the time of a report's "sent" field (ms since the epoch, by
// the integration's clock), zero when it says none or one out of reason
// (before 2020 or a day ahead): it is only ever a measure.
func SentAt(ms int64) time.Time {
	t := time.UnixMilli(ms)
	if ms <= 0 || t.Year() < 2020 || t.After(time.Now().Add(24*time.Hour)) {
		return time.Time{}
	}
	return t.UTC()
}

// DecodeHookPayload reads one integration report into v: a single JSON
// object, no larger than MaxHookPayload, with nothing after it. Fields v
// does not name are ignored (agents add fields between releases); the
// ReadHook that calls it checks the fields it needs.
func DecodeHookPayload(payload []byte, v any) error {
	if len(payload) > MaxHookPayload {
		return fmt.Errorf("report of %d bytes, more than %d", len(payload), MaxHookPayload)
	}
	trimmed := bytes.TrimSpace(payload)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return errors.New("report is not a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("read report: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("read report: data after its JSON object")
	}
	return nil
}
