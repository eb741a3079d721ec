// Package codex reads the native store of the OpenAI Codex CLI
// (@openai/codex): one rollout JSONL file per session under
// $CODEX_HOME/sessions/YYYY/MM/DD/, and the threads table of
// $CODEX_HOME/state_5.sqlite, Codex's own index of them. It matches live
// Codex processes to sessions by the rollout they hold open, and builds the
// headless `codex exec` argv.
package codex

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentctl/agentctl/adapters"
	"github.com/agentctl/agentctl/adapters/attribute"
	"github.com/agentctl/agentctl/adapters/storeio"
	"github.com/agentctl/agentctl/proc"
)

// Name is the adapter's name.
const Name = "codex"

// Provider is the model provider whose usage limits Codex reports, as
// limits name it.
const Provider = adapters.ProviderOpenAI

// maxCachedFiles bounds the rollout cache.
const maxCachedFiles = 200_000

// The capabilities the codex adapter implements (adapters/capabilities.go).
var (
	_ adapters.Adapter         = (*Adapter)(nil)
	_ adapters.Launcher        = (*Adapter)(nil)
	_ adapters.NativeIDFinder  = (*Adapter)(nil)
	_ adapters.Stopper         = (*Adapter)(nil)
	_ adapters.TurnInterrupter = (*Adapter)(nil)
	_ adapters.AssistantReader = (*Adapter)(nil)
	_ adapters.OneReader       = (*Adapter)(nil)
)

// Adapter reads Codex's store and launches Codex.
type Adapter struct {
	env adapters.Env

	rollouts *storeio.FileCache[*facts]
	// lines lends the rollout readers their read buffers.
	lines storeio.LineBuffers
	// saved keeps the rollouts' facts across restarts (nil without a
	// cache folder).
	saved   *storeio.DiskCache[*facts]
	threads threadIndex
	folders *storeio.Lister

	// scanMu lets one scan run at a time: a scan kept in scans is valid
	// while the Lister's version holds, which a second scan's listings
	// would move under it.
	scanMu sync.Mutex
	// scans keeps the last scan, reused while no folder (nor the thread
	// index) changed; found keeps the last Discover's sessions, reused
	// while the scan and the processes matched are the same. Liveness is
	// still checked by the caller at each query: only what the files said
	// is kept.
	scans storeio.Memo[scanResult]
	found storeio.Memo[[]adapters.NativeSession]

	// attributed keeps what earlier answers proved of which TUI holds
	// which thread the daemon holds.
	attributed attribute.Memory

	mu sync.Mutex
	// paths maps session ids to rollout files, from the last scan.
	paths map[string]string
}

// New returns the adapter for the Codex store env points at.
func New(env adapters.Env) *Adapter {
	a := &Adapter{
		env:      env,
		rollouts: storeio.NewFileCache[*facts](maxCachedFiles),
		folders:  storeio.NewLister(env.Folders),
		paths:    map[string]string{},
	}
	if path := env.CachePath("codex-facts.gob"); path != "" {
		a.saved = &storeio.DiskCache[*facts]{Cache: a.rollouts, Path: path, Kind: factsKind, Logf: env.Logf}
	}
	return a
}

// Name is "codex".
func (a *Adapter) Name() string { return Name }

// home is $CODEX_HOME, else ~/.codex.
func (a *Adapter) home() string { return homeOf(a.env.Home, a.env.Lookup) }

// Home is Codex's folder for a user whose home is home and whose
// environment getenv reads: $CODEX_HOME, else ~/.codex.
func Home(home string, getenv func(string) string) string { return homeOf(home, getenv) }

// homeOf is Codex's rule for its folder, for any environment: its own, or
// a process's (storeio.StoreOf).
func homeOf(home string, getenv func(string) string) string {
	if h := getenv("CODEX_HOME"); h != "" {
		return h
	}
	return filepath.Join(home, ".codex")
}

