// Package locks keeps the directory lock table: manual locks a user takes
// and releases, and automatic locks held for a session's process, released
// the moment that process is seen gone. The table lives in locks.json,
// rewritten atomically on every change.
package locks

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentctl/agentctl/internal/atomicfile"
	"github.com/agentctl/agentctl/proc"
)

// Kind says who holds a lock.
type Kind string

const (
	// Auto: held for a session, for as long as its process lives.
	Auto Kind = "auto"
	// Manual: taken by a user with `agentctl lock`; only `unlock` ends it.
	Manual Kind = "manual"
)

// Lock is one row of the table. The JSON keys are those of the tool
// agentctl replaces, so `locks --json` consumers keep working.
type Lock struct {
	Directory string `json:"directory"`
	Type      Kind   `json:"type"`
	// PID and StartTicks identify the process an automatic lock follows
	// (see proc.Identity).
	PID        int    `json:"pid,omitempty"`
	StartTicks uint64 `json:"startTicks,omitempty"`
	SessionID  string `json:"sessionId,omitempty"`
	// LockedBy and Reason describe a manual lock.
	LockedBy string    `json:"lockedBy,omitempty"`
	Reason   string    `json:"reason,omitempty"`
	LockedAt time.Time `json:"lockedAt"`
}

// Owner is the process an automatic lock follows.
func (l Lock) Owner() proc.Identity { return proc.Identity{PID: l.PID, Start: l.StartTicks} }

// Holder describes who holds the lock, for messages.
func (l Lock) Holder() string {
	if l.Type == Manual {
		who := l.LockedBy
		if who == "" {
			who = "unknown"
		}
		if l.Reason != "" {
			return who + " (" + l.Reason + ")"
		}
		return who
	}
	return fmt.Sprintf("session %s (pid %d)", l.SessionID, l.PID)
}

// ErrLocked is matched (errors.Is) by every *LockedError.
var ErrLocked = errors.New("directory is locked")

// ErrNoManualLock is returned by Unlock when the directory has no manual lock.
var ErrNoManualLock = errors.New("no manual lock")

// LockedError says a directory is held and by whom.
type LockedError struct {
	Dir    string
	Holder Lock
}

func (e *LockedError) Error() string {
	if e.Holder.Type == Manual {
		return fmt.Sprintf("directory %s is locked by %s; unlock it with `agentctl unlock %s`, or use --force to override", e.Dir, e.Holder.Holder(), e.Dir)
	}
	return fmt.Sprintf("directory %s is in use by %s; use --force to override", e.Dir, e.Holder.Holder())
}

func (e *LockedError) Unwrap() error { return ErrLocked }

// ChangeKind says what happened to a lock.
type ChangeKind string

const (
	Acquired ChangeKind = "acquired"
	Released ChangeKind = "released"
)

// Why a lock was released.
const (
	ReasonUnlocked     = "unlocked"      // `agentctl unlock`
	ReasonSessionEnded = "session ended" // the session's exit was seen
	ReasonOwnerGone    = "owner gone"    // the owning process is no longer alive
	ReasonReplaced     = "replaced"      // a forced manual lock took its place
)

// Change is reported to Options.OnChange for every acquisition and release.
type Change struct {
	Kind   ChangeKind
	Lock   Lock
	Reason string // for releases
}

// Options configures a Table.
type Options struct {
	// Alive reports whether a lock's owner still runs; proc.Alive when nil.
	Alive func(proc.Identity) bool
	// Clock stamps locks; time.Now when nil.
	Clock func() time.Time
	// OnChange is called for every change, in order, while the table is
	// locked: it must be quick and must not call back into the table.
	OnChange func(Change)
	Logger   *slog.Logger
}

// Table is the lock table. It is safe for concurrent use.
type Table struct {
	path     string
	alive    func(proc.Identity) bool
	clock    func() time.Time
	onChange func(Change)
	log      *slog.Logger

	mu    sync.Mutex
	locks []Lock
}

// fileFormat is locks.json. The tool agentctl replaces wrote a bare array
// of locks at the same path; Open migrates it.
type fileFormat struct {
	Version int    `json:"version"`
	Locks   []Lock `json:"locks"`
}

const fileVersion = 1

