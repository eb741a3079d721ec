package supervisor

import (
	"context"
	"net"
	"net/http"
	"os"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/proc"
)

type peerKey struct{}

// withPeer records the connecting process (uid and pid) in the request
// context.
func withPeer(ctx context.Context, c net.Conn) context.Context {
	p, err := proc.PeerOf(c)
	if err != nil {
		p = proc.Peer{UID: -1}
	}
	return context.WithValue(ctx, peerKey{}, p)
}

// peerOf is the process that sent r (UID -1 when unknown).
func peerOf(r *http.Request) proc.Peer {
	p, ok := r.Context().Value(peerKey{}).(proc.Peer)
	if !ok {
		return proc.Peer{UID: -1}
	}
	return p
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
