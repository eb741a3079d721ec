// Package supervisor is the agentctl service: the API on a unix socket, the
// session view (launch records ⊕ liveness ⊕ adapter discovery), and the
// client the CLI uses to talk to it.
package supervisor

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Home is the agentctl state directory ($AGENTCTL_HOME, default ~/.agentctl).
type Home string

// DefaultHome resolves AGENTCTL_HOME or ~/.agentctl.
func DefaultHome() (Home, error) {
	if h := os.Getenv("AGENTCTL_HOME"); h != "" {
		abs, err := filepath.Abs(h)
		if err != nil {
			return "", fmt.Errorf("resolve AGENTCTL_HOME: %w", err)
		}
		return Home(abs), nil
	}
	dir, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("find the home directory (set AGENTCTL_HOME): %w", err)
	}
	return Home(filepath.Join(dir, ".agentctl")), nil
}

// Socket is the service's unix socket.
func (h Home) Socket() string { return filepath.Join(string(h), "agentctl.sock") }

// LockFile is held by the running service.
func (h Home) LockFile() string { return filepath.Join(string(h), "daemon.lock") }

// DaemonLog receives an auto-started service's own log.
func (h Home) DaemonLog() string { return filepath.Join(string(h), "daemon.log") }

// Sessions is the folder of session folders.
func (h Home) Sessions() string { return filepath.Join(string(h), "sessions") }

// SessionDir is one session's folder.
func (h Home) SessionDir(id string) string { return filepath.Join(h.Sessions(), id) }

// Ensure creates the home and sessions folders with private permissions,
// and tightens an existing home that others could enter.
func (h Home) Ensure() error {
	if err := os.MkdirAll(h.Sessions(), 0o700); err != nil {
		return fmt.Errorf("create %s: %w", h.Sessions(), err)
	}
	st, err := os.Stat(string(h))
	if err != nil {
		return fmt.Errorf("check %s: %w", h, err)
	}
	if st.Mode().Perm()&0o077 != 0 {
		if err := os.Chmod(string(h), 0o700); err != nil {
			return fmt.Errorf("make %s private: %w", h, err)
		}
	}
	return nil
}

// NewID returns a new session id: 48 bits of milliseconds and 80 random
// bits in lower-case Crockford base32, 26 characters, sorting by creation.
func NewID(now time.Time) string {
	var b [16]byte
	ms := uint64(now.UnixMilli())
	binary.BigEndian.PutUint64(b[:8], ms<<16)
	rand.Read(b[6:])
	const alphabet = "0123456789abcdefghjkmnpqrstvwxyz"
	// 128 bits → 26 base32 digits (130 bits, the top two are zero).
	hi := binary.BigEndian.Uint64(b[:8])
	lo := binary.BigEndian.Uint64(b[8:])
	out := make([]byte, 26)
	for i := 25; i >= 0; i-- {
		out[i] = alphabet[lo&31]
		lo = lo>>5 | hi<<59
		hi >>= 5
	}
	return string(out)
}

// ValidID reports whether s can be a session id or an id prefix typed by a
// user: it must be safe as a single path element.
func ValidID(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for _, r := range s {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.'
		if !ok {
			return false
		}
	}
	return !strings.HasPrefix(s, ".")
}