// Open loads the table from path. A file in the old tool's format is
// migrated (its manual locks are kept; its automatic locks name processes
// of the old daemon's sessions, which this service does not own) and the
// original kept beside it as path+".old". A file that cannot be parsed is
// moved aside, never deleted. Warnings say what was done.
func Open(path string, opts Options) (*Table, []string, error) {
	t := &Table{path: path, alive: opts.Alive, clock: opts.Clock, onChange: opts.OnChange, log: opts.Logger}
	if t.alive == nil {
		t.alive = proc.Alive
	}
	if t.clock == nil {
		t.clock = time.Now
	}
	if t.log == nil {
		t.log = slog.Default()
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return t, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("read lock table: %w", err)
	}
	locks, migrated, err := parse(b)
	if err != nil {
		aside := fmt.Sprintf("%s.corrupt-%d", path, t.clock().Unix())
		if rerr := os.Rename(path, aside); rerr != nil {
			return nil, nil, fmt.Errorf("lock table %s is unreadable (%v) and could not be moved aside: %w", path, err, rerr)
		}
		return t, []string{fmt.Sprintf("lock table %s is unreadable (%v); moved to %s, starting with no locks", path, err, aside)}, nil
	}
	var warnings []string
	for _, l := range locks {
		dir, err := Canonical(l.Directory)
		if err != nil || l.Directory == "" {
			warnings = append(warnings, fmt.Sprintf("lock table: skipped a lock with a bad directory %q", l.Directory))
			continue
		}
		l.Directory = dir
		if l.LockedAt.IsZero() {
			l.LockedAt = t.clock().UTC()
		}
		if migrated && l.Type != Manual {
			warnings = append(warnings, fmt.Sprintf("lock table: dropped the old tool's automatic lock on %s (pid %d): this service did not launch that session", l.Directory, l.PID))
			continue
		}
		t.locks = append(t.locks, l)
	}
	if migrated {
		if err := os.Rename(path, path+".old"); err != nil {
			return nil, nil, fmt.Errorf("migrate lock table %s: %w", path, err)
		}
		if err := t.save(); err != nil {
			return nil, nil, fmt.Errorf("migrate lock table: %w", err)
		}
		warnings = append(warnings, fmt.Sprintf("lock table: migrated %d manual lock(s) from the old format; the original is %s.old", len(t.locks), path))
	}
	return t, warnings, nil
}

// oldLock is an entry of the old tool's locks.json.
type oldLock struct {
	Directory string `json:"directory"`
	Type      string `json:"type"`
	PID       int    `json:"pid"`
	SessionID string `json:"sessionId"`
	LockedBy  string `json:"lockedBy"`
	By        string `json:"by"`
	Reason    string `json:"reason"`
	LockedAt  string `json:"lockedAt"`
}

func parse(b []byte) (locks []Lock, migrated bool, err error) {
	trimmed := strings.TrimSpace(string(b))
	if strings.HasPrefix(trimmed, "[") {
		var old []oldLock
		if err := json.Unmarshal(b, &old); err != nil {
			return nil, false, err
		}
		for _, o := range old {
			l := Lock{Directory: o.Directory, Type: Kind(o.Type), PID: o.PID, SessionID: o.SessionID, LockedBy: o.LockedBy, Reason: o.Reason}
			if l.Type == "" {
				l.Type = Manual
			}
			if l.LockedBy == "" {
				l.LockedBy = o.By
			}
			if at, err := time.Parse(time.RFC3339Nano, o.LockedAt); err == nil {
				l.LockedAt = at
			}
			locks = append(locks, l)
		}
		return locks, true, nil
	}
	var f fileFormat
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, false, err
	}
	if f.Version != fileVersion {
		return nil, false, fmt.Errorf("unknown version %d", f.Version)
	}
	for _, l := range f.Locks {
		if l.Type != Auto && l.Type != Manual {
			return nil, false, fmt.Errorf("lock on %s has unknown type %q", l.Directory, l.Type)
		}
	}
	return f.Locks, false, nil
}

// save writes the table; the caller holds mu (or is Open).
func (t *Table) save() error {
	locks := t.locks
	if locks == nil {
		locks = []Lock{}
	}
	return atomicfile.WriteJSON(t.path, fileFormat{Version: fileVersion, Locks: locks}, 0o600)
}

