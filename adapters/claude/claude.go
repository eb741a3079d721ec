// Package claude is the Claude Code adapter: it reads Claude's own session
// store (~/.claude, or $CLAUDE_CONFIG_DIR), matches running claude processes
// to sessions, and builds the headless command line to launch and resume it.
//
// The store, as Claude Code 2.1 writes it:
//
//	projects/<slug>/<uuid>.jsonl  one transcript per session (see ProjectSlug)
//	sessions/<pid>.json           one entry per running process: session id, cwd, busy/idle
//	history.jsonl                 the prompts typed in interactive sessions
package claude

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentctl/agentctl/adapters"
	"github.com/agentctl/agentctl/adapters/storeio"
	"github.com/agentctl/agentctl/proc"
)

// Name is the adapter's name.
const Name = "claude"

// Provider is the model provider Claude Code answers from, as limits name
// it.
const Provider = adapters.ProviderAnthropic

// maxCached bounds the transcripts whose summaries are kept in memory.
const maxCached = 50000

// The capabilities the claude adapter implements (adapters/capabilities.go).
var (
	_ adapters.Adapter         = (*Adapter)(nil)
	_ adapters.Launcher        = (*Adapter)(nil)
	_ adapters.AssistantReader = (*Adapter)(nil)
	_ adapters.OneReader       = (*Adapter)(nil)
)

// Adapter reads Claude Code's native store. It is safe for concurrent use.
type Adapter struct {
	env       adapters.Env
	summaries *storeio.FileCache[*summary]
	// lines lends the transcript readers their read buffers, heads the
	// smaller ones of the head reads (the first prompt is most often
	// within the first kilobytes).
	lines, heads storeio.LineBuffers
	// saved keeps the summaries across restarts (nil without a cache
	// folder).
	saved   *storeio.DiskCache[*summary]
	history *storeio.FileCache[historyIndex]
	folders *storeio.Lister

	// scanMu lets one scan run at a time: a scan kept in scans is valid
	// while the Lister's version holds, which a second scan's listings
	// would move under it.
	scanMu sync.Mutex
	// scans keeps the last scan, reused while no folder changed; found
	// keeps the last Discover's sessions, reused while the scan, the
	// history and the processes matched are the same. Liveness is still
	// checked by the caller at each query: only what the files said is
	// kept.
	scans storeio.Memo[scanResult]
	found storeio.Memo[[]adapters.NativeSession]
}

// New returns the adapter for the Claude store env points at.
func New(env adapters.Env) *Adapter {
	a := &Adapter{
		env:       env,
		summaries: storeio.NewFileCache[*summary](maxCached),
		history:   storeio.NewFileCache[historyIndex](1),
		folders:   storeio.NewLister(env.Folders),
		heads:     storeio.LineBuffers{Size: headBuffer},
	}
	if path := env.CachePath("claude-summaries.gob"); path != "" {
		a.saved = &storeio.DiskCache[*summary]{Cache: a.summaries, Path: path, Kind: summaryKind, Persist: persistable, Logf: env.Logf}
	}
	return a
}

// summaryKind names the summary a cache file holds; change it when the
// summary's fields or their meaning change.
const summaryKind = "claude-summary-4"

// persistable is s as a cache file keeps it: without the offset and
// fingerprint, which an incremental read would continue from with fields
// only this process holds; a file that grew is read again whole.
func persistable(s *summary) *summary {
	c := s.clone()
	c.Offset, c.Fingerprint = 0, nil
	return &c
}

// Name implements adapters.Adapter.
func (a *Adapter) Name() string { return Name }

// configDir is Claude's folder: $CLAUDE_CONFIG_DIR, else ~/.claude.
func (a *Adapter) configDir() string { return configDirOf(a.env.Home, a.env.Lookup) }

// ConfigDir is Claude's folder for a user whose home is home and whose
// environment getenv reads: $CLAUDE_CONFIG_DIR, else ~/.claude. Its
// settings.json is the user's settings, its projects/ the store.
func ConfigDir(home string, getenv func(string) string) string { return configDirOf(home, getenv) }

