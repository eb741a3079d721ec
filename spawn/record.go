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
	"io"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/cgroup"
	"github.com/agentctl/agentctl/home"
	"github.com/agentctl/agentctl/internal/atomicfile"
	"github.com/agentctl/agentctl/proc"
)

// Record is launch.json: what was launched and the process that runs it.
// The shim writes it once, atomically, after the exec succeeded and before
// the start is reported to anyone.
type Record struct {
	ID      string            `json:"id"`
	Adapter string            `json:"adapter"`
	Name    string            `json:"name,omitempty"`
	Group   string            `json:"group,omitempty"`
	Labels  map[string]string `json:"labels,omitempty"`
	Argv    []string          `json:"argv"`
	// EnvKeys lists the environment's names only: values may be secrets.
	EnvKeys []string `json:"env_keys,omitempty"`
	// EnvSet names the variables given with --env (their values are in
	// home.EnvFile).
	EnvSet []string `json:"env_set,omitempty"`
	Cwd    string   `json:"cwd"`
	Prompt string   `json:"prompt,omitempty"`
	// PromptCut says Prompt is the head of a longer prompt, kept whole in
	// the session's home.PromptFile.
	PromptCut bool   `json:"prompt_cut,omitempty"`
	Model     string `json:"model,omitempty"`
	// PermissionMode and AgentArgs are what the launch asked of the agent
	// (a restart asks the same).
	PermissionMode string   `json:"permission_mode,omitempty"`
	AgentArgs      []string `json:"agent_args,omitempty"`
	// NativeID is the agent's own session id when known at launch.
	NativeID string `json:"native_id,omitempty"`
	// ResumeOf is the agentctl id whose native session this run continues.
	ResumeOf string `json:"resume_of,omitempty"`
	// Baseline is what the native session had counted when a resume
	// began: the run's own tokens and cost are the difference.
	Baseline *api.Usage `json:"baseline,omitempty"`
	// RestartOf is the agentctl id this run repeats.
	RestartOf string `json:"restart_of,omitempty"`
	// LaunchedFrom lists the sessions this one was started from, at any
	// depth (the caller's, and those they were started from): one
	// principal, which cannot answer its own prompts.
	LaunchedFrom []string  `json:"launched_from,omitempty"`
	StopSignal   string    `json:"stop_signal,omitempty"`
	CreatedAt    time.Time `json:"created_at"`

	// The agent: pid, process group and start stamp, first-hand.
	Process proc.Identity `json:"process"`
	PGID    int           `json:"pgid"`
	// The shim that holds the pty and will write exit.json.
	Shim proc.Identity `json:"shim"`
	Rows uint16        `json:"rows"`
	Cols uint16        `json:"cols"`
	// NotesDrawing says the monitor notes when the program first printed
	// text (Terminal.PrintedAt); monitors of older releases do not.
	NotesDrawing bool `json:"notes_drawing,omitempty"`
	// Protocol is the version of the monitor protocol the monitor speaks
	// (protocol.go); absent in version 1.
	Protocol int `json:"protocol,omitempty"`
	// Limits are the bounds the session's cgroup puts on it, if any.
	Limits *cgroup.Limits `json:"limits,omitempty"`
}

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
	if err := resp.Record.CheckProtocol(); err != nil {
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

// readJSON reads a record, without following a symbolic link and no more
// than maxRecord bytes of it.
func readJSON(path string, v any) error {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxRecord+1))
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	if len(b) > maxRecord {
		return fmt.Errorf("read %s: over the %d KiB a record may have", path, maxRecord>>10)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("parse %s: %w", path, err)
	}
	return nil
}

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
