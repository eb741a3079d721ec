package proc

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
)

// ErrRemotePeer: the other end of a TCP connection is not a process of
// this machine (its address is not one of this network namespace's).
var ErrRemotePeer = errors.New("the connecting address is not on this machine")

// ErrPeerUnsupported: this system does not tell which process holds a TCP
// connection's other end.
var ErrPeerUnsupported = errors.New("the process behind a TCP connection is not known on this system")

// TCPPeer pins the process at the other end of a TCP connection accepted
// at local from remote, when remote is on this machine: the process that
// holds the socket whose own address is remote and whose peer is local.
// ErrRemotePeer when remote is another machine's; an ErrUnproven when it
// is this machine's but its process cannot be found (another user's, or
// it went away). A pid reused since is never taken for it: the process is
// pinned first, then seen to hold the socket still.
func TCPPeer(ctx context.Context, local, remote netip.AddrPort) (*Caller, error) {
	c, err := tcpPeer(ctx, unmapPort(local), unmapPort(remote))
	if err != nil {
		return nil, fmt.Errorf("the process at %s: %w", remote, err)
	}
	return c, nil
}

// unmapPort is a as the socket tables print it: an IPv4 address rather
// than v4-mapped, and no zone (else a link-local peer of this machine
// would be taken for another machine's).
func unmapPort(a netip.AddrPort) netip.AddrPort {
	return netip.AddrPortFrom(a.Addr().Unmap().WithZone(""), a.Port())
}
