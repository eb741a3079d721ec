//go:build darwin

package proc

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/shirou/gopsutil/v4/process"
	"golang.org/x/sys/unix"
)

// p_stat's zombie and stopped states in <sys/proc.h>.
const (
	sStop = 4
	sZomb = 5
)

func fromKinfo(k *unix.KinfoProc) Info {
	tv := k.Proc.P_starttime
	usec := uint64(tv.Sec)*1e6 + uint64(tv.Usec)
	return Info{
		Identity: Identity{PID: int(k.Proc.P_pid), Start: usec, StartTime: time.UnixMicro(int64(usec))},
		PPID:     int(k.Eproc.Ppid),
		PGID:     int(k.Eproc.Pgid),
		SID:      sid(int(k.Proc.P_pid)),
		Zombie:   k.Proc.P_stat == sZomb,
		Stopped:  k.Proc.P_stat == sStop,
	}
}

func sid(pid int) int {
	s, err := unix.Getsid(pid)
	if err != nil {
		return 0
	}
	return s
}

func lookup(pid int) (Info, error) {
	k, err := unix.SysctlKinfoProc("kern.proc.pid", pid)
	if err != nil {
		return Info{}, fmt.Errorf("look up pid %d: %w", pid, err)
	}
	if k.Proc.P_pid != int32(pid) {
		return Info{}, fmt.Errorf("look up pid %d: %w", pid, ErrNotFound)
	}
	return fromKinfo(k), nil
}

func table() ([]Info, error) {
	ks, err := unix.SysctlKinfoProcSlice("kern.proc.all")
	if err != nil {
		return nil, fmt.Errorf("read process table: %w", err)
	}
	out := make([]Info, 0, len(ks))
	for i := range ks {
		out = append(out, fromKinfo(&ks[i]))
	}
	return out, nil
}

// Cmdline returns the argv of pid.
func Cmdline(pid int) ([]string, error) {
	p, err := process.NewProcess(int32(pid))
	if err != nil {
		return nil, fmt.Errorf("read cmdline of %d: %w", pid, err)
	}
	return p.CmdlineSliceWithContext(context.Background())
}

// Cwd returns the working directory of pid.
func Cwd(pid int) (string, error) {
	p, err := process.NewProcess(int32(pid))
	if err != nil {
		return "", fmt.Errorf("read cwd of %d: %w", pid, err)
	}
	return p.CwdWithContext(context.Background())
}

// WritableFiles returns the paths pid has open for writing. The open
// files macOS lists carry no access mode: every open file is returned.
func WritableFiles(pid int) ([]string, error) { return OpenFiles(pid) }

// OpenFiles returns the paths pid has open.
func OpenFiles(pid int) ([]string, error) {
	p, err := process.NewProcess(int32(pid))
	if err != nil {
		return nil, fmt.Errorf("list open files of %d: %w", pid, err)
	}
	fs, err := p.OpenFilesWithContext(context.Background())
	if err != nil && !errors.Is(err, context.Canceled) {
		return nil, fmt.Errorf("list open files of %d: %w", pid, err)
	}
	out := make([]string, 0, len(fs))
	for _, f := range fs {
		out = append(out, f.Path)
	}
	return out, nil
}

// Owner returns the user id pid runs as (its effective uid).
func Owner(pid int) (int, error) {
	k, err := unix.SysctlKinfoProc("kern.proc.pid", pid)
	if err != nil {
		return 0, fmt.Errorf("owner of %d: %w", pid, err)
	}
	if k.Proc.P_pid != int32(pid) {
		return 0, fmt.Errorf("owner of %d: %w", pid, ErrNotFound)
	}
	return int(k.Eproc.Ucred.Uid), nil
}
