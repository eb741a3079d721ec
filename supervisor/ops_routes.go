package supervisor

import (
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"sync"
	"time"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/internal/text"
	"github.com/agentctl/agentctl/supervisor/events"
	"github.com/agentctl/agentctl/supervisor/fuses"
	"github.com/agentctl/agentctl/supervisor/locks"
)

func (s *Server) opsRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /v1/locks", s.handleLocks)
	mux.HandleFunc("POST /v1/locks", s.handleLock)
	mux.HandleFunc("POST /v1/locks/release", s.handleUnlock)
	mux.HandleFunc("GET /v1/fuses", s.handleFuses)
	mux.HandleFunc("POST /v1/fuses", s.handleFuseSet)
	mux.HandleFunc("POST /v1/fuses/extend", s.handleFuseExtend)
	mux.HandleFunc("POST /v1/fuses/cancel", s.handleFuseCancel)
	mux.HandleFunc("GET /v1/events", s.handleEvents)
}

// maxPath is the longest path the system takes (PATH_MAX).
const maxPath = 4096

// absDir checks a directory sent by a client: the service's working
// directory is not the caller's, so it must be absolute.
func absDir(dir string) error {
	if dir == "" || !filepath.IsAbs(dir) {
		return api.Errorf(api.CodeInvalid, "directory %s must be an absolute path", text.Quote(dir))
	}
	if len(dir) > maxPath {
		return api.Errorf(api.CodeInvalid, "directory %s is longer than the %d bytes a path may have", text.Quote(dir), maxPath)
	}
	return nil
}

func apiLock(l locks.Lock) api.Lock {
	return api.Lock{Directory: l.Directory, Type: string(l.Type), PID: l.PID, StartTicks: l.StartTicks, SessionID: l.SessionID, LockedBy: l.LockedBy, Reason: l.Reason, LockedAt: l.LockedAt}
}

func apiFuse(f fuses.Fuse) api.Fuse {
	out := api.Fuse{Directory: f.Directory, TTLMs: f.TTLMs, ExpiresAt: f.ExpiresAt, SessionID: f.SessionID, Label: f.Label, SetAt: f.SetAt}
	if f.OnExpire != nil {
		out.OnExpire = &api.FuseAction{Script: f.OnExpire.Script, Webhook: f.OnExpire.Webhook}
	}
	return out
}