// configDirOf is Claude's rule for its folder, for any environment: its
// own, or a process's (storeio.StoreOf).
func configDirOf(home string, getenv func(string) string) string {
	if d := getenv("CLAUDE_CONFIG_DIR"); d != "" {
		return d
	}
	return filepath.Join(home, ".claude")
}

// transcriptFile is one transcript found by listing the projects folder,
// with its fresh stat.
type transcriptFile struct {
	id  string
	key storeio.FileKey
}

// listProjects lists and stats projects/*/<uuid>.jsonl, the project
// folders in parallel, one listing per folder. A project folder that
// vanishes while listing is skipped.
func (a *Adapter) listProjects(ctx context.Context) ([][]storeio.FileKey, error) {
	root := filepath.Join(a.configDir(), "projects")
	top, err := a.folders.List(root, func(string) bool { return false })
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	projects := top.Dirs
	perProject := make([][]storeio.FileKey, len(projects))
	if err := storeio.Parallel(ctx, len(projects), func(i int) {
		ls, err := a.folders.List(projects[i], isTranscriptName)
		if err == nil {
			perProject[i] = ls.Files
		}
	}); err != nil {
		return nil, err
	}
	a.folders.Sweep()
	return perProject, nil
}

// transcriptsOf is the transcripts of the project folders' listings.
func transcriptsOf(perProject [][]storeio.FileKey) []transcriptFile {
	var out []transcriptFile
	for _, keys := range perProject {
		for _, k := range keys {
			out = append(out, transcriptFile{id: strings.TrimSuffix(filepath.Base(k.Path), ".jsonl"), key: k})
		}
	}
	return out
}

// isTranscriptName says whether a project folder's entry is a transcript:
// <uuid>.jsonl.
func isTranscriptName(n string) bool {
	id, ok := strings.CutSuffix(n, ".jsonl")
	return ok && validID(id)
}

// scanResult is what a scan found: the transcripts listed and what each
// said (results[i] is files[i]'s), at the Lister's version. kept says the
// scan is the one kept for version, so what is derived from it alone may
// be kept for it too.
type scanResult struct {
	files   []transcriptFile
	results []readResult
	version uint64
	kept    bool
}

// readResult is one transcript's summary, or why it could not be read.
type readResult struct {
	sum  *summary
	mod  time.Time
	err  error
	gone bool
}

// scan lists the transcripts and reads the ones that changed since the
// last scan (from the cache when the file is unchanged, and otherwise only
// as far as it changed); an unchanged store is not read, the last scan is
// returned.
func (a *Adapter) scan(ctx context.Context) (scanResult, error) {
	a.scanMu.Lock()
	defer a.scanMu.Unlock()
	perProject, err := a.listProjects(ctx)
	if err != nil {
		return scanResult{}, err
	}
	version := a.folders.Version()
	if last, ok := a.scans.Get(version, nil); ok {
		return last, nil
	}
	files := transcriptsOf(perProject)
	if a.saved != nil {
		a.saved.Load()
		defer a.saved.Save(false)
	}
	results := make([]readResult, len(files))
	reader := summaryReader{ctx: ctx, lines: &a.lines, heads: &a.heads}
	progress := adapters.ProgressFrom(ctx)
	progress.Found(len(files))
	if err := storeio.Parallel(ctx, len(files), func(i int) {
		s, key, err := a.summaries.GetKey(files[i].key, reader.fill)
		results[i] = readResult{sum: s, mod: key.ModTime, err: err, gone: errors.Is(err, os.ErrNotExist)}
		progress.Read(1)
	}); err != nil {
		a.scans.Drop()
		return scanResult{}, err
	}
	if a.summaries.Stats().Entries > len(files) {
		// Some cached transcripts were not listed: forget the deleted.
		seen := make(map[string]bool, len(files))
		for _, f := range files {
			seen[f.key.Path] = true
		}
		a.summaries.Retain(func(p string) bool { return seen[p] })
	}
	// A transcript that could not be read may be read next time: such a
	// scan is not kept.
	r := scanResult{files: files, results: results, version: version, kept: !slices.ContainsFunc(results, func(r readResult) bool { return r.err != nil })}
	if r.kept {
		a.scans.Put(version, nil, r)
	} else {
		a.scans.Drop()
	}
	return r, nil
}

