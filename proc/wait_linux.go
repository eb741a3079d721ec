//go:build linux

package proc

import (
	"context"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// WaitExit blocks until the process id names has exited (or was never
// there), without polling: a pidfd becomes readable when its process ends,
// and the runtime's poller waits on it.
func WaitExit(ctx context.Context, id Identity) error {
	fd, err := unix.PidfdOpen(id.PID, unix.PIDFD_NONBLOCK)
	if err != nil {
		if err == unix.ESRCH {
			return nil
		}
		return waitExitPolling(ctx, id)
	}
	// The pid may have been reused before we opened it: check identity
	// after opening, when the pidfd pins the process.
	if !Alive(id) {
		unix.Close(fd)
		return nil
	}
	f := os.NewFile(uintptr(fd), "pidfd")
	defer f.Close()
	rc, err := f.SyscallConn()
	if err != nil {
		return waitExitPolling(ctx, id)
	}
	done := make(chan error, 1)
	go func() {
		done <- rc.Read(func(fd uintptr) bool {
			fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
			n, err := unix.Poll(fds, 0)
			return err == nil && n > 0
		})
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		f.SetReadDeadline(time.Now())
		<-done
		return ctx.Err()
	}
}

// waitExitPolling is for kernels without pidfd_open (before 5.3).
func waitExitPolling(ctx context.Context, id Identity) error {
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for Alive(id) {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
	return nil
}