func (a *Adapter) sessionsDir() string { return filepath.Join(a.home(), "sessions") }

// scanned is one rollout found by a scan.
type scanned struct {
	path  string
	id    string // from the file name
	facts *facts
	mtime time.Time
	err   error
}

// scanResult is what a scan found: the rollouts, Codex's thread index
// (nil when it has none or it cannot be read), and what they are valid
// for: the Lister's version and the index's generation. kept says the
// scan is the one kept for those, so what is derived from it alone may be
// kept for them too.
type scanResult struct {
	files   []scanned
	threads map[string]*thread
	version uint64
	gen     uint64
	kept    bool
}

// scan lists the rollouts and reads the ones that changed since the last
// scan; an unchanged store is not read, the last scan is returned. It
// fails only when the sessions folder exists but cannot be listed.
func (a *Adapter) scan(ctx context.Context) (scanResult, error) {
	a.scanMu.Lock()
	defer a.scanMu.Unlock()
	keys, err := a.walkRollouts(ctx, a.sessionsDir())
	if err != nil {
		return scanResult{}, err
	}
	// The thread index only spares reading rollout heads; when it cannot
	// be read, the rollouts say the same.
	threads, gen, _ := a.threads.load(ctx, filepath.Join(a.home(), stateDBName))
	version := a.folders.Version()
	if last, ok := a.scans.Get(version, gen); ok {
		return last, nil
	}
	files := rolloutsOf(keys)
	if a.saved != nil {
		a.saved.Load()
		defer a.saved.Save(false)
	}

	out := make([]scanned, len(files))
	progress := adapters.ProgressFrom(ctx)
	progress.Found(len(files))
	if err := storeio.Parallel(ctx, len(files), func(i int) {
		out[i] = a.readOne(files[i], threads)
		progress.Read(1)
	}); err != nil {
		a.scans.Drop()
		return scanResult{}, fmt.Errorf("scan codex sessions: %w", err)
	}

	kept := out[:0]
	ids := make(map[string]string, len(out))
	live := make(map[string]bool, len(out))
	// A rollout that could not be read may be read next time: such a scan
	// is not kept.
	retry := false
	for _, s := range out {
		retry = retry || s.facts == nil
		if s.facts == nil && errors.Is(s.err, fs.ErrNotExist) {
			continue // removed between the listing and the read
		}
		live[s.path] = true
		if s.id != "" {
			ids[s.id] = s.path
		}
		kept = append(kept, s)
	}
	a.rollouts.Retain(func(p string) bool { return live[p] })
	a.mu.Lock()
	a.paths = ids
	a.mu.Unlock()
	r := scanResult{files: kept, threads: threads, version: version, gen: gen, kept: !retry}
	if r.kept {
		a.scans.Put(version, gen, r)
	} else {
		a.scans.Drop()
	}
	return r, nil
}

// readOne returns the facts of one rollout, from the cache when a stat
// shows it unchanged.
func (a *Adapter) readOne(file rolloutFile, threads map[string]*thread) scanned {
	s := scanned{path: file.key.Path, id: file.id}
	head := threads[s.id]
	var key storeio.FileKey
	s.facts, key, s.err = a.rollouts.GetKey(file.key, func(f *os.File, key storeio.FileKey, prev *storeio.Entry[*facts]) (*facts, error) {
		return readFacts(f, key, prev, head, &a.lines)
	})
	s.mtime = key.ModTime
	if s.facts != nil && s.id == "" {
		s.id = s.facts.id
	}
	return s
}

