package web

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/netip"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/client"
	"github.com/agentctl/agentctl/proc"
)

// relayed is r's context carrying the process that sent r, when that
// process is on this machine (client.WithRelay): the service then holds
// it to the rules `agentctl approve`, `send` and `attach` are held to,
// and a session that read the token still cannot answer itself through
// the dashboard. A browser on another machine (a tailnet, TLS) is not a
// process here; the token and TLS guard it as before. A peer of this
// machine whose process cannot be found (another user's, or gone) is
// refused: the service could not tell it is not a session. Looked up for
// changes only: reading needs no relay.
func (s *Server) relayed(r *http.Request) (context.Context, error) {
	ctx := r.Context()
	var local netip.AddrPort
	if a, ok := ctx.Value(http.LocalAddrContextKey).(*net.TCPAddr); ok {
		local = a.AddrPort()
	}
	remote, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return nil, api.Errorf(api.CodeForbidden, "agentctl web: the connecting address %q is not one: changes are refused", r.RemoteAddr)
	}
	c, err := proc.TCPPeer(ctx, local, remote)
	switch {
	case errors.Is(err, proc.ErrRemotePeer), errors.Is(err, proc.ErrPeerUnsupported):
		return ctx, nil
	case err != nil:
		s.log.Warn("web change refused: its process is not found", "remote", r.RemoteAddr, "err", err)
		return nil, api.Errorf(api.CodeForbidden, "agentctl web: %v: changes are refused, since the service could not check that it is not a session answering itself (make them from a browser of your own user on this machine, or over TLS from another)", err)
	}
	// The service pins the process again from its pid and start stamp;
	// this pin need not outlive the request.
	defer c.Close()
	return client.WithRelay(ctx, api.Relayed{PID: c.PID, Start: c.Start, Via: via(r)}), nil
}
