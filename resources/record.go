package resources

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
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

// readRecord reads a small JSON record, without following a symbolic
// link, refusing one past maxRecordSize.
func readRecord(path string, v any) error {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxRecordSize+1))
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	if len(b) > maxRecordSize {
		return fmt.Errorf("read %s: over the %d KiB a record may have", path, maxRecordSize>>10)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("parse %s: %w", path, err)
	}
	return nil
}