// Discover returns every session in the Codex store, with the live Codex
// process matched to it where the evidence is unambiguous.
func (a *Adapter) Discover(ctx context.Context) ([]adapters.NativeSession, error) {
	scan, err := a.scan(ctx)
	if err != nil {
		return nil, err
	}
	files, index := scan.files, scan.threads
	var refs map[string]*adapters.ProcessRef
	var contenders map[string][]int
	var shared map[string]attribute.Attribution
	procs, perr := liveCodexes(proc.SnapshotFrom(ctx), a.home())
	var reports map[string]adapters.HookTie
	if perr == nil && len(procs) > 0 {
		reports = lastReports(a.env.HookTiesOf(Name))
	}
	if perr == nil {
		var held map[string]int
		refs, contenders, held = matchProcesses(procs)
		if len(held) > 0 {
			var threads []daemonThread
			turns := map[string]bool{}
			for _, s := range files {
				if _, ok := held[s.id]; !ok {
					continue
				}
				t := daemonThread{id: s.id, updated: s.mtime}
				if s.facts != nil {
					t.cwd, t.created = s.facts.cwd, s.facts.created
					if s.facts.lastTime.After(t.updated) {
						t.updated = s.facts.lastTime
					}
				}
				// A turn the integration reported ended after the rollout's
				// last write no longer runs in the daemon: Codex runs its
				// Stop hook before the rollout records the turn's end.
				r, reported := reports[s.id]
				ended := reported && r.State == adapters.NativeIdle && !t.updated.After(r.At)
				turns[s.id] = s.facts != nil && s.facts.turn == turnStarted && !ended
				if th := index[s.id]; th != nil && t.cwd == "" {
					t.cwd, t.created = th.cwd, th.created
				}
				threads = append(threads, t)
			}
			shared = attributeDaemonThreads(procs, refs, contenders, threads, &a.attributed, time.Now())
			for id, at := range shared {
				if at.Ref != nil {
					refs[id] = at.Ref
					delete(shared, id)
				}
			}
			daemonTurns(procs, refs, held, func(id string) bool { return turns[id] })
		}
	}
	type inputs struct {
		gen        uint64
		refs       map[string]*adapters.ProcessRef
		contenders map[string][]int
		shared     map[string]attribute.Attribution
		perr       string
	}
	in := inputs{gen: scan.gen, refs: refs, contenders: contenders, shared: shared}
	if perr != nil {
		in.perr = perr.Error()
	}
	if out, ok := a.found.Get(scan.version, in); ok && scan.kept {
		return withNotifies(out, reports), nil
	}
	out := make([]adapters.NativeSession, 0, len(files))
	for _, s := range files {
		if s.id == "" {
			continue // neither the name nor the content names a session
		}
		out = append(out, nativeOf(s, index[s.id], refs[s.id], contenders[s.id], shared[s.id], perr))
	}
	if scan.kept {
		a.found.Put(scan.version, in, out)
	} else {
		a.found.Drop()
	}
	return withNotifies(out, reports), nil
}

// lastReports is the integration's last report of each thread (ties: the
// book's).
func lastReports(ties []adapters.HookTie) map[string]adapters.HookTie {
	last := make(map[string]adapters.HookTie, len(ties))
	for _, t := range ties {
		if old, ok := last[t.NativeID]; !ok || t.At.After(old.At) {
			last[t.NativeID] = t
		}
	}
	return last
}

// withNotifies gives each session of out that a live process was tied to
// (by the store's evidence) the state its integration last reported
// (reports: lastReports of the book's): Codex's notify program and its hooks.
// Both run in the shared app-server daemon (or, with --no-daemon, in the
// TUI's native binary under its Node wrapper, which the store's open
// rollout ties first-hand already), so the process that reported is not
// the session's: a report ties no process to a thread, it only speaks of
// the thread it names, once that thread's process is known. A state the
// store shows changed since the report (a turn begun after an end of turn
// reported, or ended after its prompt was) is the store's to tell; a
// permission request stands while the turn runs (the rollout is written
// while Codex waits), until a report or a decision ends it, or the store
// shows the turn ended (the user refused at the terminal: Codex reports
// no end of that turn).
func withNotifies(out []adapters.NativeSession, reports map[string]adapters.HookTie) []adapters.NativeSession {
	if len(reports) == 0 {
		return out
	}
	var mapped []adapters.HookTie
	for _, ns := range out {
		t, ok := reports[ns.NativeID]
		if !ok || ns.Process == nil {
			continue
		}
		if ns.UpdatedAt.After(t.At) {
			if t.WaitingFor == adapters.WaitingPermission && ns.State == adapters.NativeIdle ||
				t.WaitingFor != adapters.WaitingPermission && t.State != "" && ns.State != t.State {
				continue
			}
		}
		t.PID, t.Start = ns.Process.PID, ns.Process.Start
		mapped = append(mapped, t)
	}
	return adapters.WithHookTies(out, mapped)
}

