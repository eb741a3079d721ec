package supervisor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/agentctl/agentctl/adapters"
	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/logs"
	"github.com/agentctl/agentctl/proc"
	"github.com/agentctl/agentctl/spawn"
)

// maxRequestBody bounds request bodies; prompts can be large.
const maxRequestBody = 64 << 20

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/daemon", s.handleDaemonStatus)
	mux.HandleFunc("POST /v1/daemon/shutdown", s.handleShutdown)
	mux.HandleFunc("POST /v1/sessions", s.handleRun)
	mux.HandleFunc("GET /v1/sessions", s.handleList)
	mux.HandleFunc("GET /v1/sessions/{id}", s.handleGet)
	mux.HandleFunc("GET /v1/sessions/{id}/logs", s.handleLogs)
	mux.HandleFunc("GET /v1/sessions/{id}/transcript", s.handleTranscript)
	mux.HandleFunc("POST /v1/sessions/{id}/stop", s.handleStop)
	mux.HandleFunc("POST /v1/sessions/{id}/input", s.handleInput)
	mux.HandleFunc("POST /v1/prune", s.handlePrune)
	s.opsRoutes(mux)
	return onlyOwner(mux)
}

func decode(r *http.Request, v any) error {
	if err := json.NewDecoder(io.LimitReader(r.Body, maxRequestBody)).Decode(v); err != nil {
		return api.Errorf(api.CodeInvalid, "bad request body: %v", err)
	}
	return nil
}

func (s *Server) handleDaemonStatus(w http.ResponseWriter, r *http.Request) {
	running := 0
	sessions, _, _ := s.records.all()
	for _, sess := range sessions {
		if sess.Status == api.StatusRunning {
			running++
		}
	}
	writeJSON(w, http.StatusOK, api.DaemonStatus{
		PID:             os.Getpid(),
		Version:         s.opts.Version,
		Socket:          s.opts.Home.Socket(),
		Home:            string(s.opts.Home),
		UptimeS:         time.Since(s.started).Seconds(),
		SessionsRunning: running,
	})
}

func (s *Server) handleShutdown(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]int{"pid": os.Getpid()})
	go s.cancel()
}

func (s *Server) handleRun(w http.ResponseWriter, r *http.Request) {
	var req api.RunRequest
	if err := decode(r, &req); err != nil {
		writeError(w, err)
		return
	}
	// A caller killed mid-request must not leave a half-started session:
	// the start runs to its end regardless.
	sess, err := s.launch(context.WithoutCancel(r.Context()), req)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, sess)
}

// listFilter is what list may be asked to narrow to.
type listFilter struct {
	all     bool
	status  string
	adapter string
	group   string
	labels  map[string]string
	since   time.Time
}

func parseListFilter(r *http.Request) (listFilter, error) {
	q := r.URL.Query()
	f := listFilter{all: q.Get("all") == "1", status: q.Get("status"), adapter: q.Get("adapter"), group: q.Get("group")}
	for _, l := range q["label"] {
		k, v, ok := strings.Cut(l, "=")
		if !ok {
			return f, api.Errorf(api.CodeInvalid, "label filter %q: want KEY=VALUE", l)
		}
		if f.labels == nil {
			f.labels = map[string]string{}
		}
		f.labels[k] = v
	}
	if v := q.Get("since"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			return f, api.Errorf(api.CodeInvalid, "since %q: %v", v, err)
		}
		f.since = time.Now().Add(-d)
	} else {
		f.since = time.Now().Add(-7 * 24 * time.Hour)
	}
	return f, nil
}

func (f listFilter) keep(s *api.Session) bool {
	switch {
	case f.status != "":
		if string(s.Status) != f.status {
			return false
		}
	case !f.all:
		if s.Status != api.StatusRunning {
			return false
		}
	}
	if f.all && s.Status != api.StatusRunning {
		last := s.CreatedAt
		if s.EndedAt != nil {
			last = *s.EndedAt
		} else if s.LastActivity != nil {
			last = *s.LastActivity
		}
		if last.Before(f.since) {
			return false
		}
	}
	if f.adapter != "" && s.Adapter != f.adapter {
		return false
	}
	if f.group != "" && s.Group != f.group {
		return false
	}
	for k, v := range f.labels {
		if s.Labels[k] != v {
			return false
		}
	}
	return true
}

