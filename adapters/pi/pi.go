// Package pi reads the native store of the Pi coding agent
// (@mariozechner/pi-coding-agent) and of its Rust port, pi-rust, which
// writes the same store in the same format: one JSONL file per session under
// ~/.pi/agent/sessions/--<cwd slug>--/, a header line, then records that
// form a tree through id/parentId. It also builds their headless argv.
package pi

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentctl/agentctl/adapters"
	"github.com/agentctl/agentctl/adapters/attribute"
	"github.com/agentctl/agentctl/adapters/storeio"
	"github.com/agentctl/agentctl/proc"
)

// Variant names.
const (
	NamePi     = "pi"
	NamePiRust = "pi-rust"
)

// The capabilities the pi adapter implements (adapters/capabilities.go).
var (
	_ adapters.Adapter         = (*Adapter)(nil)
	_ adapters.Launcher        = (*Adapter)(nil)
	_ adapters.NativeIDFinder  = (*Adapter)(nil)
	_ adapters.AssistantReader = (*Adapter)(nil)
	_ adapters.OneReader       = (*Adapter)(nil)
	_ adapters.Settler         = (*Adapter)(nil)
)

// Adapter reads Pi's store and launches Pi (or pi-rust).
type Adapter struct {
	name string
	env  adapters.Env

	// files caches what each session file said; an entry is used only
	// while a stat shows the same size, mtime and inode.
	files *storeio.FileCache[*facts]
	// lines lends the session readers their read buffers.
	lines storeio.LineBuffers
	// saved keeps the files' facts across restarts (nil without a cache
	// folder).
	saved *storeio.DiskCache[*facts]
	// folders lists the session folders.
	folders *storeio.Lister

	// scanMu lets one scan run at a time: a scan kept in scans is valid
	// while the Lister's version holds, which a second scan's listings
	// would move under it.
	scanMu sync.Mutex
	// scans keeps the last scan, reused while no folder changed; found
	// keeps the last Discover's sessions, reused while the scan and the
	// processes matched are the same. Liveness is still checked by the
	// caller at each query: only what the files said is kept.
	scans storeio.Memo[[]scanned]
	found storeio.Memo[[]adapters.NativeSession]

	// attributed keeps the process-session pairs proven by earlier
	// answers (adapters/attribute).
	attributed attribute.Memory

	mu sync.Mutex
	// paths maps native ids to files, from the last scan.
	paths map[string]string

	// sumMu guards summing, the files whose usage sums are put off
	// (Env.TotalsLater) until Settled or being counted, queued, those of
	// them not started yet, and idle, closed while there are none. sums
	// counts the batches done: the kept scan and sessions are kept for
	// one count, so the next query after a batch has its totals.
	sumMu   sync.Mutex
	summing map[string]bool
	queued  []storeio.FileKey
	idle    chan struct{}
	sums    atomic.Uint64
}

// maxCachedFiles bounds the cache: far more sessions than a user keeps.
const maxCachedFiles = 200_000

// New returns the adapter for Pi, reading the store env points at.
func New(env adapters.Env) *Adapter { return newAdapter(NamePi, env) }

// NewRust returns the adapter for pi-rust. It shares Pi's store: files
// written by either are indistinguishable, so a session is reported as
// pi-rust's only while a live pi-rust process is matched to it; the pi
// adapter reports all others.
func NewRust(env adapters.Env) *Adapter { return newAdapter(NamePiRust, env) }

func newAdapter(name string, env adapters.Env) *Adapter {
	a := &Adapter{name: name, env: env, files: storeio.NewFileCache[*facts](maxCachedFiles), folders: storeio.NewLister(env.Folders), paths: map[string]string{},
		summing: map[string]bool{}, idle: make(chan struct{})}
	close(a.idle)
	// One file per adapter: pi and pi-rust read the same store, each
	// with its own cache.
	if path := env.CachePath(name + "-facts.gob"); path != "" {
		a.saved = &storeio.DiskCache[*facts]{Cache: a.files, Path: path, Kind: factsKind, Logf: env.Logf}
	}
	return a
}

