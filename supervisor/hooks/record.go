package hooks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/agentctl/agentctl/internal/atomicfile"
	"github.com/agentctl/agentctl/proc"
)

// LogName is the hook log's file name in a session's folder, beside its
// output log.
const LogName = "hooks.log"

// RecordPath is where RunOnce records phase's run for the session whose
// folder is sessionDir.
func RecordPath(sessionDir, phase string) string {
	return filepath.Join(sessionDir, "hook-"+phase+".json")
}

// Record is a hook run as recorded in the session's folder. A record
// without EndedAt was claimed and never finished, as far as the file
// knows: see Status.
type Record struct {
	Result
	// StartTicks completes PID into the hook process's identity.
	StartTicks uint64 `json:"start_ticks,omitempty"`
	// Runner is the process that claimed the run (the service): while it
	// lives, an unfinished record is a run in progress.
	Runner   *proc.Identity `json:"runner,omitempty"`
	Finished bool           `json:"finished"`
}

// Status derives the state of the run: "ok", "failed", "timeout", "error"
// for a finished run; "running" while the hook's process or the process
// that runs it lives; "interrupted" when that process stopped while the
// hook ran, so how it ended is unknown.
func (r Record) Status() string {
	if r.Finished {
		return r.Outcome()
	}
	if r.PID > 0 && proc.Alive(proc.Identity{PID: r.PID, Start: r.StartTicks}) {
		return "running"
	}
	if r.Runner != nil && proc.Alive(*r.Runner) {
		return "running"
	}
	return "interrupted"
}

// RunOnce runs c for the session whose folder is sessionDir unless this
// phase was already started for it, and records the run in the folder.
//
// The rule that makes it at most once: the record file is created with
// O_EXCL (and fsynced, with its directory) before the hook starts, and a
// hook is only ever started by the caller that created it. A record that
// already exists, finished or not, is never run again: an unfinished one
// means the service stopped while the hook ran, and running it twice could
// repeat what it already did. ran reports whether this call ran the hook.
func RunOnce(ctx context.Context, sessionDir string, c Command) (rec Record, ran bool, err error) {
	path := RecordPath(sessionDir, c.Phase)
	if c.LogPath == "" {
		c.LogPath = filepath.Join(sessionDir, LogName)
	}
	var runner *proc.Identity
	if self, err := proc.Lookup(os.Getpid()); err == nil {
		runner = &self.Identity
	}
	claim := Record{Result: Result{Phase: c.Phase, Command: c.Script}, Runner: runner}
	if err := createExclusive(path, claim); err != nil {
		if errors.Is(err, fs.ErrExist) {
			rec, rerr := ReadRecord(sessionDir, c.Phase)
			return rec, false, rerr
		}
		return Record{}, false, fmt.Errorf("claim %s hook: %w", c.Phase, err)
	}
	var saveErr error
	onStart := c.OnStart
	c.OnStart = func(id proc.Identity) {
		running := Record{Result: Result{Phase: c.Phase, Command: c.Script, PID: id.PID, StartedAt: id.StartTime}, StartTicks: id.Start, Runner: runner}
		saveErr = atomicfile.WriteJSON(path, running, 0o600)
		if onStart != nil {
			onStart(id)
		}
	}
	res := Run(ctx, c)
	rec = Record{Result: res, Runner: runner, Finished: true}
	if err := atomicfile.WriteJSON(path, rec, 0o600); err != nil {
		return rec, true, fmt.Errorf("record %s hook result: %w", c.Phase, err)
	}
	if saveErr != nil {
		return rec, true, fmt.Errorf("record %s hook start: %w", c.Phase, saveErr)
	}
	return rec, true, nil
}

// ReadRecord reads phase's record for the session whose folder is
// sessionDir; fs.ErrNotExist when the phase never started. A record file
// that was created but not written (a crash right after the claim) reads
// as an unfinished run.
func ReadRecord(sessionDir, phase string) (Record, error) {
	b, err := os.ReadFile(RecordPath(sessionDir, phase))
	if err != nil {
		return Record{}, fmt.Errorf("read %s hook record: %w", phase, err)
	}
	var r Record
	if len(b) == 0 {
		return Record{Result: Result{Phase: phase}}, nil
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return Record{}, fmt.Errorf("read %s hook record: %w", phase, err)
	}
	return r, nil
}

// createExclusive creates path with v in it, failing with fs.ErrExist when
// it exists, and makes the creation durable before returning.
func createExclusive(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return atomicfile.SyncDir(filepath.Dir(path))
}