// sessions is the merged view: launched sessions and those only adapters
// know, those keep accepts (all when keep is nil).
func (s *Server) sessions(ctx context.Context, keep func(*api.Session) bool) ([]api.Session, []string, error) {
	launched, warnings, err := s.records.all()
	if err != nil {
		return nil, nil, err
	}
	disc := s.disc.run(ctx)
	// Busy/idle changes are announced for every running session, listed
	// or not.
	var active []api.Session
	all := merge(launched, disc, func(sess *api.Session) bool {
		if sess.Activity != "" && sess.Status == api.StatusRunning {
			active = append(active, *sess)
		}
		return keep == nil || keep(sess)
	})
	s.ops.observeActivity(active)
	return all, append(warnings, disc.warnings...), nil
}

func (s *Server) handleList(w http.ResponseWriter, r *http.Request) {
	f, err := parseListFilter(r)
	if err != nil {
		writeError(w, err)
		return
	}
	kept, warnings, err := s.sessions(r.Context(), f.keep)
	if err != nil {
		writeError(w, err)
		return
	}
	out := api.SessionList{Sessions: kept, Warnings: warnings}
	if out.Sessions == nil {
		out.Sessions = []api.Session{}
	}
	sortByCreation(out.Sessions)
	writeJSON(w, http.StatusOK, out)
}

// lookup resolves an id or unique prefix to the merged session object.
func (s *Server) lookup(ctx context.Context, prefix string) (api.Session, []string, error) {
	if !ValidID(prefix) {
		return api.Session{}, nil, api.Errorf(api.CodeInvalid, "%q is not a valid session id", prefix)
	}
	if id, err := s.records.resolve(prefix); err == nil {
		sess, err := s.records.get(id)
		if err != nil {
			return api.Session{}, nil, err
		}
		if sess.NativeID == "" || s.disc.adapter(sess.Adapter) == nil {
			return sess, nil, nil
		}
		merged, warnings := s.withNative(ctx, sess)
		return merged, warnings, nil
	} else if api.CodeOf(err) != api.CodeNotFound {
		return api.Session{}, nil, err
	}
	// Not launched here: maybe a session only an adapter knows.
	all, warnings, err := s.sessions(ctx, func(sess *api.Session) bool {
		return sess.Origin == api.OriginDiscovered && strings.HasPrefix(sess.ID, prefix)
	})
	if err != nil {
		return api.Session{}, nil, err
	}
	var ids []string
	byID := map[string]api.Session{}
	for _, sess := range all {
		if sess.Origin == api.OriginDiscovered {
			ids = append(ids, sess.ID)
			byID[sess.ID] = sess
		}
	}
	id, err := resolvePrefix(prefix, ids)
	if err != nil {
		return api.Session{}, warnings, err
	}
	return byID[id], warnings, nil
}

// withNative enriches one launched session from its adapter.
func (s *Server) withNative(ctx context.Context, sess api.Session) (api.Session, []string) {
	d := newDiscovery(nil, s.opts.DiscoveryTimeout)
	if a := s.disc.adapter(sess.Adapter); a != nil {
		d.adapters = append(d.adapters, a)
	}
	merged := merge([]api.Session{sess}, d.run(ctx), nil)
	for _, m := range merged {
		if m.ID == sess.ID {
			return m, nil
		}
	}
	return sess, nil
}

func resolvePrefix(prefix string, ids []string) (string, error) {
	var matches []string
	for _, id := range ids {
		if id == prefix {
			return id, nil
		}
		if strings.HasPrefix(id, prefix) {
			matches = append(matches, id)
		}
	}
	switch len(matches) {
	case 0:
		return "", api.Errorf(api.CodeNotFound, "no session matches %q (see `agentctl list -a`)", prefix)
	case 1:
		return matches[0], nil
	}
	e := api.Errorf(api.CodeAmbiguous, "%q matches %d sessions: %s; type more of the id", prefix, len(matches), strings.Join(matches, ", "))
	e.Candidates = matches
	return "", e
}

func (s *Server) handleGet(w http.ResponseWriter, r *http.Request) {
	sess, warnings, err := s.lookup(r.Context(), r.PathValue("id"))
	if err != nil {
		writeError(w, err)
		return
	}
	sess.Warnings = append(sess.Warnings, warnings...)
	writeJSON(w, http.StatusOK, s.withHooks(sess))
}

