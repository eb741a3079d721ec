package spawn

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/agentctl/agentctl/home"
	"github.com/agentctl/agentctl/internal/atomicfile"
)

// Health is health.json: what the monitor says of the session's output.
type Health struct {
	// DroppedBytes is how much output could not be written to the log.
	DroppedBytes int64 `json:"dropped_bytes,omitempty"`
	// DroppedSince is when the first byte was dropped.
	DroppedSince *time.Time `json:"dropped_since,omitempty"`
	// LastError is why the last write failed ("no space left on device").
	LastError string `json:"last_error,omitempty"`
	// WritingAgain is when the log took output again after dropping some.
	WritingAgain *time.Time `json:"writing_again,omitempty"`
}

// healthSlotSize is the space health.json is given.
const healthSlotSize = 1024

// healthReport keeps Health current in its slot, at most once a second
// while output is being dropped.
type healthReport struct {
	slot *atomicfile.Slot

	mu      sync.Mutex
	h       Health
	written time.Time
	failing bool
}

func newHealthReport(dir string) (*healthReport, error) {
	slot, err := atomicfile.NewSlot(filepath.Join(dir, home.HealthFile), healthSlotSize)
	if err != nil {
		return nil, err
	}
	return &healthReport{slot: slot}, nil
}

// wrote notes the outcome of one write of n bytes to the log, and says
// whether the log just stopped or started taking output again.
func (r *healthReport) wrote(n, written int, err error) (changed bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now().UTC()
	switch {
	case err != nil:
		r.h.DroppedBytes += int64(n - written)
		if r.h.DroppedSince == nil {
			r.h.DroppedSince = &now
		}
		r.h.LastError = err.Error()
		var pe *os.PathError
		if errors.As(err, &pe) {
			r.h.LastError = pe.Err.Error()
		}
		r.h.WritingAgain = nil
		changed = !r.failing
		if !changed && now.Sub(r.written) < time.Second {
			return false
		}
		r.failing = true
	case r.failing:
		r.failing = false
		r.h.WritingAgain = &now
		changed = true
	default:
		return false
	}
	r.written = now
	if b, err := json.Marshal(r.h); err == nil {
		r.slot.Put(b)
	}
	return changed
}

// ReadHealth reads a session's health.json: nil when it says nothing.
func ReadHealth(dir string) *Health {
	b, err := atomicfile.ReadSlot(filepath.Join(dir, home.HealthFile))
	if err != nil || len(b) == 0 {
		return nil
	}
	var h Health
	if json.Unmarshal(b, &h) != nil || h.DroppedBytes == 0 {
		return nil
	}
	return &h
}

// reserveExit allocates the exit record's space at the start.
func reserveExit(dir string) (*atomicfile.Slot, error) {
	return atomicfile.NewSlot(filepath.Join(dir, home.ExitReserve), 4096)
}

// removeReserve drops the exit record's space when it was not needed.
func removeReserve(dir string) { os.Remove(filepath.Join(dir, home.ExitReserve)) }
