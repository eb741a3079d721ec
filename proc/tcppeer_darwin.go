//go:build darwin

package proc

import (
	"context"
	"net/netip"
)

// tcpPeer is not implemented on macOS, whose socket table is read through
// libproc: the caller says it cannot tell.
func tcpPeer(context.Context, netip.AddrPort, netip.AddrPort) (*Caller, error) {
	return nil, ErrPeerUnsupported
}