// launchedDir resolves a launched session's folder, or explains why the
// session has none.
func (s *Server) launchedDir(ctx context.Context, prefix string) (api.Session, string, error) {
	sess, _, err := s.lookup(ctx, prefix)
	if err != nil {
		return api.Session{}, "", err
	}
	if sess.Origin != api.OriginLaunched {
		return sess, "", api.Errorf(api.CodeInvalid, "session %s was not started by agentctl, so it has no output log or terminal here", sess.ID)
	}
	return sess, s.opts.Home.SessionDir(sess.ID), nil
}

func (s *Server) handleLogs(w http.ResponseWriter, r *http.Request) {
	sess, dir, err := s.launchedDir(r.Context(), r.PathValue("id"))
	if err != nil {
		writeError(w, err)
		return
	}
	q := r.URL.Query()
	n, _ := strconv.Atoi(q.Get("n"))
	raw, follow := q.Get("raw") == "1", q.Get("follow") == "1"
	path := filepath.Join(dir, spawn.LogFile)
	data, pos, err := logs.Tail(path, n)
	if err != nil {
		writeError(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	enc := json.NewEncoder(w)
	var strip logs.Stripper
	emit := func(b []byte) error {
		if raw {
			if err := enc.Encode(api.LogChunk{Data: b}); err != nil {
				return err
			}
		} else {
			for _, line := range strip.Write(b) {
				if err := enc.Encode(api.LogChunk{Text: line}); err != nil {
					return err
				}
			}
		}
		return rc.Flush()
	}
	if err := emit(data); err != nil {
		return
	}
	if follow {
		rec, rerr := spawn.ReadRecord(dir)
		ended := func() bool {
			if e, _ := spawn.ReadExit(dir); e != nil {
				return true
			}
			return rerr != nil || !proc.Alive(rec.Shim) && !proc.Alive(rec.Process)
		}
		if err := logs.Follow(r.Context(), path, pos, ended, emit); err != nil {
			return
		}
	}
	if !raw {
		if last, ok := strip.Flush(); ok {
			enc.Encode(api.LogChunk{Text: last})
		}
	}
	if follow {
		if final, err := s.records.get(sess.ID); err == nil {
			sess = final
		}
	}
	enc.Encode(api.LogChunk{End: true, Session: &sess})
	rc.Flush()
}

func (s *Server) handleTranscript(w http.ResponseWriter, r *http.Request) {
	sess, warnings, err := s.lookup(r.Context(), r.PathValue("id"))
	if err != nil {
		writeError(w, err)
		return
	}
	n, _ := strconv.Atoi(r.URL.Query().Get("n"))
	if n <= 0 {
		n = 1
	}
	out := api.Transcript{Session: sess, Warnings: warnings, Messages: []api.Message{}}
	if a := s.disc.adapter(sess.Adapter); a != nil && sess.NativeID != "" {
		assistant, err := lastAssistant(r.Context(), a, sess.NativeID, n)
		if err != nil {
			out.Warnings = append(out.Warnings, fmt.Sprintf("adapter %s: read transcript: %v", sess.Adapter, err))
		} else if len(assistant) > 0 {
			if len(assistant) > n {
				assistant = assistant[len(assistant)-n:]
			}
			out.Source, out.Messages = "native", assistant
			writeJSON(w, http.StatusOK, out)
			return
		}
	}
	if sess.Origin != api.OriginLaunched {
		out.Source = "native"
		writeJSON(w, http.StatusOK, out)
		return
	}
	// Nothing from the agent's own records yet: the tail of its output.
	data, _, err := logs.Tail(filepath.Join(s.opts.Home.SessionDir(sess.ID), spawn.LogFile), 40*n)
	if err != nil {
		writeError(w, err)
		return
	}
	out.Source = "log"
	out.Messages = append(out.Messages, api.Message{Role: "output", Text: strings.Join(logs.StripLines(data), "\n")})
	writeJSON(w, http.StatusOK, out)
}

// maxPeekMessages bounds how far back a peek looks for assistant messages.
const maxPeekMessages = 4096

// lastAssistant returns the last n assistant messages of a native session.
// It reads a bounded tail, enough for n assistant messages among the user
// and tool entries around them, and reads further back only when a long
// run of tool calls hides them.
func lastAssistant(ctx context.Context, a adapters.Adapter, nativeID string, n int) ([]api.Message, error) {
	for want := 8*n + 32; ; want *= 4 {
		msgs, err := a.Transcript(ctx, nativeID, want)
		if err != nil {
			return nil, err
		}
		var assistant []api.Message
		for _, m := range msgs {
			if m.Role == "assistant" {
				am := api.Message{Role: m.Role, Text: m.Text}
				if !m.Time.IsZero() {
					t := m.Time
					am.Time = &t
				}
				assistant = append(assistant, am)
			}
		}
		if len(assistant) >= n || len(msgs) < want || want >= maxPeekMessages {
			return assistant, nil
		}
	}
}

func (s *Server) handleStop(w http.ResponseWriter, r *http.Request) {
	var req api.StopRequest
	if r.ContentLength != 0 {
		if err := decode(r, &req); err != nil {
			writeError(w, err)
			return
		}
	}
	grace := spawn.DefaultGrace
	if req.Timeout != "" {
		d, err := time.ParseDuration(req.Timeout)
		if err != nil || d < 0 {
			writeError(w, api.Errorf(api.CodeInvalid, "timeout %q: want a duration such as 10s", req.Timeout))
			return
		}
		grace = d
	}
	sess, _, err := s.lookup(r.Context(), r.PathValue("id"))
	if err != nil {
		writeError(w, err)
		return
	}
	if sess.Status.Ended() {
		writeJSON(w, http.StatusOK, sess)
		return
	}
	ctx := context.WithoutCancel(r.Context())
	if sess.Origin != api.OriginLaunched {
		final, err := s.stopNative(ctx, sess)
		if err != nil {
			writeError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, final)
		return
	}
	final, err := s.stop(ctx, sess.ID, s.opts.Home.SessionDir(sess.ID), spawn.StopOptions{Grace: grace, Force: req.Force})
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, final)
}

// stop ends a session and returns its final state once no process of it
// remains.
func (s *Server) stop(ctx context.Context, id, dir string, opts spawn.StopOptions) (api.Session, error) {
	rec, err := spawn.ReadRecord(dir)
	if err != nil {
		return api.Session{}, err
	}
	opts.Signal = rec.StopSignal
	if _, err := spawn.Stop(ctx, dir, opts); err != nil {
		if !errors.Is(err, spawn.ErrShimGone) {
			return api.Session{}, fmt.Errorf("stop %s: %w", id, err)
		}
		// The monitor is gone (killed): end the processes ourselves.
		if err := spawn.StopWithoutShim(ctx, rec, opts); err != nil {
			return api.Session{}, fmt.Errorf("stop %s: %w", id, err)
		}
	}
	// The shim answers after exit.json is written; without a shim the
	// session is lost. Either way it has ended now.
	deadline := time.Now().Add(5 * time.Second)
	for {
		sess, err := s.records.get(id)
		if err != nil {
			return api.Session{}, err
		}
		if sess.Status.Ended() || time.Now().After(deadline) {
			return sess, nil
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (s *Server) handleInput(w http.ResponseWriter, r *http.Request) {
	var req api.InputRequest
	if err := decode(r, &req); err != nil {
		writeError(w, err)
		return
	}
	sess, dir, err := s.launchedDir(r.Context(), r.PathValue("id"))
	if err != nil {
		writeError(w, err)
		return
	}
	if sess.Status != api.StatusRunning {
		writeError(w, api.Errorf(api.CodeNotRunning, "session %s is %s: it takes no input", sess.ID, sess.Status))
		return
	}
	if err := spawn.SendInput(r.Context(), dir, req.Data); err != nil {
		writeError(w, fmt.Errorf("send input to %s: %w", sess.ID, err))
		return
	}
	writeJSON(w, http.StatusOK, sess)
}

func (s *Server) handlePrune(w http.ResponseWriter, r *http.Request) {
	var req api.PruneRequest
	if r.ContentLength != 0 {
		if err := decode(r, &req); err != nil {
			writeError(w, err)
			return
		}
	}
	var older time.Duration
	if req.OlderThan != "" {
		d, err := time.ParseDuration(req.OlderThan)
		if err != nil {
			writeError(w, api.Errorf(api.CodeInvalid, "older-than %q: %v", req.OlderThan, err))
			return
		}
		older = d
	}
	removed, err := s.prune(older)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, api.PruneResult{Removed: removed})
}
