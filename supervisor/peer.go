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

// withPeer records the connecting process's uid in the request context.
func withPeer(ctx context.Context, c net.Conn) context.Context {
	uid := -1
	if p, err := proc.PeerOf(c); err == nil {
		uid = p.UID
	}
	return context.WithValue(ctx, peerKey{}, uid)
}

// onlyOwner refuses callers other than the service's own user (and root):
// the socket's mode already says so, this checks it per connection.
func onlyOwner(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		uid, ok := r.Context().Value(peerKey{}).(int)
		if !ok || !proc.OwnerOrRoot(uid) {
			writeError(w, api.Errorf(api.CodeForbidden, "uid %d may not use the agentctl service of uid %d", uid, os.Getuid()))
			return
		}
		next.ServeHTTP(w, r)
	})
}
