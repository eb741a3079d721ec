package proc

import (
	"errors"
	"fmt"
	"net"
	"sync"
)

// ErrUnproven: the process that asks cannot be told any more (it exited,
// or its pid is not known here), so nothing that depends on who asks may be
// granted.
var ErrUnproven = errors.New("cannot prove who is asking")

// Caller is the process at the other end of a connection, pinned when the
// connection was accepted: a pidfd where the kernel has one (Linux), and
// the start stamp of the pid everywhere. Every later Check is about that
// very process, so a pid that exited, or was reused, is never taken for it.
// A Caller holds a file descriptor until Close.
type Caller struct {
	Peer
	// Start is the start stamp of Peer.PID read at accept; 0 when the
	// process had exited by then.
	Start uint64

	mu     sync.Mutex
	pin    pin
	closed bool
}

// UnknownCaller is a caller whose credentials could not be read: uid -1,
// which no rule lets through.
func UnknownCaller() *Caller { return &Caller{Peer: Peer{UID: -1}, pin: noPin} }

// PinPeer pins the process at the other end of conn, a unix socket.
func PinPeer(conn net.Conn) (*Caller, error) {
	uc, ok := conn.(*net.UnixConn)
	if !ok {
		return nil, fmt.Errorf("peer credentials: not a unix socket")
	}
	rc, err := uc.SyscallConn()
	if err != nil {
		return nil, fmt.Errorf("peer credentials: %w", err)
	}
	var c *Caller
	var perr error
	if err := rc.Control(func(fd uintptr) { c, perr = pinPeerFD(int(fd)) }); err != nil {
		return nil, fmt.Errorf("peer credentials: %w", err)
	}
	if perr != nil {
		return nil, fmt.Errorf("peer credentials: %w", perr)
	}
	return c, nil
}

// PinProcess pins a process known by its pid (one the caller started, or
// itself), as PinPeer pins a connection's peer.
func PinProcess(pid, uid int) *Caller {
	c := &Caller{Peer: Peer{PID: pid, UID: uid}, pin: openPin(pid)}
	c.stamp()
	return c
}

// PinIdentity pins the process a relay names by its pid and start stamp,
// as its user: one that is not that process any more (it exited, its pid
// was reused) is pinned as gone, and Check refuses it.
func PinIdentity(id Identity) *Caller {
	if id.PID <= 0 {
		return UnknownCaller()
	}
	uid, err := Owner(id.PID)
	if err != nil {
		uid = -1
	}
	c := PinProcess(id.PID, uid)
	if c.Start != id.Start {
		c.Start = 0
	}
	return c
}

// stamp reads the start stamp of the pinned pid, then checks that the pin
// still holds a live process: the stamp was then read from that process.
func (c *Caller) stamp() {
	info, err := Lookup(c.PID)
	if err != nil || info.Zombie || c.pin.exited() {
		c.Start = 0
		return
	}
	c.Start = info.Start
}

// Check returns nil while the process that connected still runs; else an
// ErrUnproven that says why.
func (c *Caller) Check() error {
	if c == nil || c.PID <= 0 {
		return fmt.Errorf("%w: the connecting process's pid is not known here (another pid namespace?)", ErrUnproven)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	gone := fmt.Errorf("%w: the process that connected (pid %d) has exited", ErrUnproven, c.PID)
	if c.Start == 0 || c.closed || c.pin.exited() {
		return gone
	}
	info, err := Lookup(c.PID)
	if err != nil || info.Zombie || info.Start != c.Start {
		return gone
	}
	return nil
}

// Close lets the pinned process go (closes its pidfd); later Checks fail.
func (c *Caller) Close() error {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	return c.pin.close()
}
