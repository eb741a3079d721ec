package proc

import (
	"fmt"
	"net"
	"os"
)

// Peer is the process at the other end of a unix socket, as the kernel
// reports it.
type Peer struct {
	PID int
	UID int
}

// OwnerOrRoot reports whether uid may use this process's sockets: the same
// user, or root. The service's socket and every monitor's follow this rule.
func OwnerOrRoot(uid int) bool { return uid == os.Getuid() || uid == 0 }

// PeerOf returns the process at the other end of conn, a unix socket.
func PeerOf(conn net.Conn) (Peer, error) {
	uc, ok := conn.(*net.UnixConn)
	if !ok {
		return Peer{}, fmt.Errorf("peer credentials: not a unix socket")
	}
	rc, err := uc.SyscallConn()
	if err != nil {
		return Peer{}, fmt.Errorf("peer credentials: %w", err)
	}
	var p Peer
	var perr error
	if err := rc.Control(func(fd uintptr) { p, perr = peerOfFD(int(fd)) }); err != nil {
		return Peer{}, fmt.Errorf("peer credentials: %w", err)
	}
	if perr != nil {
		return Peer{}, fmt.Errorf("peer credentials: %w", perr)
	}
	return p, nil
}
