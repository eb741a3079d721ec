package storeio

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/agentctl/agentctl/internal/envvar"
	"github.com/agentctl/agentctl/proc"
)

// StoreOf is an agent's rule for where its store is, given a HOME and the
// environment's variables: the rule the adapter applies to its own
// environment, applied to a process's.
type StoreOf func(home string, getenv func(string) string) string

// UsesStore reports whether process pid works on the store at want: it runs
// as this user, and by its own environment (HOME, and the agent's variables
// such as CLAUDE_CONFIG_DIR) the agent's store is want. Another user's
// process, or one under another HOME or config folder, belongs to another
// store however its argv reads. Where this system does not expose a
// process's environment (macOS), its user alone decides.
func UsesStore(snap *proc.Snapshot, pid int, want string, storeOf StoreOf) bool {
	uid, err := proc.Owner(pid)
	if err != nil || uid != os.Geteuid() {
		return false
	}
	env, err := snap.Environ(pid)
	if errors.Is(err, proc.ErrNoEnviron) {
		return true
	}
	if err != nil {
		return false
	}
	getenv := func(k string) string { return envvar.Value(env, k) }
	return SamePath(storeOf(getenv("HOME"), getenv), want)
}

// SamePath reports whether a and b name the same folder, through symlinks
// when their names differ.
func SamePath(a, b string) bool {
	if a == "" || b == "" {
		return false
	}
	if filepath.Clean(a) == filepath.Clean(b) {
		return true
	}
	ra, errA := filepath.EvalSymlinks(a)
	rb, errB := filepath.EvalSymlinks(b)
	return errA == nil && errB == nil && ra == rb
}

// ContendersWarning says why a session's status is unknown: live processes
// of its agent (pids) may be working on it, and nothing says which session
// each one runs. It stays unknown only while one of them lives.
func ContendersWarning(agent string, pids []int) string {
	slices.Sort(pids)
	pids = slices.Compact(pids)
	list := make([]string, len(pids))
	for i, p := range pids {
		list[i] = strconv.Itoa(p)
	}
	return fmt.Sprintf("unknown while %s pid %s lives: it may be working on this session, and nothing says which session it runs", agent, strings.Join(list, ", "))
}