// Canonical returns dir absolute, cleaned, with symlinks resolved, so two
// spellings of one directory name one lock. A path that does not exist
// (yet) keeps its missing tail under its resolved existing ancestor.
func Canonical(dir string) (string, error) {
	if dir == "" {
		return "", errors.New("canonicalise directory: empty path")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("canonicalise %s: %w", dir, err)
	}
	p := abs
	var missing []string
	for {
		resolved, err := filepath.EvalSymlinks(p)
		if err == nil {
			return filepath.Join(append([]string{resolved}, missing...)...), nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("canonicalise %s: %w", dir, err)
		}
		parent := filepath.Dir(p)
		if parent == p {
			return abs, nil
		}
		missing = append([]string{filepath.Base(p)}, missing...)
		p = parent
	}
}

// Request asks for a lock.
type Request struct {
	Dir  string
	Type Kind
	// Owner and SessionID, for an automatic lock. Before the session's
	// process exists, the service's own identity reserves the lock; SetOwner
	// then hands it to the session's process.
	Owner     proc.Identity
	SessionID string
	// By and Reason, for a manual lock.
	By     string
	Reason string
	// Force takes the lock whatever holds the directory: an automatic lock
	// is added beside the holders; a manual lock replaces a manual one.
	Force bool
}

// Acquire takes a lock, or fails with a *LockedError naming the holder.
// Automatic locks whose owner is gone are released on the way.
func (t *Table) Acquire(req Request) (Lock, error) {
	dir, err := Canonical(req.Dir)
	if err != nil {
		return Lock{}, err
	}
	l := Lock{Directory: dir, Type: req.Type, LockedAt: t.clock().UTC()}
	switch req.Type {
	case Auto:
		if req.SessionID == "" || req.Owner.PID <= 0 {
			return Lock{}, fmt.Errorf("lock %s: an automatic lock needs a session and an owner process", dir)
		}
		l.PID, l.StartTicks, l.SessionID = req.Owner.PID, req.Owner.Start, req.SessionID
	case Manual:
		l.LockedBy, l.Reason = req.By, req.Reason
	default:
		return Lock{}, fmt.Errorf("lock %s: unknown lock type %q", dir, req.Type)
	}

	t.mu.Lock()
	defer t.mu.Unlock()
	t.releaseDeadLocked(func(x Lock) bool { return x.Directory == dir })
	before := slices.Clone(t.locks)
	var replaced []Lock
	for i, x := range t.locks {
		if x.Directory != dir {
			continue
		}
		switch {
		case l.Type == Auto && x.Type == Auto && x.SessionID == l.SessionID:
			// The same session again: keep one lock, with the newer owner.
			t.locks[i].PID, t.locks[i].StartTicks = l.PID, l.StartTicks
			if err := t.save(); err != nil {
				t.locks = before
				return Lock{}, fmt.Errorf("lock %s: %w", dir, err)
			}
			return t.locks[i], nil
		case req.Force && l.Type == Manual && x.Type == Manual:
			replaced = append(replaced, x)
		case req.Force, l.Type == Manual && x.Type == Auto:
			// A forced lock goes beside the holder; a manual lock may sit on
			// top of a session's lock (and wins from then on).
		default:
			return Lock{}, &LockedError{Dir: dir, Holder: t.holderLocked(dir)}
		}
	}
	t.locks = slices.DeleteFunc(t.locks, func(x Lock) bool { return slices.Contains(replaced, x) })
	t.locks = append(t.locks, l)
	if err := t.save(); err != nil {
		t.locks = before
		return Lock{}, fmt.Errorf("lock %s: %w", dir, err)
	}
	for _, x := range replaced {
		t.notify(Change{Kind: Released, Lock: x, Reason: ReasonReplaced})
	}
	t.notify(Change{Kind: Acquired, Lock: l})
	return l, nil
}

// holderLocked returns the lock that answers "who holds dir": a manual lock
// wins over automatic ones.
func (t *Table) holderLocked(dir string) Lock {
	var holder Lock
	for _, x := range t.locks {
		if x.Directory != dir {
			continue
		}
		if x.Type == Manual {
			return x
		}
		if holder.Directory == "" {
			holder = x
		}
	}
	return holder
}