// nativeOf is the native session of one rollout, given Codex's index
// row of it (nil: none), the process matched to it and the live ones that
// may be working on it, what the shared solver says of a thread the daemon
// holds (running in one of some TUIs, or unknown), and why the processes
// could not be matched (nil: they were).
func nativeOf(s scanned, t *thread, ref *adapters.ProcessRef, contenders []int, shared attribute.Attribution, perr error) adapters.NativeSession {
	if ref != nil {
		shared = attribute.Attribution{} // tied first-hand: the solver's view is moot
	}
	alive := ref != nil || shared.Running
	var ns adapters.NativeSession
	if s.facts != nil {
		ns = s.facts.native(s.path, s.mtime, ref, alive)
	} else {
		ns = adapters.NativeSession{Adapter: Name, Path: s.path, State: adapters.NativeUnknown, Process: ref}
		ns.Warnings = append(ns.Warnings, fmt.Sprintf("unreadable codex rollout %s: %v", s.path, s.err))
	}
	ns.NativeID = s.id
	if ns.Process == nil && len(contenders) > 0 {
		ns.Evidence = append(ns.Evidence, adapters.ContenderEvidence("codex", contenders)...)
	}
	ns.Evidence = append(ns.Evidence, shared.Evidence...)
	if t != nil {
		fillFromThread(&ns, t)
	}
	if ns.Process == nil && len(contenders) > 0 {
		ns.State = adapters.NativeUnknown
		ns.Warnings = append(ns.Warnings, storeio.ContendersWarning("codex", contenders))
	}
	if shared.Unknown {
		ns.State = adapters.NativeUnknown
	}
	if shared.Warning != "" {
		ns.Warnings = append(ns.Warnings, shared.Warning)
	}
	if perr != nil {
		// Without the full picture of live processes, no session can be
		// said to have ended.
		ns.State = adapters.NativeUnknown
		ns.Warnings = append(ns.Warnings, "processes not matched: "+perr.Error())
	}
	return ns
}

// DiscoverOne implements adapters.OneReader: what Discover says of the
// session id (a whole id), from its rollout alone while no Codex process
// of this store runs. With one running, which rollout it holds is weighed
// against the whole store, as Discover does.
func (a *Adapter) DiscoverOne(ctx context.Context, id string) (adapters.NativeSession, error) {
	procs, perr := liveCodexes(proc.SnapshotFrom(ctx), a.home())
	a.mu.Lock()
	path := a.paths[id]
	a.mu.Unlock()
	if perr != nil || len(procs) > 0 || path == "" {
		return adapters.DiscoverOneOf(ctx, a, id)
	}
	fi, err := os.Stat(path)
	if err != nil {
		return adapters.DiscoverOneOf(ctx, a, id) // moved or gone: the store says
	}
	index, _, _ := a.threads.load(ctx, filepath.Join(a.home(), stateDBName))
	s := a.readOne(rolloutFile{key: storeio.KeyOf(path, fi), id: idFromRolloutPath(path)}, index)
	if s.id != id {
		return adapters.DiscoverOneOf(ctx, a, id)
	}
	return nativeOf(s, index[id], nil, nil, attribute.Attribution{}, nil), nil
}