func (s *Server) handleLocks(w http.ResponseWriter, r *http.Request) {
	out := []api.Lock{}
	for _, l := range s.ops.locks.List() {
		out = append(out, apiLock(l))
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) handleLock(w http.ResponseWriter, r *http.Request) {
	var req api.LockRequest
	if err := decode(r, &req, false); err != nil {
		writeError(w, err)
		return
	}
	if err := absDir(req.Directory); err != nil {
		writeError(w, err)
		return
	}
	l, err := s.ops.locks.Acquire(locks.Request{Dir: req.Directory, Type: locks.Manual, By: req.By, Reason: req.Reason, Force: req.Force})
	answer(w, http.StatusOK, apiLock(l), err)
}

func (s *Server) handleUnlock(w http.ResponseWriter, r *http.Request) {
	var req api.UnlockRequest
	if err := decode(r, &req, false); err != nil {
		writeError(w, err)
		return
	}
	if err := absDir(req.Directory); err != nil {
		writeError(w, err)
		return
	}
	l, err := s.ops.locks.Unlock(req.Directory)
	answer(w, http.StatusOK, apiLock(l), err)
}

func (s *Server) handleFuses(w http.ResponseWriter, r *http.Request) {
	out := []api.Fuse{}
	for _, f := range s.ops.fuses.List() {
		out = append(out, apiFuse(f))
	}
	writeJSON(w, http.StatusOK, out)
}

// fuseRequest decodes and checks a fuse request; ttlRequired says whether
// an empty TTL is an error.
func fuseRequest(r *http.Request, ttlRequired bool) (api.FuseRequest, time.Duration, error) {
	var req api.FuseRequest
	if err := decode(r, &req, false); err != nil {
		return req, 0, err
	}
	if err := absDir(req.Directory); err != nil {
		return req, 0, err
	}
	var ttl time.Duration
	if req.TTL != "" || ttlRequired {
		d, err := time.ParseDuration(req.TTL)
		if err != nil || d <= 0 {
			return req, 0, api.Errorf(api.CodeInvalid, "ttl %s: want a positive duration such as 30m", text.Quote(req.TTL))
		}
		ttl = d
	}
	return req, ttl, nil
}

func (s *Server) handleFuseSet(w http.ResponseWriter, r *http.Request) {
	req, ttl, err := fuseRequest(r, true)
	if err != nil {
		writeError(w, err)
		return
	}
	f, err := s.ops.fuses.Set(fuses.SetRequest{Dir: req.Directory, TTL: ttl, SessionID: req.SessionID, Label: req.Label, Script: req.Script, Webhook: req.Webhook})
	answer(w, http.StatusOK, apiFuse(f), err)
}

func (s *Server) handleFuseExtend(w http.ResponseWriter, r *http.Request) {
	req, ttl, err := fuseRequest(r, false)
	if err != nil {
		writeError(w, err)
		return
	}
	f, err := s.ops.fuses.Extend(req.Directory, ttl)
	answer(w, http.StatusOK, apiFuse(f), err)
}

func (s *Server) handleFuseCancel(w http.ResponseWriter, r *http.Request) {
	req, _, err := fuseRequest(r, false)
	if err != nil {
		writeError(w, err)
		return
	}
	f, err := s.ops.fuses.Cancel(req.Directory)
	answer(w, http.StatusOK, apiFuse(f), err)
}

// handleEvents streams events as NDJSON: those after ?since= from the
// journal, then live ones, filtered by ?type=, until the client goes away
// or the service stops.
func (s *Server) handleEvents(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	filter, err := api.ParseEventFilter(q["type"])
	if err != nil {
		writeError(w, api.Errorf(api.CodeInvalid, "%s", err.Error()))
		return
	}
	after := uint64(events.Now)
	if v := q.Get("since"); v != "" {
		since, err := api.ParseEventsSince(v, time.Now())
		if err != nil {
			writeError(w, api.Errorf(api.CodeInvalid, "%s", err.Error()))
			return
		}
		if after, err = s.ops.bus.Resolve(since); err != nil {
			writeError(w, err)
			return
		}
	}
	uid := peerOf(r).UID
	if !s.streams.take(uid) {
		writeError(w, api.Errorf(api.CodeBusy, "uid %d has %d event streams open, the most one user may have: close some (each `agentctl events`, `top` and web view holds one)", uid, maxEventStreams))
		return
	}
	defer func() {
		if s.streams.give(uid) {
			// The last of many streams closed: what they held goes back to
			// the system now, not bit by bit.
			debug.FreeOSMemory()
		}
	}()
	sub := s.ops.bus.Subscribe(after)
	defer sub.Close()
	w.Header().Set(api.HeaderEventsAfter, strconv.FormatUint(sub.After(), 10))
	stream(w)
	out := s.newNDJSON(w, r)
	defer out.close()
	if err := out.start(); err != nil {
		return
	}
	for {
		e, err := sub.Next(out.ctx)
		var gap *events.GapError
		switch {
		case errors.As(err, &gap):
			e = api.Event{Type: api.EventGap, Timestamp: time.Now().UTC(), Meta: map[string]any{"from": gap.From, "to": gap.To, "message": gap.Error()}}
		case err != nil:
			return // the client left, or the service is stopping
		case !filter.Match(e.Type):
			continue
		}
		if err := out.send(e); err != nil {
			return
		}
	}
}

// withHooks adds a launched session's hook runs for status.
func (s *Server) withHooks(sess api.Session) api.Session {
	if sess.Origin == api.OriginLaunched {
		sess.Hooks = s.ops.hookRuns(sess.ID)
		for _, h := range sess.Hooks {
			switch h.Status {
			case "ok", "running":
			default:
				sess.Warnings = append(sess.Warnings, fmt.Sprintf("%s hook %s (see %s)", h.Phase, hookWords(h), h.Log))
			}
		}
	}
	return sess
}

func hookWords(h api.HookRun) string {
	switch {
	case h.Status == "interrupted":
		return "was interrupted by a service restart; its outcome is unknown"
	case h.Status == "timeout":
		return "timed out"
	case h.ExitCode != nil:
		return fmt.Sprintf("failed with exit code %d", *h.ExitCode)
	case h.Signal != "":
		return "was killed by " + h.Signal
	case h.Error != "":
		return "failed: " + h.Error
	}
	return h.Status
}

// maxEventStreams is how many event streams one uid may hold open at once:
// each costs the service a connection and its goroutines, and a runaway
// script must not exhaust it for everyone.
const maxEventStreams = 256

// releaseAfter is how many event streams open at once make their closing
// worth handing memory back to the system for.
const releaseAfter = 64

// streamCounts counts the event streams open per uid.
type streamCounts struct {
	mu  sync.Mutex
	max int
	n   map[int]int
	// open counts every uid's streams; peak is the most open since the
	// last time none were.
	open, peak int
}

// take counts a stream for uid, unless uid holds max already.
func (c *streamCounts) take(uid int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n[uid] >= c.max {
		return false
	}
	c.n[uid]++
	c.open++
	c.peak = max(c.peak, c.open)
	return true
}

// give forgets a stream of uid's. It reports when the last stream closed
// after at least releaseAfter were open at once.
func (c *streamCounts) give(uid int) (release bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n[uid]--; c.n[uid] <= 0 {
		delete(c.n, uid)
	}
	if c.open--; c.open == 0 {
		release, c.peak = c.peak >= releaseAfter, 0
	}
	return release
}
