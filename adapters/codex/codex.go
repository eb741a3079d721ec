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
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/agentctl/agentctl/adapters"
)

// Name is the adapter's name.
const Name = "codex"

// maxCachedFiles bounds the rollout cache.
const maxCachedFiles = 200_000

// Adapter reads Codex's store and launches Codex.
type Adapter struct {
	env adapters.Env

	rollouts *adapters.FileCache[*facts]
	threads  threadIndex
	dirs     dirCache

	mu sync.Mutex
	// paths maps session ids to rollout files, from the last scan.
	paths map[string]string
}

// New returns the adapter for the Codex store env points at.
func New(env adapters.Env) *Adapter {
	return &Adapter{
		env:      env,
		rollouts: adapters.NewFileCache[*facts](maxCachedFiles),
		dirs:     dirCache{entries: map[string]dirListing{}},
		paths:    map[string]string{},
	}
}

// Name is "codex".
func (a *Adapter) Name() string { return Name }

// home is $CODEX_HOME, else ~/.codex.
func (a *Adapter) home() string {
	if h := a.env.Lookup("CODEX_HOME"); h != "" {
		return h
	}
	return filepath.Join(a.env.Home, ".codex")
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

// scan lists the rollouts and reads the ones that changed since the last
// scan; it also returns Codex's thread index (nil when it has none or it
// cannot be read). It fails only when the sessions folder exists but
// cannot be listed.
func (a *Adapter) scan(ctx context.Context) ([]scanned, map[string]*thread, error) {
	files, err := a.dirs.rollouts(a.sessionsDir())
	if err != nil {
		return nil, nil, err
	}
	// The thread index only spares reading rollout heads; when it cannot
	// be read, the rollouts say the same.
	threads, _ := a.threads.load(ctx, filepath.Join(a.home(), stateDBName))

	out := make([]scanned, len(files))
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), 8) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				out[i] = a.readOne(files[i], threads)
			}
		}()
	}
	var ctxErr error
	for i := range files {
		if ctxErr = ctx.Err(); ctxErr != nil {
			break
		}
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	if ctxErr != nil {
		return nil, nil, fmt.Errorf("scan codex sessions: %w", ctxErr)
	}

	kept := out[:0]
	ids := make(map[string]string, len(out))
	live := make(map[string]bool, len(out))
	for _, s := range out {
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
	return kept, threads, nil
}

// readOne returns the facts of one rollout, from the cache when a stat
// shows it unchanged.
func (a *Adapter) readOne(file rolloutFile, threads map[string]*thread) scanned {
	path := file.path
	s := scanned{path: path, id: file.id}
	head := threads[s.id]
	var key adapters.FileKey
	s.facts, key, s.err = a.rollouts.Get(path, func(f *os.File, key adapters.FileKey, prev *adapters.Entry[*facts]) (*facts, error) {
		x, err := readFacts(f, key, prev, head)
		if err != nil {
			return nil, err
		}
		return x, nil
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
	files, threads, err := a.scan(ctx)
	if err != nil {
		return nil, err
	}
	var refs map[string]*adapters.ProcessRef
	procs, perr := liveCodexes()
	if perr == nil {
		refs = matchProcesses(procs)
	}
	out := make([]adapters.NativeSession, 0, len(files))
	for _, s := range files {
		if s.id == "" {
			continue // neither the name nor the content names a session
		}
		var ns adapters.NativeSession
		if s.facts != nil {
			ns = s.facts.native(s.path, s.mtime, refs[s.id])
		} else {
			ns = adapters.NativeSession{Adapter: Name, Path: s.path, State: adapters.NativeUnknown, Process: refs[s.id]}
			ns.Warnings = append(ns.Warnings, fmt.Sprintf("unreadable codex rollout %s: %v", s.path, s.err))
		}
		ns.NativeID = s.id
		if t := threads[s.id]; t != nil {
			fillFromThread(&ns, t)
		}
		if perr != nil {
			ns.Warnings = append(ns.Warnings, "processes not matched: "+perr.Error())
		}
		out = append(out, ns)
	}
	return out, nil
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
		p, err := adapters.ByIDPrefix(a.paths, id)
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
	if _, _, err := a.scan(ctx); err != nil {
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

// dirListing is what one folder held at one version of the folder.
type dirListing struct {
	key   adapters.FileKey
	files []rolloutFile
	dirs  []string // sub-folders, full paths
}

// rolloutFile is a rollout and the session id its name carries ("" when
// the name carries none).
type rolloutFile struct {
	path string
	id   string
}

// dirCache lists the rollout tree, re-reading a folder only when its stat
// changed. A folder modified in the last second is always re-read: its
// modification time may not yet show an entry added in the same tick.
type dirCache struct {
	mu      sync.Mutex
	entries map[string]dirListing
}

// freshDir is how recent a folder's change must be for its listing not to
// be trusted from the cache.
const freshDir = time.Second

// maxDepth is how deep rollouts sit under sessions/ (YYYY/MM/DD) plus one.
const maxDepth = 4

// rollouts returns every rollout file under root, sorted. A missing root
// is an empty store.
func (c *dirCache) rollouts(root string) ([]rolloutFile, error) {
	var out []rolloutFile
	seen := map[string]bool{}
	var walk func(dir string, depth int) error
	walk = func(dir string, depth int) error {
		seen[dir] = true
		l, err := c.list(dir)
		if err != nil {
			return err
		}
		out = append(out, l.files...)
		if depth >= maxDepth {
			return nil
		}
		for _, d := range l.dirs {
			if err := walk(d, depth+1); err != nil && !errors.Is(err, fs.ErrNotExist) {
				continue // an unreadable sub-folder hides only its own sessions
			}
		}
		return nil
	}
	if err := walk(root, 0); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("list codex sessions: %w", err)
	}
	c.mu.Lock()
	for d := range c.entries {
		if !seen[d] {
			delete(c.entries, d)
		}
	}
	c.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].path < out[j].path })
	return out, nil
}

// list returns one folder's listing, from the cache when unchanged.
func (c *dirCache) list(dir string) (dirListing, error) {
	fi, err := os.Stat(dir)
	if err != nil {
		return dirListing{}, err
	}
	key := adapters.KeyOf(dir, fi)
	c.mu.Lock()
	l, ok := c.entries[dir]
	c.mu.Unlock()
	if ok && l.key.Same(key) && time.Since(key.ModTime) > freshDir {
		return l, nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return dirListing{}, err
	}
	l = dirListing{key: key}
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		switch {
		case e.IsDir():
			l.dirs = append(l.dirs, p)
		case e.Type().IsRegular() && strings.HasPrefix(e.Name(), "rollout-") && strings.HasSuffix(e.Name(), ".jsonl"):
			l.files = append(l.files, rolloutFile{path: p, id: idFromRolloutPath(p)})
		}
	}
	c.mu.Lock()
	c.entries[dir] = l
	c.mu.Unlock()
	return l, nil
}
