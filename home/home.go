// Package home is the on-disk layout of agentctl's state: $AGENTCTL_HOME,
// its files, the session folders and the names of the files in them, and
// session ids.
package home

import (
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Home is the agentctl state directory ($AGENTCTL_HOME, default ~/.agentctl).
type Home string

// Default resolves AGENTCTL_HOME or ~/.agentctl.
func Default() (Home, error) {
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

// File names inside a session's folder.
const (
	// LaunchFile is what was launched, written once by the session's
	// monitor after the exec succeeded.
	LaunchFile = "launch.json"
	// ExitFile is written once by the monitor when the agent ended.
	ExitFile = "exit.json"
	// LogFile is the raw terminal output (rotated).
	LogFile = "output.log"
	// SocketFile is the monitor's attach and control socket.
	SocketFile = "attach.sock"
	// ShimLog is the monitor's own log.
	ShimLog = "shim.log"
	// HealthFile is what the monitor says of the session's output while it
	// runs (bytes it could not log, since when, why), in space allocated at
	// the start so it can be written on a full disk.
	HealthFile = "health.json"
	// ExitReserve is space allocated at the start for the exit record,
	// which becomes ExitFile when the agent ends, also on a full disk.
	ExitReserve = ".exit.reserve"
	// PromptFile holds a prompt too long to keep in LaunchFile whole.
	PromptFile = "launch-prompt.txt"
	// NativeFile records a native session id learned after the start.
	NativeFile = "native.json"
	// LifecycleFile is what a session asked of the service before it
	// started (its lock and hooks), read again when it ends.
	LifecycleFile = "lifecycle.json"
	// EndedFile marks a session's end as announced, so a restarted service
	// does not announce it again.
	EndedFile = "ended.json"
	// EnvFile keeps the values of a session's --env (mode 0600: they may be
	// secrets), so a restart runs with them again.
	EnvFile = "env.json"
	// NameFile holds the name `agentctl rename` gave the session; it reads
	// over LaunchFile's, which is written once.
	NameFile = "name.txt"
	// QueuedFile is a queued session's record: the launch it asks for,
	// normalised, with the caller's environment (mode 0600). Its start
	// is claimed by renaming it ClaimedFile, its cancel by renaming it
	// CancelledFile: one rename, so it starts once or never.
	QueuedFile    = "queued.json"
	ClaimedFile   = "claimed.json"
	CancelledFile = "cancelled.json"
	// CgroupFile names the session's cgroup directories, written by its
	// monitor once the cgroup exists; none when the session has no cgroup.
	CgroupFile = "cgroup.json"
)

// PeakFile keeps the highest memory the service saw a session use, so the
// peak outlives the session and the service.
const PeakFile = "resources.json"

// SessionEnv names the variable every session's processes carry: the
// session's id. It marks what belongs to a session after the process tree
// no longer says (a child that called setsid and outlived its parent).
const SessionEnv = "AGENTCTL_SESSION_ID"

// Socket is the service's unix socket.
func (h Home) Socket() string { return filepath.Join(string(h), "agentctl.sock") }

// LockFile is held by the running service.
func (h Home) LockFile() string { return filepath.Join(string(h), "daemon.lock") }

// LockHolder returns the pid the running service wrote into its lock file
// (0 when there is none): a hint for messages and for sparing the service,
// never a liveness check.
func LockHolder(lockFile string) int {
	b, err := os.ReadFile(lockFile)
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}

// IntegrationsDir holds what `agentctl integrate` installed (backups of
// the files it changed, their records) and the decisions taken for sessions
// started by hand (IntegrationDecisions).
func (h Home) IntegrationsDir() string { return filepath.Join(string(h), "integrations") }

// IntegrationDecisions is the decisions.jsonl of the sessions started by
// hand, which have no folder of their own.
func (h Home) IntegrationDecisions() string {
	return filepath.Join(h.IntegrationsDir(), DecisionsFile)
}

// CacheDir holds what the adapters keep of their reads across restarts of
// the service (discovery caches): deleting it costs only speed.
func (h Home) CacheDir() string { return filepath.Join(string(h), "cache") }

// DaemonLog receives an auto-started service's own log.
func (h Home) DaemonLog() string { return filepath.Join(string(h), "daemon.log") }

// WebToken holds the web dashboard's token (mode 0600): whoever has it
// may act as the user from a browser.
func (h Home) WebToken() string { return filepath.Join(string(h), "web.token") }

// WebTLS holds the web dashboard's generated certificate and key.
func (h Home) WebTLS() string { return filepath.Join(string(h), "web-tls") }

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

// NewID returns a new session id: 80 random bits then 48 bits of
// milliseconds, in lower-case Crockford base32, 26 characters. The leading
// characters are random so that a short prefix tells apart sessions made in
// the same second (4 characters: one chance in a million per pair); the
// creation time is kept in the record, which is what lists sort by. Ids made
// before this scheme started with the time; they stay valid and resolvable.
func NewID(now time.Time) string {
	var r [10]byte
	rand.Read(r[:])
	out := make([]byte, 0, 26)
	// 80 random bits: 16 characters of 5 bits each.
	var acc uint32
	bits := 0
	for _, b := range r {
		acc = acc<<8 | uint32(b)
		bits += 8
		for bits >= 5 {
			bits -= 5
			out = append(out, idAlphabet[(acc>>bits)&31])
		}
	}
	// 48 bits of milliseconds: 10 characters (50 bits, the top two zero).
	ms := uint64(now.UnixMilli()) & (1<<48 - 1)
	for i := 9; i >= 0; i-- {
		out = append(out, idAlphabet[(ms>>(5*i))&31])
	}
	return string(out)
}

// idAlphabet is Crockford's base32 in lower case.
const idAlphabet = "0123456789abcdefghjkmnpqrstvwxyz"

// IDTime is the creation time an id of the current scheme carries in its
// last ten characters; false for an id that is not one (older ids, native
// ids).
func IDTime(id string) (time.Time, bool) {
	if len(id) != 26 {
		return time.Time{}, false
	}
	var ms uint64
	for _, c := range []byte(strings.ToLower(id[16:])) {
		i := strings.IndexByte(idAlphabet, c)
		if i < 0 {
			return time.Time{}, false
		}
		ms = ms<<5 | uint64(i)
	}
	if ms>>48 != 0 {
		return time.Time{}, false
	}
	return time.UnixMilli(int64(ms)), true
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
