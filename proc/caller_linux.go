//go:build linux

package proc

import (
	"errors"

	"golang.org/x/sys/unix"
)

// pin is a pidfd (-1 when none could be opened: the process had exited, or
// the kernel predates pidfds and the start stamp alone tells).
type pin struct{ fd int }

var noPin = pin{fd: -1}

// pinPeerFD reads the peer of the unix socket fd. SO_PEERPIDFD (Linux 6.5)
// names the very process that connected, even when its pid was reused
// since; before it, the pid SO_PEERCRED reports is opened.
func pinPeerFD(fd int) (*Caller, error) {
	cred, err := unix.GetsockoptUcred(fd, unix.SOL_SOCKET, unix.SO_PEERCRED)
	if err != nil {
		return nil, err
	}
	c := &Caller{Peer: Peer{PID: int(cred.Pid), UID: int(cred.Uid)}, pin: noPin}
	if c.PID <= 0 {
		return c, nil // another pid namespace: Check refuses
	}
	pfd, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_PEERPIDFD)
	switch {
	case err == nil:
		unix.CloseOnExec(pfd)
		c.pin = pin{fd: pfd}
	case errors.Is(err, unix.ENOPROTOOPT):
		c.pin = openPin(c.PID)
	default:
		// The peer is gone (ESRCH, or EINVAL on kernels that cannot give
		// a pidfd of an exited process): Start stays 0.
		return c, nil
	}
	c.stamp()
	return c, nil
}

func openPin(pid int) pin {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return noPin
	}
	unix.CloseOnExec(fd)
	return pin{fd: fd}
}

// exited reports whether the pinned process has ended: its pidfd is
// readable (a zombie counts as ended).
func (p pin) exited() bool {
	if p.fd < 0 {
		return false
	}
	fds := []unix.PollFd{{Fd: int32(p.fd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(fds, 0)
		if err == unix.EINTR {
			continue
		}
		return err != nil || n > 0
	}
}

func (p pin) close() error {
	if p.fd < 0 {
		return nil
	}
	return unix.Close(p.fd)
}
