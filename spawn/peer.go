package spawn

import (
	"net"
	"os"

	"github.com/agentctl/agentctl/proc"
)

// OwnerOrRoot reports whether uid may use this process's sockets: the same
// user, or root.
func OwnerOrRoot(uid int) bool { return uid == os.Getuid() || uid == 0 }

// peerAllowed admits only connections from OwnerOrRoot peers.
func peerAllowed(conn net.Conn) bool {
	p, err := proc.PeerOf(conn)
	uid := p.UID
	return err == nil && OwnerOrRoot(uid)
}
