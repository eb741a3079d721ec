// Package spawn starts sessions and keeps them: the per-session monitor
// ("shim") that owns the pty, copies output to the log, reaps the agent and
// writes its exit record; the records on disk; and signalling a session's
// whole process tree.
package spawn

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/agentctl/agentctl/cgroup"
	"github.com/agentctl/agentctl/home"
	"github.com/agentctl/agentctl/internal/atomicfile"
	"github.com/agentctl/agentctl/proc"
)

// ExitRecord is exit.json, written once by the shim when the agent ended.
type ExitRecord struct {
	// ExitCode is set when the process exited by itself.
	ExitCode *int `json:"exit_code,omitempty"`
	// Signal names the signal that killed it ("SIGKILL"), if one did.
	Signal  string    `json:"signal,omitempty"`
	EndedAt time.Time `json:"ended_at"`
	// StoppedBy says the stop was asked for ("agentctl stop").
	StoppedBy string `json:"stopped_by,omitempty"`
	// Protocol is the version of the monitor protocol the record is
	// written in (protocol.go); absent in version 1.
	Protocol int `json:"protocol,omitempty"`
	// MemoryPeakBytes is the most memory the session's cgroup used, read
	// before it was removed; absent without a cgroup.
	MemoryPeakBytes int64 `json:"memory_peak_bytes,omitempty"`
	// OOM says the kernel's OOM killer ended a process of the session (it
	// reached its memory limit).
	OOM bool `json:"oom,omitempty"`
}

// ReadRecord reads a session folder's launch.json.
func ReadRecord(dir string) (Record, error) {
	var r Record
	if err := readJSON(filepath.Join(dir, home.LaunchFile), &r); err != nil {
		return Record{}, err
	}
	if r.ID == "" || len(r.Argv) == 0 {
		return Record{}, fmt.Errorf("read %s: missing id or argv", filepath.Join(dir, home.LaunchFile))
	}
	return r, nil
}

// AskRecord asks a running session's monitor for its launch record: the
// truth when launch.json on disk was damaged. The record of a monitor whose
// version this agentctl does not speak is refused: written again from what
// this agentctl understands of it, it would lose what it does not.
func AskRecord(ctx context.Context, dir string) (Record, error) {
	resp, err := call(ctx, dir, controlRequest{Op: "record"}, inputTimeout)
	if err != nil {
		return Record{}, err
	}
	if resp.Record == nil {
		return Record{}, fmt.Errorf("the session monitor sent no record")
	}
	if err := CheckProtocol(*resp.Record); err != nil {
		return Record{}, err
	}
	return *resp.Record, nil
}

// RepairRecord writes rec as launch.json again.
func RepairRecord(dir string, rec Record) error {
	return atomicfile.WriteJSON(filepath.Join(dir, home.LaunchFile), rec, 0o600)
}

// ReadExit reads exit.json; it returns (nil, nil) when there is none yet.
func ReadExit(dir string) (*ExitRecord, error) {
	var e ExitRecord
	err := readJSON(filepath.Join(dir, home.ExitFile), &e)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &e, nil
}

// maxRecord bounds what is read of a record: a record is small (a long
// prompt is kept beside it), and a damaged or planted huge one must not
// make every list slow.
const maxRecord = 1 << 20

// readJSON reads a record, no more than maxRecord bytes of it.
func readJSON(path string, v any) error { return atomicfile.ReadJSON(path, v, maxRecord) }

// writeExit writes exit.json once, into slot (space reserved at the start)
// when there is one.
func writeExit(dir string, e ExitRecord, slot *atomicfile.Slot) error {
	e.Protocol = MonitorProtocol
	path := filepath.Join(dir, home.ExitFile)
	if _, err := os.Stat(path); err == nil {
		return nil // written once: a second writer keeps the first answer
	}
	if slot != nil {
		b, err := json.MarshalIndent(e, "", "  ")
		if err != nil {
			return err
		}
		if err := slot.CommitAs(path, append(b, '\n')); err == nil {
			return nil
		}
	}
	return atomicfile.WriteJSON(path, e, 0o600)
}

// RecordKill writes the exit record of an agent that agentctl itself
// killed with SIGKILL while its monitor could not (frozen or gone): the
// kill is known first-hand, so the session reads killed, not lost. An
// exit record already there is kept.
func RecordKill(dir string, by string) error {
	return writeExit(dir, ExitRecord{Signal: "SIGKILL", EndedAt: time.Now().UTC(), StoppedBy: by}, nil)
}

// ReadCgroup reads a session folder's cgroup.json: its cgroup's
// directories, empty when it has none.
func ReadCgroup(dir string) (cgroup.Paths, error) {
	var p cgroup.Paths
	err := readJSON(filepath.Join(dir, home.CgroupFile), &p)
	if errors.Is(err, os.ErrNotExist) {
		return cgroup.Paths{}, nil
	}
	return p, err
}

// State is a session's status derived from its records and liveness.
type State struct {
	Record Record
	Exit   *ExitRecord
	// Running: the agent process is alive with its recorded start stamp.
	Running bool
	// ShimAlive: the shim still holds the pty (it writes exit.json last).
	ShimAlive bool
}

// Derive re-derives a session's state now, from disk and the process table.
func Derive(dir string, rec Record) (State, error) {
	st := State{Record: rec}
	exit, err := ReadExit(dir)
	if err != nil {
		return st, err
	}
	if exit != nil {
		st.Exit = exit
		return st, nil
	}
	st.Running = proc.Alive(rec.Process)
	st.ShimAlive = proc.Alive(rec.Shim)
	if !st.Running {
		// The agent may have ended between the two reads: the shim writes
		// exit.json right after it reaps the agent.
		if exit, err := ReadExit(dir); err == nil && exit != nil {
			st.Exit = exit
		}
	}
	return st, nil
}
