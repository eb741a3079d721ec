package service

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// State is the service's state as its service manager reports it.
type State string

const (
	StateNotInstalled State = "not-installed"
	StateRunning      State = "running"
	StateStarting     State = "starting"
	StateStopping     State = "stopping"
	StateStopped      State = "stopped"
	StateFailed       State = "failed"
	// StateUnknown: the service manager could not be asked.
	StateUnknown State = "unknown"
)

// Status is what `agentctl service status` reports.
type Status struct {
	Manager   string `json:"manager"` // "systemd" or "launchd"
	Scope     Scope  `json:"scope"`
	User      string `json:"user,omitempty"`
	Unit      string `json:"unit"` // systemd unit name or launchd label
	UnitPath  string `json:"unit_path,omitempty"`
	Installed bool   `json:"installed"`
	Enabled   bool   `json:"enabled"`
	Running   bool   `json:"running"`
	State     State  `json:"state"`
	PID       int    `json:"pid,omitempty"`
	// Restarts counts restarts by the service manager since the unit was
	// loaded, where the manager tells (systemd).
	Restarts *int   `json:"restarts,omitempty"`
	Home     string `json:"agentctl_home,omitempty"`
	Socket   string `json:"socket,omitempty"`
	// SocketPID is the process answering on the socket, 0 when none does.
	// Equal to PID once the service is up.
	SocketPID int `json:"socket_pid,omitempty"`
	// Logs says where the service's output goes.
	Logs string `json:"logs,omitempty"`
	// Detail explains an unknown or failed state.
	Detail string `json:"detail,omitempty"`
}

// InstallResult says what Install did.
type InstallResult struct {
	Status Status
	// Changed is false when the unit file was already exactly this one.
	Changed bool
	// Notes are things the user should know (lingering off, an auto-started
	// service that was replaced).
	Notes []string
}

// Controller installs and drives the agentctl service of one service
// manager.
type Controller interface {
	// Install writes the unit, enables it and starts it, replacing an
	// installed unit of the same name and an auto-started service on the
	// same AGENTCTL_HOME. It returns once the service answers on its socket.
	Install(ctx context.Context) (InstallResult, error)
	// Uninstall stops the service (its sessions keep running) and removes
	// everything Install created but AGENTCTL_HOME; it returns the removed
	// paths.
	Uninstall(ctx context.Context) ([]string, error)
	Start(ctx context.Context) (Status, error)
	Stop(ctx context.Context) (Status, error)
	Restart(ctx context.Context) (Status, error)
	Status(ctx context.Context) (Status, error)
}

// ErrNotInstalled is returned by Start, Stop and Restart when there is no
// unit to drive.
var ErrNotInstalled = errors.New("the agentctl service is not installed: run `agentctl service install`")

// ErrUnsupported says the machine has no service manager agentctl can use.
var ErrUnsupported = errors.New("no supported service manager")

// readyTimeout bounds the wait for a started service to answer.
const readyTimeout = 30 * time.Second

// waitReady polls status until the service's main process answers on the
// socket (or, without a socket, runs), the unit fails, or ctx ends.
func waitReady(ctx context.Context, spec Spec, status func(context.Context) (Status, error)) (Status, error) {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var last Status
	for {
		st, err := status(ctx)
		if err == nil {
			last = st
			switch {
			case st.State == StateFailed:
				return st, fmt.Errorf("the service failed to start (%s); its log: %s", st.Detail, st.Logs)
			case st.State == StateRunning && st.PID > 0 && (spec.SocketPath() == "" || st.SocketPID == st.PID):
				return st, nil
			}
		}
		select {
		case <-ctx.Done():
			if err != nil {
				return last, fmt.Errorf("wait for the service to start: %w", err)
			}
			if last.PID > 0 && spec.SocketPath() != "" {
				return last, fmt.Errorf("the service runs (pid %d) but does not answer on %s; its log: %s", last.PID, spec.SocketPath(), last.Logs)
			}
			return last, fmt.Errorf("the service did not start (state %s); its log: %s", last.State, last.Logs)
		case <-tick.C:
		}
	}
}

// fillSocket sets Status.Socket and Status.SocketPID.
func fillSocket(st *Status, spec Spec) {
	st.Home = spec.Home
	st.Socket = spec.SocketPath()
	if st.Socket == "" {
		return
	}
	if peer, err := socketPeer(st.Socket); err == nil {
		st.SocketPID = peer.PID
	}
}

// writeFileIfChanged writes data to path atomically (temp file, fsync,
// rename, fsync of the directory) unless the file already holds exactly
// data. It reports whether it wrote.
func writeFileIfChanged(path string, data []byte, perm os.FileMode) (bool, error) {
	if old, err := os.ReadFile(path); err == nil && string(old) == string(data) {
		return false, nil
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return false, fmt.Errorf("create %s: %w", dir, err)
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return false, fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name()) // fails harmlessly after the rename
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return false, fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Chmod(perm); err != nil {
		tmp.Close()
		return false, fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return false, fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return false, fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return false, fmt.Errorf("write %s: %w", path, err)
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync() // best effort: the rename is already visible
		d.Close()
	}
	return true, nil
}

// ensureHome creates AGENTCTL_HOME (0700) when missing, owned by the
// account the service runs as (uid/gid < 0: the caller's).
func ensureHome(home string, uid, gid int) error {
	if home == "" {
		return nil
	}
	if _, err := os.Stat(home); err == nil {
		return nil
	}
	if err := os.MkdirAll(home, 0o700); err != nil {
		return fmt.Errorf("create %s %s: %w", HomeEnv, home, err)
	}
	if uid >= 0 && uid != os.Getuid() {
		if err := os.Chown(home, uid, gid); err != nil {
			return fmt.Errorf("hand %s to uid %d: %w", home, uid, err)
		}
	}
	return nil
}

// removeIfExists removes path and reports whether it was there.
func removeIfExists(path string) (bool, error) {
	err := os.Remove(path)
	if err == nil {
		return true, nil
	}
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	return false, fmt.Errorf("remove %s: %w", path, err)
}

func fileExists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}
