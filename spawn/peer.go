package spawn

import (
	"net"
	"os"
)

// OwnerOrRoot reports whether uid may use this process's sockets: the same
// user, or root.
func OwnerOrRoot(uid int) bool { return uid == os.Getuid() || uid == 0 }

// peerAllowed admits only connections from OwnerOrRoot peers.
func peerAllowed(conn net.Conn) bool {
	uid, err := PeerUID(conn)
	return err == nil && OwnerOrRoot(uid)
}
