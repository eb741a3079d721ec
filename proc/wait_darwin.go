//go:build darwin

package proc

import (
	"context"
	"fmt"

	"golang.org/x/sys/unix"
)

// WaitExit blocks until the process has exited, with kqueue's EVFILT_PROC
// NOTE_EXIT, which works for any process we may see, not only children.
func WaitExit(ctx context.Context, id Identity) error {
	kq, err := unix.Kqueue()
	if err != nil {
		return fmt.Errorf("wait for pid %d: %w", id.PID, err)
	}
	defer unix.Close(kq)
	ev := unix.Kevent_t{Ident: uint64(id.PID), Filter: unix.EVFILT_PROC, Flags: unix.EV_ADD | unix.EV_ONESHOT, Fflags: unix.NOTE_EXIT}
	if _, err := unix.Kevent(kq, []unix.Kevent_t{ev}, nil, nil); err != nil {
		if err == unix.ESRCH {
			return nil
		}
		return fmt.Errorf("wait for pid %d: %w", id.PID, err)
	}
	if !Alive(id) {
		return nil
	}
	done := make(chan error, 1)
	go func() {
		out := make([]unix.Kevent_t, 1)
		for {
			// Wake every second to notice a cancelled context.
			ts := unix.Timespec{Sec: 1}
			n, err := unix.Kevent(kq, nil, out, &ts)
			if err != nil && err != unix.EINTR {
				done <- err
				return
			}
			if n > 0 {
				done <- nil
				return
			}
			if ctx.Err() != nil {
				done <- ctx.Err()
				return
			}
		}
	}()
	return <-done
}
