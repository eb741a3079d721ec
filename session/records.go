package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/home"
	"github.com/agentctl/agentctl/internal/atomicfile"
	"github.com/agentctl/agentctl/internal/text"
	"github.com/agentctl/agentctl/spawn"
)

type nativeRecord struct {
	NativeID string `json:"native_id"`
	// Adapter is the agent whose session it is, for a plain command that
	// is an agent (api.Session.Agent).
	Adapter string `json:"adapter,omitempty"`
}

// maxRecordWarnings is how many unreadable session folders a list names.
const maxRecordWarnings = 5

// incompleteGrace is how long a session folder may lack launch.json before
// list warns about it: a start in progress writes it within seconds.
const incompleteGrace = time.Minute

// records reads launched sessions from disk. Ended sessions never change
// again, so their derived view is kept; running ones are re-derived on every
// read. Nothing here is the truth: the folders are.
type records struct {
	home home.Home

	mu    sync.Mutex
	ended map[string]api.Session
	// unsettled are the sessions whose agent ended and whose monitor, alive,
	// did not write the exit record while a read waited for it (stuck): a
	// later read does not wait again, so a list is not held up at every
	// query by one such session.
	unsettled map[string]bool
	// renames counts renames: a derived view read before one is not kept.
	renames uint64
	// bindMu makes each check-and-record of a learned native id one step.
	bindMu sync.Mutex
	// q says where queued sessions stand (queue.go).
	q *queueState
}

func newRecords(h home.Home, q *queueState) *records {
	if q == nil {
		q = newQueueState()
	}
	return &records{home: h, ended: map[string]api.Session{}, unsettled: map[string]bool{}, q: q}
}

// settle waits for the exit record of a session whose agent has ended
// (settleEnd), once: a session whose monitor did not write it in time is
// not waited for again until it has.
func (r *records) settle(id, dir string, st spawn.State) spawn.State {
	r.mu.Lock()
	waited := r.unsettled[id]
	if !ending(st) {
		delete(r.unsettled, id)
	}
	r.mu.Unlock()
	if !ending(st) || waited {
		return st
	}
	st = settleEnd(dir, st)
	if ending(st) {
		r.mu.Lock()
		r.unsettled[id] = true
		r.mu.Unlock()
	}
	return st
}

