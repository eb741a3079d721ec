package web

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/netip"
	"os"
	"time"

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
	if uc, ok := ctx.Value(connKey{}).(*net.UnixConn); ok {
		return s.relayedUnix(r, uc)
	}
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

type connKey struct{}

// withConn keeps a request's connection in its context: relayed asks a
// unix socket's for its peer.
func withConn(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, connKey{}, c)
}

// listenUnix listens on path, mode 0600, replacing a socket nobody serves
// any more (a dashboard that was killed); one that answers is in use.
func listenUnix(path string) (net.Listener, error) {
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode().Type() != fs.ModeSocket {
			return nil, fmt.Errorf("%s is there and is not a socket", path)
		}
		if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
			c.Close()
			return nil, fmt.Errorf("a dashboard already serves %s", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, err
		}
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, err
	}
	// Before the chmod the token alone guards it.
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, err
	}
	return ln, nil
}

// relayedUnix is relayed for a request over Config.Socket, whose peer the
// kernel names.
func (s *Server) relayedUnix(r *http.Request, uc *net.UnixConn) (context.Context, error) {
	c, err := proc.PinPeer(uc)
	if err == nil {
		defer c.Close()
		err = c.Check()
	}
	if err != nil {
		s.log.Warn("web change refused: its process is not found", "remote", "unix", "err", err)
		return nil, api.Errorf(api.CodeForbidden, "agentctl web: the process that connected to %s: %v: changes are refused, since the service could not check that it is not a session answering itself", s.cfg.Socket, err)
	}
	return client.WithRelay(r.Context(), api.Relayed{PID: c.PID, Start: c.Start, Via: via(r)}), nil
}
