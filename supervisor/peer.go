package supervisor

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"sync"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/proc"
	"github.com/agentctl/agentctl/session"
)

// peerListener pins the process at the other end of every connection it
// accepts (proc.PinPeer): what a request may do is decided for that very
// process, for as long as the connection lasts.
type peerListener struct{ net.Listener }

func (l peerListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	caller, err := proc.PinPeer(c)
	if err != nil {
		caller = proc.UnknownCaller()
	}
	return &peerConn{Conn: c, caller: caller}, nil
}

// peerConn is an accepted connection with its pinned peer, let go when the
// connection closes (also after a hijack: its new owner closes it).
type peerConn struct {
	net.Conn
	caller *proc.Caller
	once   sync.Once
}

func (c *peerConn) Close() error {
	c.once.Do(func() { c.caller.Close() })
	return c.Conn.Close()
}

// withPeer puts the connection's pinned peer in its requests' context.
func withPeer(ctx context.Context, c net.Conn) context.Context {
	caller := proc.UnknownCaller()
	if pc, ok := c.(*peerConn); ok {
		caller = pc.caller
	}
	return session.WithCaller(ctx, caller)
}

// peerOf is the process that sent r (UID -1 when unknown).
func peerOf(r *http.Request) *proc.Caller {
	if c := session.CallerOf(r.Context()); c != nil {
		return c
	}
	return proc.UnknownCaller()
}

// onlyOwner refuses callers other than the service's own user (and root):
// the socket's mode already says so, this checks it per connection.
func onlyOwner(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		uid := peerOf(r).UID
		if !proc.OwnerOrRoot(uid) {
			writeError(w, api.Errorf(api.CodeForbidden, "uid %d may not use the agentctl service of uid %d", uid, os.Getuid()))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// withRelayed pins the process a relay (the web dashboard) says a request
// is made for (api.RelayedHeader) and puts it in the request's context:
// what the request may do is then decided for that process as well as for
// the caller (session.WithRelayed). A process that is no longer the one
// named is pinned as gone, and refused wherever who asks matters; one of
// another user is refused here, as its caller would be.
func withRelayed(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := r.Header.Get(api.RelayedHeader)
		if h == "" {
			next.ServeHTTP(w, r)
			return
		}
		var rel api.Relayed
		if err := json.Unmarshal([]byte(h), &rel); err != nil || rel.PID <= 0 {
			writeError(w, api.Errorf(api.CodeInvalid, "header %s: want {\"pid\": N, \"start\": N}", api.RelayedHeader))
			return
		}
		if err := session.CheckVia(rel.Via); err != nil {
			writeError(w, fmt.Errorf("header %s: %w", api.RelayedHeader, err))
			return
		}
		caller := proc.PinIdentity(proc.Identity{PID: rel.PID, Start: rel.Start})
		defer caller.Close()
		if caller.Start != 0 && !proc.OwnerOrRoot(caller.UID) {
			writeError(w, api.Errorf(api.CodeForbidden, "%s, relayed for pid %d: uid %d may not use the agentctl service of uid %d", rel.Via, rel.PID, caller.UID, os.Getuid()))
			return
		}
		next.ServeHTTP(w, r.WithContext(session.WithRelayed(r.Context(), caller, rel.Via)))
	})
}
