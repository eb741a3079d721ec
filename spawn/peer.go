package spawn

import (
	"net"

	"github.com/agentctl/agentctl/proc"
)

// peerAllowed admits only connections from the owner or root.
func peerAllowed(conn net.Conn) bool {
	p, err := proc.PeerOf(conn)
	uid := p.UID
	return err == nil && proc.OwnerOrRoot(uid)
}
