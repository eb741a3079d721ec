package resources

import (
	"encoding/json"
	"path/filepath"
	"time"

	"github.com/agentctl/agentctl/home"
	"github.com/agentctl/agentctl/internal/atomicfile"
)

// peakRecord is home.PeakFile.
type peakRecord struct {
	MemoryPeakBytes uint64    `json:"memory_peak_bytes"`
	At              time.Time `json:"at"`
}

// maxRecordSize bounds what is read of a record.
const maxRecordSize = 64 << 10

// readPeak is the peak a session's folder keeps, 0 when none.
func readPeak(dir string) uint64 {
	var r peakRecord
	if readRecord(filepath.Join(dir, home.PeakFile), &r) != nil {
		return 0
	}
	return r.MemoryPeakBytes
}

// writePeak keeps peak in the session's folder. It is replaced whole
// (never seen half-written) but not synced: a figure lost to a crash of
// the machine is worth less than a sync per growing session per refresh.
func writePeak(dir string, peak uint64, at time.Time) error {
	if dir == "" {
		return nil
	}
	b, err := json.Marshal(peakRecord{MemoryPeakBytes: peak, At: at.UTC()})
	if err != nil {
		return err
	}
	return atomicfile.WriteUnsynced(filepath.Join(dir, home.PeakFile), b, 0o600)
}

// exitPeak is the memory_peak_bytes of a session's exit record (the
// cgroup's high-water mark, written by its monitor), 0 when it has none.
func exitPeak(dir string) uint64 {
	var e struct {
		MemoryPeakBytes uint64 `json:"memory_peak_bytes"`
	}
	if readRecord(filepath.Join(dir, home.ExitFile), &e) != nil {
		return 0
	}
	return e.MemoryPeakBytes
}

// readRecord reads a small JSON record, no more than maxRecordSize bytes.
func readRecord(path string, v any) error { return atomicfile.ReadJSON(path, v, maxRecordSize) }