// Discover implements adapters.Adapter: every transcript's summary, joined
// with the running processes.
func (a *Adapter) Discover(ctx context.Context) ([]adapters.NativeSession, error) {
	scan, err := a.scan(ctx)
	if err != nil {
		return nil, fmt.Errorf("discover claude sessions: %w", err)
	}
	files, results := scan.files, scan.results
	live, unmatchedCwds, rejected, liveErr := liveProcesses(a.configDir(), proc.SnapshotFrom(ctx), a.env.HookTiesOf(Name))
	hist, histKey := a.historyIndex()
	type inputs struct {
		live          map[string]liveSession
		unmatchedCwds map[string][]int
		rejected      map[string][]adapters.Evidence
		liveErr       string
		history       storeio.FileKey
	}
	in := inputs{live: live, unmatchedCwds: unmatchedCwds, rejected: rejected, history: histKey}
	if liveErr != nil {
		in.liveErr = liveErr.Error()
	}
	if out, ok := a.found.Get(scan.version, in); ok && scan.kept {
		return out, nil
	}
	listed := make(map[string]bool, len(files))
	out := make([]adapters.NativeSession, 0, len(files)+len(live))
	for i, f := range files {
		r := results[i]
		if r.gone {
			continue // deleted between listing and reading
		}
		listed[f.id] = true
		out = append(out, nativeOf(f, r, live, unmatchedCwds, rejected, hist))
	}
	// Running sessions with no transcript yet (an interactive claude before
	// its first prompt).
	for id, ls := range live {
		if listed[id] {
			continue
		}
		ns := adapters.NativeSession{Adapter: Name, NativeID: id, Cwd: ls.cwd, CreatedAt: ls.started, FirstPrompt: hist[id].prompt}
		attachLive(&ns, ls)
		out = append(out, ns)
	}
	if liveErr != nil {
		// Without the full picture of live processes, a finished last turn
		// does not prove the session ended.
		for i := range out {
			if out[i].Process == nil {
				out[i].State = adapters.NativeUnknown
				out[i].Warnings = append(out[i].Warnings, liveErr.Error())
			}
		}
	}
	if scan.kept {
		a.found.Put(scan.version, in, out)
	} else {
		a.found.Drop()
	}
	return out, nil
}

// nativeOf is the native session of one transcript, given what was read
// of it, the live sessions by id, the live processes in each folder that
// nothing ties to a session, the candidates turned down by id, and the
// prompts of the history.
func nativeOf(f transcriptFile, r readResult, live map[string]liveSession, unmatchedCwds map[string][]int, rejected map[string][]adapters.Evidence, hist map[string]historyEntry) adapters.NativeSession {
	ns := adapters.NativeSession{Adapter: Name, NativeID: f.id, Path: f.key.Path, Evidence: slices.Clip(rejected[f.id])}
	if r.err != nil {
		ns.Warnings = []string{fmt.Sprintf("read transcript: %v", r.err)}
		ns.State = adapters.NativeUnknown
		if ls, ok := live[f.id]; ok {
			attachLive(&ns, ls)
		}
		return ns
	}
	s := r.sum
	ns.Cwd, ns.Model, ns.FirstPrompt = s.Cwd, s.Model, s.FirstPrompt
	ns.TokensIn, ns.TokensOut = s.tokens()
	ns.CostUSD = s.cost()
	ns.CreatedAt, ns.UpdatedAt = s.Created, s.Updated
	if ns.UpdatedAt.IsZero() {
		ns.UpdatedAt = r.mod
	}
	if ns.FirstPrompt == "" {
		ns.FirstPrompt = hist[f.id].prompt
	}
	ns.Warnings = append([]string(nil), s.Warnings...)
	ns.Limit = s.Limit
	if ls, ok := live[f.id]; ok {
		attachLive(&ns, ls)
	} else if pids := unmatchedCwds[s.Cwd]; len(pids) > 0 {
		// A claude process runs in this folder and nothing says which
		// session it works on: this one may be it.
		ns.State = adapters.NativeUnknown
		ns.Warnings = append(ns.Warnings, storeio.ContendersWarning("claude", pids))
		ns.Evidence = append(ns.Evidence, adapters.ContenderEvidence("claude", pids)...)
	} else if ns.State = s.Turn.native(); ns.State == adapters.NativeUnknown {
		// The last turn did not finish and no Claude of this store runs it
		// (nor could: none runs in its folder): it was cut off. (An
		// incomplete view of the processes is dealt with by the caller.)
		ns.State = adapters.NativeAborted
	}
	return ns
}