// fillFromThread completes what the rollout did not say (its head was not
// read, or it is unreadable) from Codex's own index.
func fillFromThread(ns *adapters.NativeSession, t *thread) {
	if ns.Cwd == "" {
		ns.Cwd = t.cwd
	}
	if ns.Model == "" {
		ns.Model = t.model
	}
	if ns.FirstPrompt == "" {
		ns.FirstPrompt = t.firstUserMessage
	}
	if ns.CreatedAt.IsZero() {
		ns.CreatedAt = t.created
	}
	if ns.UpdatedAt.IsZero() {
		ns.UpdatedAt = t.updated
	}
}

// pathOf returns the rollout of a session id (or of a unique id prefix),
// scanning the store when the id is not known yet.
func (a *Adapter) pathOf(ctx context.Context, id string) (string, error) {
	id = strings.ToLower(strings.TrimSpace(id))
	if id == "" {
		return "", errors.New("empty codex session id")
	}
	lookup := func() (string, error) {
		a.mu.Lock()
		defer a.mu.Unlock()
		p, err := storeio.ByIDPrefix(a.paths, id)
		if err != nil {
			return "", fmt.Errorf("codex: %w", err)
		}
		return p, nil
	}
	p, err := lookup()
	if err != nil {
		return "", err
	}
	if p != "" {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	if _, err := a.scan(ctx); err != nil {
		return "", err
	}
	if p, err = lookup(); err != nil {
		return "", err
	}
	if p == "" {
		return "", fmt.Errorf("codex session %s: %w", id, fs.ErrNotExist)
	}
	return p, nil
}

// Transcript returns the last n messages of a session (all when n <= 0),
// oldest first.
func (a *Adapter) Transcript(ctx context.Context, nativeID string, n int) ([]adapters.Message, error) {
	p, err := a.pathOf(ctx, nativeID)
	if err != nil {
		return nil, err
	}
	return readTranscript(ctx, p, n)
}

// LastAssistant implements adapters.AssistantReader.
func (a *Adapter) LastAssistant(ctx context.Context, nativeID string, n int) ([]adapters.Message, error) {
	p, err := a.pathOf(ctx, nativeID)
	if err != nil {
		return nil, err
	}
	return readTranscriptUntil(ctx, p, func(msgs []adapters.Message) bool { return adapters.EnoughAssistant(msgs, n) })
}

// rolloutFile is a rollout, with its fresh stat, and the session id its
// name carries ("" when the name carries none).
type rolloutFile struct {
	key storeio.FileKey
	id  string
}

// maxDepth is how deep rollouts sit under sessions/ (YYYY/MM/DD) plus one.
const maxDepth = 4

// listRollouts lists and stats every rollout file under root (see
// storeio.Lister.Walk), sorted. A missing root is an empty store.
func (a *Adapter) listRollouts(ctx context.Context, root string) ([]rolloutFile, error) {
	files, err := a.walkRollouts(ctx, root)
	if err != nil {
		return nil, err
	}
	return rolloutsOf(files), nil
}

// walkRollouts lists and stats every rollout file under root.
func (a *Adapter) walkRollouts(ctx context.Context, root string) ([]storeio.FileKey, error) {
	files, err := a.folders.Walk(ctx, []string{root}, maxDepth, isRolloutName)
	if err != nil {
		return nil, fmt.Errorf("codex sessions: %w", err)
	}
	return files, nil
}

// rolloutsOf is the rollouts of a listing, with the ids their names
// carry, sorted by path.
func rolloutsOf(files []storeio.FileKey) []rolloutFile {
	out := make([]rolloutFile, len(files))
	for i, k := range files {
		out[i] = rolloutFile{key: k, id: idFromRolloutPath(k.Path)}
	}
	slices.SortFunc(out, func(x, y rolloutFile) int { return strings.Compare(x.key.Path, y.key.Path) })
	return out
}

func isRolloutName(n string) bool {
	return strings.HasPrefix(n, "rollout-") && strings.HasSuffix(n, ".jsonl")
}
