package service

import (
	"context"
	"errors"
	"fmt"
	"net"
	"syscall"
	"time"

	"github.com/agentctl/agentctl/proc"
)

// socketPeer connects to the unix socket at path and returns the process
// that listens on it, as the kernel reports it.
func socketPeer(path string) (proc.Peer, error) {
	conn, err := net.DialTimeout("unix", path, time.Second)
	if err != nil {
		return proc.Peer{}, fmt.Errorf("connect to %s: %w", path, err)
	}
	defer conn.Close()
	p, err := proc.PeerOf(conn)
	if err != nil {
		return proc.Peer{}, fmt.Errorf("read peer of %s: %w", path, err)
	}
	return p, nil
}

// takeOver stops an agentctl service that answers on the socket but is not
// the unit's main process (unitPID; 0 when the unit is not running): an
// auto-started one, which would otherwise hold the lock the unit's service
// needs. Its sessions keep running: they never depend on the service. It
// returns the stopped pid, or 0.
func takeOver(ctx context.Context, socket string, unitPID, uid int) (int, error) {
	if socket == "" {
		return 0, nil
	}
	peer, err := socketPeer(socket)
	if err != nil || peer.PID == unitPID || peer.PID <= 0 {
		return 0, nil // nobody else answers
	}
	if peer.UID != uid {
		return 0, fmt.Errorf("%s is served by pid %d of uid %d, not by the service's account (uid %d): stop it first", socket, peer.PID, peer.UID, uid)
	}
	info, err := proc.Lookup(peer.PID)
	if err != nil {
		return 0, nil // gone already
	}
	if err := syscall.Kill(peer.PID, syscall.SIGTERM); err != nil {
		if errors.Is(err, syscall.ESRCH) {
			return 0, nil
		}
		return 0, fmt.Errorf("stop the running agentctl service (pid %d): %w", peer.PID, err)
	}
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for proc.Alive(info.Identity) {
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("the running agentctl service (pid %d) did not exit after SIGTERM: stop it with `agentctl daemon stop` and retry", peer.PID)
		case <-tick.C:
		}
	}
	return peer.PID, nil
}