// DiscoverOne implements adapters.OneReader: what Discover says of the
// session id (a whole id), from its transcript alone while no Claude of
// this store runs. With one running, its registry and folder are weighed
// against the whole store, as Discover does.
func (a *Adapter) DiscoverOne(ctx context.Context, id string) (adapters.NativeSession, error) {
	live, unmatchedCwds, rejected, liveErr := liveProcesses(a.configDir(), proc.SnapshotFrom(ctx), a.env.HookTiesOf(Name))
	last, ok := a.scans.Last()
	i := slices.IndexFunc(last.files, func(f transcriptFile) bool { return f.id == id })
	if liveErr != nil || len(live) > 0 || len(unmatchedCwds) > 0 || !ok || i < 0 {
		return adapters.DiscoverOneOf(ctx, a, id)
	}
	path := last.files[i].key.Path
	fi, err := os.Stat(path)
	if err != nil {
		return adapters.DiscoverOneOf(ctx, a, id) // moved or gone: the store says
	}
	f := transcriptFile{id: id, key: storeio.KeyOf(path, fi)}
	sum, key, err := a.summaries.GetKey(f.key, summaryReader{ctx: ctx, lines: &a.lines, heads: &a.heads}.fill)
	if err != nil {
		return adapters.DiscoverOneOf(ctx, a, id)
	}
	hist, _ := a.historyIndex()
	return nativeOf(f, readResult{sum: sum, mod: key.ModTime}, nil, nil, rejected, hist), nil
}

func attachLive(ns *adapters.NativeSession, ls liveSession) {
	ns.Process = &adapters.ProcessRef{PID: ls.proc.PID, Start: ls.proc.Start, Evidence: ls.evidence}
	ns.Hook = ls.hook
	ns.State = ls.state
	ns.WaitingFor, ns.WaitingSince = ls.waitingFor, ls.waitingSince
	if ns.Cwd == "" {
		ns.Cwd = ls.cwd
	}
}

// transcriptPath finds the transcript of id in the project folders.
func (a *Adapter) transcriptPath(id string) (string, error) {
	if !validID(id) {
		return "", fmt.Errorf("claude session %q: not a session id", id)
	}
	matches, err := filepath.Glob(filepath.Join(a.configDir(), "projects", "*", id+".jsonl"))
	if err != nil {
		return "", fmt.Errorf("find claude session %s: %w", id, err)
	}
	if len(matches) == 0 {
		return "", fmt.Errorf("claude session %s: no transcript under %s: %w", id, filepath.Join(a.configDir(), "projects"), os.ErrNotExist)
	}
	return matches[0], nil
}

// Transcript implements adapters.Adapter: the last n user, assistant and
// tool messages (n <= 0: all), oldest first. A transcript larger than the
// window read for n messages is read from its end only.
func (a *Adapter) Transcript(ctx context.Context, id string, n int) ([]adapters.Message, error) {
	return a.readTranscript(ctx, id, func(f io.ReaderAt, size int64) ([]adapters.Message, error) {
		return readMessages(ctx, f, size, n)
	})
}

// LastAssistant implements adapters.AssistantReader.
func (a *Adapter) LastAssistant(ctx context.Context, id string, n int) ([]adapters.Message, error) {
	return a.readTranscript(ctx, id, func(f io.ReaderAt, size int64) ([]adapters.Message, error) {
		return readMessagesUntil(ctx, f, size, func(msgs []adapters.Message) bool { return adapters.EnoughAssistant(msgs, n) })
	})
}

// readTranscript opens session id's transcript for read.
func (a *Adapter) readTranscript(ctx context.Context, id string, read func(f io.ReaderAt, size int64) ([]adapters.Message, error)) ([]adapters.Message, error) {
	path, err := a.transcriptPath(id)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read claude session %s: %w", id, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("read claude session %s: %w", id, err)
	}
	return read(f, fi.Size())
}