// Name is "pi" or "pi-rust".
func (a *Adapter) Name() string { return a.name }

func (a *Adapter) layout() layout { return resolveLayout(a.env.Home, a.env.Lookup) }

// sessionFileName matches Pi's file names: <ISO time>_<id>.jsonl.
// Compiled on first use: package init runs at every CLI start.
var sessionFileName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\d{4}-\d\d-\d\dT[0-9-]+Z?_([0-9A-Za-z-]+)\.jsonl$`) })

// scanned is one session file found by a scan.
type scanned struct {
	path  string
	facts *facts
	err   error
}

// scan lists every session file and reads the ones that changed since the
// last scan. Folders are listed (one stat per file) and read in parallel.
// It returns an error only when no root could be read at all.
// An unchanged store (the Lister's version as at the last scan) is not
// read: the last scan is returned. kept says the scan is the one kept for
// version, so what is derived from it alone may be kept for that version
// too.
func (a *Adapter) scan(ctx context.Context) (files []scanned, version uint64, kept bool, err error) {
	a.scanMu.Lock()
	defer a.scanMu.Unlock()
	// Session files sit in each root and in the folders directly in it.
	keys, err := a.folders.Walk(ctx, a.layout().roots(), 1, isSessionFile)
	if err != nil {
		return nil, 0, false, fmt.Errorf("scan pi sessions: %w", err)
	}
	version = a.folders.Version()
	sums := a.sums.Load()
	if last, ok := a.scans.Get(version, sums); ok {
		return last, version, true, nil
	}
	if a.saved != nil {
		a.saved.Load()
		defer a.saved.Save(false)
	}
	read := make([]scanned, len(keys))
	progress := adapters.ProgressFrom(ctx)
	progress.Found(len(keys))
	if err := storeio.Parallel(ctx, len(keys), func(i int) {
		read[i] = a.readOne(keys[i])
		progress.Read(1)
	}); err != nil {
		a.scans.Drop()
		return nil, 0, false, fmt.Errorf("scan pi sessions: %w", err)
	}

	var later []storeio.FileKey
	for i, s := range read {
		if s.facts != nil && s.facts.sumsPending {
			later = append(later, keys[i])
		}
	}
	a.sumLater(later)

	var out []scanned
	listed := map[string]bool{}
	ids := map[string]string{}
	// A file that could not be read at all may be read next time: such a
	// scan is not kept.
	retry := false
	for _, s := range read {
		listed[s.path] = true
		retry = retry || s.facts == nil
		if s.facts == nil && errors.Is(s.err, fs.ErrNotExist) {
			continue // removed between the listing and the read
		}
		if s.facts != nil && s.facts.id != "" {
			ids[s.facts.id] = s.path
		}
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b scanned) int { return strings.Compare(a.path, b.path) })
	a.files.Retain(func(p string) bool { return listed[p] })
	a.mu.Lock()
	a.paths = ids
	a.mu.Unlock()
	if retry {
		a.scans.Drop()
		return out, version, false, nil
	}
	a.scans.Put(version, sums, out)
	return out, version, true, nil
}

// sumLater queues the files whose first read left their usage sums
// (Env.TotalsLater), those not queued or counted already, for Settled.
func (a *Adapter) sumLater(keys []storeio.FileKey) {
	a.sumMu.Lock()
	defer a.sumMu.Unlock()
	for _, k := range keys {
		if !a.summing[k.Path] {
			if len(a.summing) == 0 {
				a.idle = make(chan struct{})
			}
			a.summing[k.Path] = true
			a.queued = append(a.queued, k)
		}
	}
}

// Settled implements adapters.Settler: the usage sums queued are counted
// in the background, as many files at once as there are cores; each is
// cached when done and the next query has it. The cache file is written
// once they are all counted.
func (a *Adapter) Settled() {
	a.sumMu.Lock()
	todo := a.queued
	a.queued = nil
	a.sumMu.Unlock()
	if len(todo) == 0 {
		return
	}
	go func() {
		// Nothing cancels it: the work is bounded (the files listed)
		// and each file read once.
		storeio.Parallel(context.Background(), len(todo), func(i int) {
			sum := func(f *os.File, key storeio.FileKey, prev *storeio.Entry[*facts]) (*facts, error) {
				return sumPending(f, key, prev, &a.lines)
			}
			if _, _, err := a.files.Refresh(todo[i], sum); err != nil && a.env.Logf != nil {
				a.env.Logf("pi: count the usage of %s: %v", todo[i].Path, err)
			}
		})
		a.sums.Add(1)
		if a.saved != nil {
			a.saved.Save(true)
		}
		a.sumMu.Lock()
		defer a.sumMu.Unlock()
		for _, k := range todo {
			delete(a.summing, k.Path)
		}
		if len(a.summing) == 0 {
			close(a.idle)
		}
	}()
}

// WaitTotals waits until no usage sums are queued or being counted
// (Env.TotalsLater), or ctx ends: after Settled, until they are counted.
func (a *Adapter) WaitTotals(ctx context.Context) error {
	a.sumMu.Lock()
	idle := a.idle
	a.sumMu.Unlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// readOne returns the cached facts when the listing's stat shows the file
// unchanged, and reads it otherwise.
func (a *Adapter) readOne(key storeio.FileKey) scanned {
	f, _, err := a.files.GetKey(key, func(f *os.File, key storeio.FileKey, prev *storeio.Entry[*facts]) (*facts, error) {
		return readFactsMode(f, key, prev, a.env.TotalsLater, &a.lines)
	})
	if err != nil {
		return scanned{path: key.Path, err: err}
	}
	return scanned{path: key.Path, facts: f, err: f.bad}
}

func isSessionFile(name string) bool { return strings.HasSuffix(name, ".jsonl") }

// Discover returns every Pi session in the store, with the live process
// matched to it where the evidence is unambiguous.
func (a *Adapter) Discover(ctx context.Context) ([]adapters.NativeSession, error) {
	procs, perr := livePis(proc.SnapshotFrom(ctx), a.layout().agentDir)
	if a.name == NamePiRust {
		if perr != nil {
			return nil, fmt.Errorf("match pi-rust processes: %w", perr)
		}
		// pi-rust reports only sessions a live pi-rust process is working
		// on: without one there is nothing to read.
		if !slices.ContainsFunc(procs, func(p liveProc) bool { return p.rust }) {
			return []adapters.NativeSession{}, nil
		}
	}
	// Read before the scan: sessions built while a batch of sums
	// completes are kept for the count before it.
	sums := a.sums.Load()
	files, version, kept, err := a.scan(ctx)
	if err != nil {
		return nil, err
	}
	// No process, no match: the sessions need not be walked for one.
	var refs map[string]match
	var ties []adapters.HookTie
	if len(procs) > 0 {
		ties = a.env.HookTiesOf(a.name)
		refs = matchProcesses(candidatesOf(files), procs, ties, &a.attributed, time.Now())
	}
	type inputs struct {
		refs map[string]match
		perr string
		sums uint64
	}
	in := inputs{refs: refs, sums: sums}
	if perr != nil {
		in.perr = perr.Error()
	}
	if out, ok := a.found.Get(version, in); ok && kept {
		return a.withTies(out, ties, procs), nil
	}

	out := make([]adapters.NativeSession, 0, len(files))
	for _, s := range files {
		if ns, ok := a.nativeOf(s, refs[s.path]); ok {
			out = append(out, ns)
		}
	}
	if perr != nil {
		// Without the full picture of live processes, no session can be
		// said to have ended.
		for i := range out {
			if out[i].Process == nil {
				out[i].State = adapters.NativeUnknown
			}
			out[i].Warnings = append(out[i].Warnings, "processes not matched: "+perr.Error())
		}
	}
	if kept {
		a.found.Put(version, in, out)
	} else {
		a.found.Drop()
	}
	return a.withTies(out, ties, procs), nil
}

// withTies adds to out what the integration's reports (ties) say of the
// live processes procs: the state of the sessions they tied, and the
// sessions Pi has not written yet (it writes one at its first answer; its
// extension reports it at its start), each by the adapter of its process
// (pi-rust's or Pi's).
func (a *Adapter) withTies(out []adapters.NativeSession, ties []adapters.HookTie, procs []liveProc) []adapters.NativeSession {
	return adapters.WithUnwritten(adapters.WithHookTies(out, ties), ties, a.name, func(pid int, start uint64) bool {
		return slices.ContainsFunc(procs, func(p liveProc) bool {
			return p.info.PID == pid && p.info.Start == start && p.rust == (a.name == NamePiRust)
		})
	})
}

// nativeOf is the native session of one file, given the process matched
// to it; false when this adapter does not report it (pi-rust reports the
// sessions a live pi-rust runs, pi the others).
func (a *Adapter) nativeOf(s scanned, m match) (adapters.NativeSession, bool) {
	if s.facts != nil && s.facts.bad == nil {
		rustLive := m.running() && m.rust
		if rustLive != (a.name == NamePiRust) {
			return adapters.NativeSession{}, false
		}
		return s.facts.native(a.name, s.path, m), true
	}
	if a.name == NamePiRust {
		return adapters.NativeSession{}, false
	}
	// Unreadable, headerless or garbled: report it with the id its name
	// carries, so it is not silently lost.
	name := sessionFileName().FindStringSubmatch(filepath.Base(s.path))
	if name == nil {
		return adapters.NativeSession{}, false
	}
	ns := adapters.NativeSession{Adapter: a.name, NativeID: name[1], Path: s.path}
	reason := s.err
	if reason == nil {
		reason = errNoHeader
	}
	ns.Warnings = []string{fmt.Sprintf("unreadable pi session %s: %v", s.path, reason)}
	return ns, true
}

// DiscoverOne implements adapters.OneReader: what Discover says of the
// session id (a whole id), from its file alone while no Pi of this store
// runs. With one running, which session it works on is weighed against
// the whole store (its folder, its start), as Discover does.
func (a *Adapter) DiscoverOne(ctx context.Context, id string) (adapters.NativeSession, error) {
	procs, perr := livePis(proc.SnapshotFrom(ctx), a.layout().agentDir)
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
	key := storeio.KeyOf(path, fi)
	s := a.readOne(key)
	if s.facts != nil && s.facts.sumsPending {
		a.sumLater([]storeio.FileKey{key})
		a.Settled()
	}
	ns, ok := a.nativeOf(s, match{})
	if !ok || ns.NativeID != id {
		return adapters.DiscoverOneOf(ctx, a, id)
	}
	return ns, nil
}

// pathOf returns the session file of a native id (or of a unique id
// prefix, as Pi accepts), scanning the store when the id is not known yet.
func (a *Adapter) pathOf(ctx context.Context, nativeID string) (string, error) {
	if nativeID == "" {
		return "", errors.New("empty pi session id")
	}
	p, err := a.knownPath(nativeID)
	if err != nil {
		return "", err
	}
	if p != "" {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	// Not seen yet, or moved: scan the store again.
	if _, _, _, err := a.scan(ctx); err != nil {
		return "", err
	}
	if p, err = a.knownPath(nativeID); err != nil {
		return "", err
	}
	if p == "" {
		return "", fmt.Errorf("pi session %s: %w", nativeID, fs.ErrNotExist)
	}
	return p, nil
}

// knownPath looks nativeID (or a unique prefix of one) up in the ids the
// last scan saw; "" when none matches.
func (a *Adapter) knownPath(nativeID string) (string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	p, err := storeio.ByIDPrefix(a.paths, nativeID)
	if err != nil {
		return "", fmt.Errorf("pi: %w", err)
	}
	return p, nil
}

// Transcript returns the last n messages of the session's active branch
// (all of them when n <= 0), oldest first.
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
	return lastAssistant(ctx, p, n)
}
