package adapters

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// MaxHookPayload bounds one integration report an adapter reads: an
// event's JSON, never a transcript.
const MaxHookPayload = 1 << 20

// MaxHookText bounds the tool input and text a HookFacts carries.
const MaxHookText = 4 << 10

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