// Check returns the lock holding dir, if any (a manual lock wins over
// automatic ones). Automatic locks whose owner is gone are released.
func (t *Table) Check(dir string) (Lock, bool, error) {
	dir, err := Canonical(dir)
	if err != nil {
		return Lock{}, false, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.releaseDeadLocked(func(x Lock) bool { return x.Directory == dir })
	h := t.holderLocked(dir)
	return h, h.Directory != "", nil
}

// SetOwner hands the automatic locks of session id to its process, once
// that process exists. It fails when the session holds no lock (it was
// released meanwhile: by a sweep, or because the launch failed).
func (t *Table) SetOwner(id string, owner proc.Identity) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	found := false
	before := slices.Clone(t.locks)
	for i, x := range t.locks {
		if x.Type == Auto && x.SessionID == id {
			t.locks[i].PID, t.locks[i].StartTicks = owner.PID, owner.Start
			found = true
		}
	}
	if !found {
		return fmt.Errorf("hand lock to session %s: it holds no lock", id)
	}
	if err := t.save(); err != nil {
		t.locks = before
		return fmt.Errorf("hand lock to session %s: %w", id, err)
	}
	return nil
}

// Unlock removes the manual lock on dir.
func (t *Table) Unlock(dir string) (Lock, error) {
	dir, err := Canonical(dir)
	if err != nil {
		return Lock{}, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	i := slices.IndexFunc(t.locks, func(x Lock) bool { return x.Directory == dir && x.Type == Manual })
	if i < 0 {
		if h := t.holderLocked(dir); h.Directory != "" {
			return Lock{}, fmt.Errorf("unlock %s: %w; it is in use by %s and is released when that session ends", dir, ErrNoManualLock, h.Holder())
		}
		return Lock{}, fmt.Errorf("unlock %s: %w", dir, ErrNoManualLock)
	}
	l := t.locks[i]
	before := slices.Clone(t.locks)
	t.locks = slices.Delete(t.locks, i, i+1)
	if err := t.save(); err != nil {
		t.locks = before
		return Lock{}, fmt.Errorf("unlock %s: %w", dir, err)
	}
	t.notify(Change{Kind: Released, Lock: l, Reason: ReasonUnlocked})
	return l, nil
}

// ReleaseSession removes the automatic locks of session id, when its end is
// seen. It returns what it released.
func (t *Table) ReleaseSession(id string) []Lock {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.releaseLocked(func(x Lock) bool { return x.Type == Auto && x.SessionID == id }, ReasonSessionEnded)
}

// Sweep releases every automatic lock whose owner is gone: the backstop for
// exits nobody reported. It returns what it released.
func (t *Table) Sweep() []Lock {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.releaseDeadLocked(func(Lock) bool { return true })
}

func (t *Table) releaseDeadLocked(match func(Lock) bool) []Lock {
	return t.releaseLocked(func(x Lock) bool { return x.Type == Auto && match(x) && !t.alive(x.Owner()) }, ReasonOwnerGone)
}

// releaseLocked removes the matching locks. The removal stands even if the
// table cannot be written: the in-memory table is the truth while the
// service runs, and the next write carries it.
func (t *Table) releaseLocked(match func(Lock) bool, reason string) []Lock {
	var released []Lock
	t.locks = slices.DeleteFunc(t.locks, func(x Lock) bool {
		if match(x) {
			released = append(released, x)
			return true
		}
		return false
	})
	if len(released) == 0 {
		return nil
	}
	if err := t.save(); err != nil {
		t.log.Warn("lock table not saved after release", "err", err)
	}
	for _, x := range released {
		t.notify(Change{Kind: Released, Lock: x, Reason: reason})
	}
	return released
}

func (t *Table) notify(c Change) {
	if t.onChange != nil {
		t.onChange(c)
	}
}

// List returns every lock, sorted by directory then time.
func (t *Table) List() []Lock {
	t.mu.Lock()
	out := slices.Clone(t.locks)
	t.mu.Unlock()
	slices.SortStableFunc(out, func(a, b Lock) int {
		if c := strings.Compare(a.Directory, b.Directory); c != 0 {
			return c
		}
		return a.LockedAt.Compare(b.LockedAt)
	})
	if out == nil {
		out = []Lock{}
	}
	return out
}

// Count returns how many locks of each kind the table holds.
func (t *Table) Count() map[Kind]int {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := map[Kind]int{Auto: 0, Manual: 0}
	for _, x := range t.locks {
		out[x.Type]++
	}
	return out
}