// ids lists the session folders' names.
func (r *records) ids() ([]string, error) {
	ents, err := os.ReadDir(r.home.Sessions())
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("read sessions: %w", err)
	}
	out := make([]string, 0, len(ents))
	for _, e := range ents {
		if e.IsDir() && home.ValidID(e.Name()) {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// ErrIncomplete marks a folder whose start is still in progress.
var ErrIncomplete = errors.New("session start in progress")

// get derives one session. A folder without launch.json that is young is
// ErrIncomplete; a record that does not parse is an error naming the file.
func (r *records) get(id string) (api.Session, error) {
	r.mu.Lock()
	s, ok := r.ended[id]
	renames := r.renames
	r.mu.Unlock()
	if ok {
		return s, nil
	}
	dir := r.home.SessionDir(id)
	if err := checkFolder(dir); err != nil {
		return api.Session{}, fmt.Errorf("session %s: %w", id, err)
	}
	var repaired string
	rec, err := spawn.ReadRecord(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			// No launch record yet: maybe a queued session, or one whose
			// queued start was claimed (queue.go).
			if s, ok := r.queuedSession(id, dir); ok {
				return s, nil
			}
			st, serr := os.Stat(dir)
			if serr != nil {
				return api.Session{}, faultf(ErrNotFound, "no session %s", id)
			}
			if time.Since(st.ModTime()) < incompleteGrace {
				return api.Session{}, ErrIncomplete
			}
			return api.Session{}, fmt.Errorf("session %s has no launch record (%s missing): its start failed; remove it with `agentctl prune`", id, home.LaunchFile)
		}
		// A damaged record of a session that runs: its monitor knows it.
		damage := err
		if rec, err = r.repair(dir); err != nil {
			return api.Session{}, fmt.Errorf("session %s: %w", id, damage)
		}
		repaired = fmt.Sprintf("its launch record could not be read (%v); it was written again from the session's monitor", damage)
	}
	state, err := spawn.Derive(dir, rec)
	if err != nil {
		return api.Session{}, fmt.Errorf("session %s: %w", id, err)
	}
	state = r.settle(id, dir, state)
	s = sessionFromState(state)
	if name, ok := renamed(dir); ok {
		s.Name = name
	}
	if s.Status == api.StatusRunning {
		applyAttention(dir, &s)
	}
	if err := spawn.CheckProtocol(rec); err != nil && !s.Status.Ended() {
		// Its status is still first-hand (the records only grow), but
		// this service cannot talk to its monitor: say what to do.
		s.Warnings = append(s.Warnings, err.Error())
	}
	if repaired != "" {
		s.Warnings = append(s.Warnings, repaired)
	}
	if h := spawn.ReadHealth(dir); h != nil {
		s.Warnings = append(s.Warnings, healthWarning(h))
	}
	if s.NativeID == "" {
		n := learnedNative(dir)
		s.NativeID = n.NativeID
		if s.Adapter == api.ExecAdapter {
			s.Agent = n.Adapter
		}
	}
	if s.Status.Ended() && s.Status != api.StatusLost {
		r.mu.Lock()
		if r.renames == renames {
			r.ended[id] = s
		}
		r.mu.Unlock()
	}
	return s, nil
}

// repair asks a session's monitor for the launch record that could not be
// read (damaged) and writes it again; an error when no monitor answers.
func (r *records) repair(dir string) (spawn.Record, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	rec, err := spawn.AskRecord(ctx, dir)
	if err != nil {
		return rec, err
	}
	if err := spawn.RepairRecord(dir, rec); err != nil {
		return rec, err
	}
	return rec, nil
}

// LearnedNativeID is the native id recorded in session folder dir after
// its start, "" when none is.
func LearnedNativeID(dir string) string { return learnedNative(dir).NativeID }

func learnedNative(dir string) nativeRecord {
	var n nativeRecord
	if b, err := os.ReadFile(filepath.Join(dir, home.NativeFile)); err == nil && json.Unmarshal(b, &n) == nil {
		return n
	}
	return nativeRecord{}
}

// renamed is the name `agentctl rename` gave the session in dir, if any.
func renamed(dir string) (string, bool) {
	b, err := os.ReadFile(filepath.Join(dir, home.NameFile))
	if err != nil || len(b) == 0 {
		return "", false
	}
	return string(b), true
}

// setName records a session's new name beside its launch record.
func (r *records) setName(id, name string) error {
	err := atomicfile.Write(filepath.Join(r.home.SessionDir(id), home.NameFile), []byte(name), 0o600)
	r.mu.Lock()
	r.renames++
	delete(r.ended, id)
	r.mu.Unlock()
	return err
}

// setNativeID records a native id learned after the start.
func (r *records) setNativeID(id, nativeID string) error {
	return r.setNative(id, nativeRecord{NativeID: nativeID})
}

// setNative records the native session learned after the start.
func (r *records) setNative(id string, n nativeRecord) error {
	r.mu.Lock()
	delete(r.ended, id)
	r.mu.Unlock()
	return atomicfile.WriteJSON(filepath.Join(r.home.SessionDir(id), home.NativeFile), n, 0o600)
}

// bindNativeID records nativeID as session id's, learned after its start,
// unless another launched session of adapter is bound to it already: then
// nothing is written and that session is returned. One binding is made at
// a time, so two launches cannot both take one native session.
func (r *records) bindNativeID(id, adapter, nativeID string) (owner string, err error) {
	r.bindMu.Lock()
	defer r.bindMu.Unlock()
	ids, err := r.ids()
	if err != nil {
		return "", err
	}
	for _, other := range ids {
		if other == id {
			continue
		}
		if s, err := r.get(other); err == nil && s.Adapter == adapter && s.NativeID == nativeID {
			return other, nil
		}
	}
	return "", r.setNativeID(id, nativeID)
}

// forget drops a removed session from the cache.
func (r *records) forget(id string) {
	r.mu.Lock()
	delete(r.ended, id)
	r.mu.Unlock()
}

// all derives every launched session; unreadable records become warnings.
func (r *records) all() ([]api.Session, []string, error) {
	ids, err := r.ids()
	if err != nil {
		return nil, nil, err
	}
	var out []api.Session
	var warnings []string
	unreadable := 0
	for _, id := range ids {
		s, err := r.get(id)
		if err != nil {
			if errors.Is(err, ErrIncomplete) || errors.Is(err, ErrNotFound) {
				continue
			}
			if errors.Is(err, ErrUnsafeFolder) {
				// A session that may be live is never hidden: it is listed
				// unknown, with what to do, and its records are not read.
				out = append(out, untrusted(id, err))
			}
			// A few are named; thousands of junk folders are one line.
			if unreadable++; unreadable <= maxRecordWarnings {
				warnings = append(warnings, err.Error())
			}
			continue
		}
		out = append(out, s)
	}
	if more := unreadable - maxRecordWarnings; more > 0 {
		warnings = append(warnings, fmt.Sprintf("and %d more session folders under %s could not be read", more, r.home.Sessions()))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, warnings, nil
}

// sessionFromState is the session object for a launched session.
func sessionFromState(st spawn.State) api.Session {
	rec := st.Record
	s := api.Session{
		ID:        rec.ID,
		Adapter:   rec.Adapter,
		Origin:    api.OriginLaunched,
		Name:      rec.Name,
		Group:     rec.Group,
		PID:       rec.Process.PID,
		PGID:      rec.PGID,
		CreatedAt: rec.CreatedAt,
		Cwd:       rec.Cwd,
		Command:   rec.Argv,
		NativeID:  rec.NativeID,
		Model:     rec.Model,
		Prompt:    text.Truncate(rec.Prompt, maxPromptShown),
		Labels:    rec.Labels,
		EnvSet:    rec.EnvSet,
		RestartOf: rec.RestartOf,
		ResumeOf:  rec.ResumeOf,
		OnLimit:   rec.OnLimit,
		Baseline:  rec.Baseline,

		LaunchedFrom: rec.LaunchedFrom,
	}
	if s.Adapter == "" {
		s.Adapter = "exec"
	}
	if !rec.Process.StartTime.IsZero() {
		t := rec.Process.StartTime
		s.StartTime = &t
	}
	if st.Exit != nil {
		t := st.Exit.EndedAt
		s.EndedAt = &t
		s.ExitCode = st.Exit.ExitCode
		s.Signal = st.Exit.Signal
		s.StoppedBy = st.Exit.StoppedBy
		s.OOM = st.Exit.OOM
	}
	if l := rec.Limits; l != nil {
		s.Limits = &api.Limits{MemoryMaxBytes: l.MemoryMax, CPUs: l.CPUs, PidsMax: l.PidsMax}
	}
	var warning string
	s.Status, warning = launchedStatus(st)
	if warning != "" {
		s.Warnings = append(s.Warnings, warning)
	}
	return s
}

// healthWarning says what output a session lost, since when and why.
func healthWarning(h *spawn.Health) string {
	since := "?"
	if h.DroppedSince != nil {
		since = h.DroppedSince.Local().Format(time.RFC3339)
	}
	w := fmt.Sprintf("output dropped since %s: %s (%d bytes not in the log)", since, h.LastError, h.DroppedBytes)
	if h.WritingAgain != nil {
		w += fmt.Sprintf("; logging again since %s", h.WritingAgain.Local().Format(time.RFC3339))
	}
	return w
}

// checkFolder refuses a session folder this service would not have made:
// a symbolic link, someone else's, or one others may write into. The
// refusal says how to make it readable again.
func checkFolder(dir string) error {
	st, err := os.Lstat(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return faultf(ErrNotFound, "no session folder %s", dir)
		}
		return err
	}
	const untrusted = "its records are not trusted, so it is neither read nor stopped"
	if !st.IsDir() {
		return faultf(ErrUnsafeFolder, "%s is not a folder (a symbolic link?): %s; agentctl did not make it, remove it if you did not either", dir, untrusted)
	}
	if st.Mode().Perm()&0o022 != 0 {
		return faultf(ErrUnsafeFolder, "%s may be written by others (mode %o): %s; if nobody else changed it, make it private again with `chmod 700 %s`", dir, st.Mode().Perm(), untrusted, dir)
	}
	if uid, ok := ownerOf(st); ok && uid != os.Getuid() {
		return faultf(ErrUnsafeFolder, "%s belongs to uid %d, not to this service's uid %d: %s; give it back with `chown %d %s` (as root) if it is this user's", dir, uid, os.Getuid(), untrusted, os.Getuid(), dir)
	}
	return nil
}

// untrusted is the row of a session whose folder is not safe to read:
// unknown, with why and what to do.
func untrusted(id string, why error) api.Session {
	s := api.Session{ID: id, Origin: api.OriginLaunched, Status: api.StatusUnknown, Warnings: []string{why.Error()}}
	if t, ok := home.IDTime(id); ok {
		s.CreatedAt = t
	}
	return s
}