// readMessages reads the last n messages of a transcript of size bytes
// (all when n <= 0). For the last n it reads backwards from the end, each
// line once, until it has them.
func readMessages(ctx context.Context, f io.ReaderAt, size int64, n int) ([]adapters.Message, error) {
	if n <= 0 {
		return readAllMessages(ctx, f, size)
	}
	msgs, err := readMessagesUntil(ctx, f, size, func(msgs []adapters.Message) bool { return len(msgs) >= n })
	if len(msgs) > n {
		msgs = msgs[len(msgs)-n:]
	}
	return msgs, err
}

// readAllMessages reads every message of a transcript of size bytes.
func readAllMessages(ctx context.Context, f io.ReaderAt, size int64) ([]adapters.Message, error) {
	var msgs []adapters.Message
	count := 0
	_, err := storeio.ScanLines(io.NewSectionReader(f, 0, size), maxLine, func(line []byte) error {
		if count++; count%ctxEvery == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if r, ok, err := parseRecord(line); err == nil && ok {
			msgs = appendMessages(msgs, r)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read transcript: %w", err)
	}
	return msgs, nil
}

// readMessagesUntil reads a transcript of size bytes backwards from the end,
// each line once, until the messages read (oldest first) are enough.
func readMessagesUntil(ctx context.Context, f io.ReaderAt, size int64, enough func([]adapters.Message) bool) ([]adapters.Message, error) {
	var msgs []adapters.Message
	err := storeio.TailChunks(ctx, f, size, tailStart, size, func(lines [][]byte) bool {
		var chunk []adapters.Message
		for _, line := range lines {
			if len(line) > maxLine {
				continue // as ScanLines skips it
			}
			if r, ok, err := parseRecord(line); err == nil && ok {
				chunk = appendMessages(chunk, r)
			}
		}
		msgs = append(chunk, msgs...)
		return enough(msgs)
	})
	if err != nil {
		return nil, fmt.Errorf("read transcript: %w", err)
	}
	return msgs, nil
}

// maxToolText bounds the text kept of one tool call or result.
const maxToolText = 2000

// appendMessages adds a record's messages: user prompts, assistant text,
// tool calls and tool results.
func appendMessages(msgs []adapters.Message, r record) []adapters.Message {
	if r.Message == nil || r.IsSidechain || r.IsMeta {
		return msgs
	}
	switch r.Type {
	case "user":
		var s string
		if json.Unmarshal(r.Message.Content, &s) == nil {
			if s != "" {
				msgs = append(msgs, adapters.Message{Role: "user", Text: s, Time: r.Timestamp})
			}
			return msgs
		}
		for _, b := range decodeBlocks(r.Message.Content) {
			switch b.Type {
			case "text":
				msgs = append(msgs, adapters.Message{Role: "user", Text: b.Text, Time: r.Timestamp})
			case "tool_result":
				msgs = append(msgs, adapters.Message{Role: "tool", Text: clip(resultText(b.Content)), Time: r.Timestamp})
			}
		}
	case "assistant":
		for _, b := range decodeBlocks(r.Message.Content) {
			switch b.Type {
			case "text":
				if strings.TrimSpace(b.Text) == "" {
					continue
				}
				msgs = append(msgs, adapters.Message{Role: "assistant", Text: b.Text, Time: r.Timestamp})
			case "tool_use":
				msgs = append(msgs, adapters.Message{Role: "tool", Text: clip(b.Name + ": " + toolInputText(b.Input)), Time: r.Timestamp})
			}
		}
	}
	return msgs
}

// toolInputText is the telling part of a tool call's input: its command,
// else its description, else the raw input.
func toolInputText(raw json.RawMessage) string {
	var in map[string]any
	if json.Unmarshal(raw, &in) == nil {
		for _, k := range []string{"command", "file_path", "pattern", "description", "prompt", "url"} {
			if s, ok := in[k].(string); ok && s != "" {
				return s
			}
		}
	}
	return string(raw)
}

func resultText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []string
	for _, b := range decodeBlocks(raw) {
		if b.Type == "text" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func clip(s string) string {
	if len(s) <= maxToolText {
		return s
	}
	cut := maxToolText
	for cut > 0 && !utf8RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }
