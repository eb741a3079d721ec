// Package opencode reads the native store of OpenCode (opencode-ai): the
// SQLite database $XDG_DATA_HOME/opencode/opencode.db (tables session,
// message, part), opened read-only next to the live writer, and the JSON
// tree under storage/ that releases before 1.0 wrote. It matches live
// OpenCode processes to sessions and builds the headless `opencode run`
// argv.
package opencode

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/agentctl/agentctl/adapters"
	"github.com/agentctl/agentctl/adapters/attribute"
	"github.com/agentctl/agentctl/adapters/storeio"
	"github.com/agentctl/agentctl/proc"
)

// Name is the adapter's name.
const Name = "opencode"

// The capabilities the opencode adapter implements (adapters/capabilities.go).
var (
	_ adapters.Adapter        = (*Adapter)(nil)
	_ adapters.Launcher       = (*Adapter)(nil)
	_ adapters.NativeIDFinder = (*Adapter)(nil)
	_ adapters.OneReader      = (*Adapter)(nil)
)

// Adapter reads OpenCode's store and launches OpenCode.
type Adapter struct {
	env adapters.Env

	mu     sync.Mutex
	dbs    map[string]*dbStore // by database path
	legacy *legacyStore
	// saved keeps what was read from each database across restarts (nil
	// without a cache folder).
	saved *storeio.DiskCache[*dbSnapshot]

	// merged keeps the last merge of the databases, reused while each is
	// at the same generation (see dbStore.load); found keeps the last
	// Discover's sessions, reused while those and the processes matched
	// are the same. Liveness is still checked by the caller at each
	// query: only what the store said is kept.
	merged storeio.Memo[[]*session]
	found  storeio.Memo[[]adapters.NativeSession]

	// attributed keeps the process-session pairs proven by earlier
	// answers (adapters/attribute).
	attributed attribute.Memory
}

// dbGen is one database at one generation: a list of them names what a
// merge of the databases was made from.
type dbGen struct {
	path string
	gen  uint64
}

// maxSavedDBs bounds the databases whose result is kept.
const maxSavedDBs = 64

// New returns the adapter for the OpenCode store env points at.
func New(env adapters.Env) *Adapter {
	a := &Adapter{env: env, dbs: map[string]*dbStore{}, legacy: newLegacyStore()}
	if path := env.CachePath("opencode-databases.gob"); path != "" {
		a.saved = &storeio.DiskCache[*dbSnapshot]{Cache: storeio.NewFileCache[*dbSnapshot](maxSavedDBs), Path: path, Kind: snapshotKind, Logf: env.Logf}
	}
	return a
}

// Name is "opencode".
func (a *Adapter) Name() string { return Name }

// dataDir is $XDG_DATA_HOME/opencode, else ~/.local/share/opencode.
func (a *Adapter) dataDir() string { return dataDirOf(a.env.Home, a.env.Lookup) }

// dataDirOf is OpenCode's rule for its folder, for any environment: its
// own, or a process's (storeio.StoreOf).
func dataDirOf(home string, getenv func(string) string) string {
	if d := getenv("XDG_DATA_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "opencode")
	}
	return filepath.Join(home, ".local", "share", "opencode")
}

// dbPaths returns the databases to read: OPENCODE_DB when set (absolute,
// or relative to the data folder, as OpenCode resolves it), else
// opencode.db and the per-channel opencode-<channel>.db files beside it.
func (a *Adapter) dbPaths() []string {
	dir := a.dataDir()
	if p := a.env.Lookup("OPENCODE_DB"); p != "" && p != ":memory:" {
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		return []string{p}
	}
	paths := []string{filepath.Join(dir, "opencode.db")}
	if more, err := filepath.Glob(filepath.Join(dir, "opencode-*.db")); err == nil {
		paths = append(paths, more...)
	}
	return paths
}

func (a *Adapter) store(path string) *dbStore {
	a.mu.Lock()
	defer a.mu.Unlock()
	d, ok := a.dbs[path]
	if !ok {
		d = newDBStore(path, a.env.Folders, a.saved)
		a.dbs[path] = d
	}
	return d
}

// sessions reads every store. A database that cannot be read fails the
// whole read: its sessions would otherwise vanish from the list, which
// callers would take for ended.
func (a *Adapter) sessions(ctx context.Context) ([]*session, error) {
	ss, _, err := a.sessionsKeyed(ctx)
	return ss, err
}

// sessionsKeyed is sessions, with what they were merged from: nil when
// that cannot name them (a legacy JSON tree, which is read on every call),
// else the databases' generations, and the same generations give the same
// slice, which must not be changed.
func (a *Adapter) sessionsKeyed(ctx context.Context) ([]*session, []dbGen, error) {
	legacy, err := a.legacy.load(ctx, filepath.Join(a.dataDir(), "storage"))
	if err != nil {
		return nil, nil, err
	}
	type loaded struct {
		path string
		ss   []*session
	}
	var dbs []loaded
	var key []dbGen
	for _, p := range a.dbPaths() {
		ss, gen, err := a.store(p).load(ctx)
		if err != nil {
			return nil, nil, fmt.Errorf("read opencode database: %w", err)
		}
		dbs = append(dbs, loaded{p, ss})
		key = append(key, dbGen{p, gen})
	}
	if len(legacy) > 0 {
		key = nil
	} else if out, ok := a.merged.Get(0, key); ok {
		return out, key, nil
	}
	byID := map[string]*session{}
	add := func(ss []*session) {
		for _, s := range ss {
			if old, ok := byID[s.id]; !ok || s.updated.After(old.updated) {
				byID[s.id] = s
			}
		}
	}
	add(legacy)
	// The database wins over the JSON tree it was migrated from.
	for _, db := range dbs {
		for _, s := range db.ss {
			if old, ok := byID[s.id]; ok && old.path != db.path && strings.HasSuffix(old.path, ".json") {
				delete(byID, s.id)
			}
		}
		add(db.ss)
	}
	out := make([]*session, 0, len(byID))
	for _, s := range byID {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	if key == nil {
		a.merged.Drop()
	} else {
		a.merged.Put(0, key, out)
	}
	return out, key, nil
}

// Discover returns every session in OpenCode's store, with the live
// OpenCode process matched to it where the evidence is unambiguous.
func (a *Adapter) Discover(ctx context.Context) ([]adapters.NativeSession, error) {
	ss, key, err := a.sessionsKeyed(ctx)
	if err != nil {
		return nil, err
	}
	procs, perr := liveOpencodes(proc.SnapshotFrom(ctx), a.dataDir())
	var atts map[string]attribute.Attribution
	var ties []adapters.HookTie
	if perr == nil && len(procs) > 0 {
		ties = a.env.HookTiesOf(Name)
		atts = matchProcesses(ss, procs, adapters.LaunchedFrom(ctx, Name), ties, &a.attributed, time.Now())
	}
	type inputs struct {
		dbs  []dbGen
		atts map[string]attribute.Attribution
		perr string
	}
	in := inputs{dbs: key, atts: atts}
	if perr != nil {
		in.perr = perr.Error()
	}
	if out, ok := a.found.Get(0, in); ok && key != nil {
		return withTies(out, ties, procs), nil
	}
	out := make([]adapters.NativeSession, 0, len(ss))
	for _, s := range ss {
		ns := s.native(atts[s.id])
		if perr != nil {
			// Without the full picture of live processes, no session can
			// be said to have ended.
			if ns.Process == nil {
				ns.State = adapters.NativeUnknown
			}
			ns.Warnings = append(ns.Warnings, "processes not matched: "+perr.Error())
		}
		out = append(out, ns)
	}
	if key != nil {
		a.found.Put(0, in, out)
	} else {
		a.found.Drop()
	}
	return withTies(out, ties, procs), nil
}

// withTies adds to out what the integration's reports (ties) say of the
// live processes procs: the state of the sessions they tied, and the
// sessions OpenCode has not written yet (it writes one at its first
// prompt, its plugin reports it then).
func withTies(out []adapters.NativeSession, ties []adapters.HookTie, procs []liveProc) []adapters.NativeSession {
	return adapters.WithUnwritten(adapters.WithHookTies(out, ties), ties, Name, func(pid int, start uint64) bool {
		return slices.ContainsFunc(procs, func(p liveProc) bool { return p.info.PID == pid && p.info.Start == start })
	})
}

// DiscoverOne implements adapters.OneReader: what Discover says of the
// session id (a whole id), looked up in the databases' sessions (kept
// while they are unchanged) while no OpenCode of this store runs. With one
// running, which session it works on is weighed against the whole store,
// as Discover does.
func (a *Adapter) DiscoverOne(ctx context.Context, id string) (adapters.NativeSession, error) {
	procs, perr := liveOpencodes(proc.SnapshotFrom(ctx), a.dataDir())
	if perr != nil || len(procs) > 0 {
		return adapters.DiscoverOneOf(ctx, a, id)
	}
	ss, err := a.sessions(ctx)
	if err != nil {
		return adapters.NativeSession{}, err
	}
	// sessions are sorted by id.
	i := sort.Search(len(ss), func(i int) bool { return ss[i].id >= id })
	if i == len(ss) || ss[i].id != id {
		return adapters.NativeSession{}, fmt.Errorf("opencode session %s: %w", id, adapters.ErrNoSession)
	}
	return ss[i].native(attribute.Attribution{}), nil
}

// find returns the session of an id (or of a unique id prefix).
func (a *Adapter) find(ctx context.Context, id string) (*session, error) {
	id = strings.TrimSpace(id)
	if id == "" {
		return nil, errors.New("empty opencode session id")
	}
	ss, err := a.sessions(ctx)
	if err != nil {
		return nil, err
	}
	var found []*session
	for _, s := range ss {
		if s.id == id {
			return s, nil
		}
		if strings.HasPrefix(s.id, id) {
			found = append(found, s)
		}
	}
	switch len(found) {
	case 0:
		return nil, fmt.Errorf("opencode session %s: %w", id, fs.ErrNotExist)
	case 1:
		return found[0], nil
	}
	return nil, fmt.Errorf("opencode session id %q is ambiguous: %d sessions start with it", id, len(found))
}

// Transcript returns the last n messages of a session (all when n <= 0),
// oldest first.
func (a *Adapter) Transcript(ctx context.Context, nativeID string, n int) ([]adapters.Message, error) {
	s, err := a.find(ctx, nativeID)
	if err != nil {
		return nil, err
	}
	if strings.HasSuffix(s.path, ".json") {
		return a.legacy.transcript(ctx, filepath.Join(a.dataDir(), "storage"), s.id, n)
	}
	return dbTranscript(ctx, s.path, s.id, n)
}
