package supervisor

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/internal/text"
)

// maxRequestBody bounds request bodies; prompts can be large.
const maxRequestBody = 64 << 20

// Large bodies are admitted while the bytes they announce fit a budget, so
// parallel large requests cannot take the service's memory with them: one
// 60 MB prompt at a time, or dozens of 2 MB ones. One waits its turn at
// most largeBodyWait, then hears that the service is busy.
const (
	largeBody      = 1 << 20
	largeBodyBytes = maxRequestBody
	largeBodyWait  = 20 * time.Second
)

// Each route decodes its request, makes one call, and encodes the answer.
func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/daemon", s.handleDaemonStatus)
	mux.HandleFunc("POST /v1/daemon/shutdown", s.handleShutdown)
	mux.HandleFunc("POST /v1/sessions", s.handleLaunch)
	mux.HandleFunc("GET /v1/sessions", s.handleList)
	mux.HandleFunc("GET /v1/sessions/{id}", s.handleGet)
	mux.HandleFunc("GET /v1/sessions/{id}/logs", s.handleLogs)
	mux.HandleFunc("GET /v1/sessions/{id}/transcript", s.handleTranscript)
	mux.HandleFunc("GET /v1/sessions/{id}/explain", s.handleExplain)
	mux.HandleFunc("GET /v1/sessions/{id}/attach", s.handleAttach)
	mux.HandleFunc("POST /v1/sessions/{id}/stop", s.handleStop)
	mux.HandleFunc("POST /v1/sessions/{id}/input", s.handleInput)
	mux.HandleFunc("POST /v1/prune", s.handlePrune)
	mux.HandleFunc("GET /v1/stats", s.handleStats)
	s.opsRoutes(mux)
	s.lifecycleRoutes(mux)
	s.attentionRoutes(mux)
	s.limitsRoutes(mux)
	return withVersion(s.opts.Version, onlyOwner(withRelayed(s.boundBodies(mux))))
}

// withVersion names the service's version on every answer.
func withVersion(version string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if version != "" {
			w.Header().Set(api.HeaderServiceVersion, version)
		}
		next.ServeHTTP(w, r)
	})
}

// boundBodies admits requests with a large (or unannounced) body within
// the budget of bytes (s.bodies); the others wait their turn, up to
// largeBodyWait, or give up with their caller. A request holds its share
// while it is read and handled, not while its answer is written: a client
// that never reads its answer holds nothing.
func (s *Server) boundBodies(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength <= largeBody && (r.ContentLength >= 0 || r.Body == http.NoBody) {
			next.ServeHTTP(w, r)
			return
		}
		n := r.ContentLength
		if n < 0 || n > largeBodyBytes {
			n = largeBodyBytes
		}
		ctx, cancel := context.WithTimeout(r.Context(), s.opts.BodyWait)
		err := s.bodies.acquire(ctx, n)
		cancel()
		if err != nil {
			if r.Context().Err() == nil {
				writeError(w, api.Errorf(api.CodeBusy, "the service is busy with other large requests (it takes %d MiB of them at a time) and this one waited %s: try again", largeBodyBytes>>20, s.opts.BodyWait))
			}
			return
		}
		var once sync.Once
		release := func() { once.Do(func() { s.bodies.release(n) }) }
		defer release()
		next.ServeHTTP(&answering{ResponseWriter: w, begin: release}, r)
	})
}

// answering calls begin when the answer starts.
type answering struct {
	http.ResponseWriter
	begin func()
}

func (a *answering) WriteHeader(code int) { a.begin(); a.ResponseWriter.WriteHeader(code) }

func (a *answering) Write(b []byte) (int, error) { a.begin(); return a.ResponseWriter.Write(b) }

// Unwrap lets http.ResponseController reach the connection's writer.
func (a *answering) Unwrap() http.ResponseWriter { return a.ResponseWriter }

// admission hands out a budget of bytes, first come first served.
type admission struct {
	mu    sync.Mutex
	free  int64
	queue []*admissionWait
}

type admissionWait struct {
	n     int64
	ready chan struct{}
}

func newAdmission(budget int64) *admission { return &admission{free: budget} }

// acquire waits until n bytes of the budget are free, or ctx ends.
func (a *admission) acquire(ctx context.Context, n int64) error {
	a.mu.Lock()
	if len(a.queue) == 0 && a.free >= n {
		a.free -= n
		a.mu.Unlock()
		return nil
	}
	w := &admissionWait{n: n, ready: make(chan struct{})}
	a.queue = append(a.queue, w)
	a.mu.Unlock()
	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	select {
	case <-w.ready:
		// Admitted as the wait ended: give the share back.
		a.free += n
	default:
		a.queue = slices.DeleteFunc(a.queue, func(q *admissionWait) bool { return q == w })
	}
	a.grantLocked()
	return ctx.Err()
}

// release gives n bytes back.
func (a *admission) release(n int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.free += n
	a.grantLocked()
}

func (a *admission) grantLocked() {
	for len(a.queue) > 0 && a.free >= a.queue[0].n {
		w := a.queue[0]
		a.queue = a.queue[1:]
		a.free -= w.n
		close(w.ready)
	}
}

// stream lifts the read deadline for an answer that goes on for as long as
// its client listens.
func stream(w http.ResponseWriter) {
	http.NewResponseController(w).SetReadDeadline(time.Time{})
}

// writeJSON and writeError are the one place API answers are encoded.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, err error) {
	e := apiError(err)
	writeJSON(w, api.HTTPStatus(e.Code), e)
}

// answer writes v, or the error.
func answer(w http.ResponseWriter, status int, v any, err error) {
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, status, v)
}

// decode reads a JSON body; an empty body leaves v as it is when optional.
// An announced body is read into a buffer of its size, and decoded from
// there: a decoder's growing buffer would cost twice as much again.
func decode(r *http.Request, v any, optional bool) error {
	if optional && r.ContentLength == 0 {
		return nil
	}
	b, err := readBody(r)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return api.Errorf(api.CodeInvalid, "bad request body: %s", text.Ellipsis(err.Error(), 200))
	}
	return nil
}

// readBody reads a request's body, up to maxRequestBody.
func readBody(r *http.Request) ([]byte, error) {
	if r.ContentLength > maxRequestBody {
		return nil, api.Errorf(api.CodeInvalid, "bad request body: %d bytes, over the %d MiB a request may have", r.ContentLength, maxRequestBody>>20)
	}
	if r.ContentLength >= 0 {
		b := make([]byte, r.ContentLength)
		if _, err := io.ReadFull(r.Body, b); err != nil {
			return nil, api.Errorf(api.CodeInvalid, "bad request body: read %d bytes: %v", r.ContentLength, err)
		}
		return b, nil
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, maxRequestBody+1))
	if err != nil {
		return nil, api.Errorf(api.CodeInvalid, "bad request body: %v", err)
	}
	if len(b) > maxRequestBody {
		return nil, api.Errorf(api.CodeInvalid, "bad request body: over the %d MiB a request may have", maxRequestBody>>20)
	}
	return b, nil
}

func (s *Server) handleDaemonStatus(w http.ResponseWriter, r *http.Request) {
	st := api.DaemonStatus{
		PID:             os.Getpid(),
		Version:         s.opts.Version,
		Socket:          s.opts.Home.Socket(),
		Home:            string(s.opts.Home),
		UptimeS:         time.Since(s.started).Seconds(),
		SessionsRunning: len(s.running()),
	}
	if s.opts.Watch != nil {
		ws := s.opts.Watch()
		st.Watch = &ws
	}
	if s.cgroups != nil {
		cs := s.cgroups.Status()
		st.Cgroups = &api.CgroupStatus{Enabled: cs.Enabled, Reason: cs.Reason, V2: cs.V2, V1: cs.V1, Controllers: cs.Controllers, Summary: cs.String()}
	}
	st.Reading = s.core.Reading()
	st.Web = s.webStatus()
	queued := 0
	for _, n := range s.core.QueuedBy() {
		queued += n
	}
	if pol := s.core.Admission(); !pol.Zero() || queued > 0 {
		st.Admission = &api.AdmissionStatus{Policy: pol, Queued: queued}
	}
	writeJSON(w, http.StatusOK, st)
}

func (s *Server) handleShutdown(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]int{"pid": os.Getpid()})
	go s.cancel()
}

func (s *Server) handleLaunch(w http.ResponseWriter, r *http.Request) {
	var req api.RunRequest
	if err := decode(r, &req, false); err != nil {
		writeError(w, err)
		return
	}
	// A caller on another host sends neither its environment nor its
	// directory, which mean nothing here: the session gets the service's
	// environment and, unless told, the service user's home.
	if req.Env == nil {
		req.Env = os.Environ()
	}
	if req.Cwd == "" {
		req.Cwd, _ = os.UserHomeDir()
	}
	sess, err := s.core.Launch(r.Context(), req)
	answer(w, http.StatusCreated, sess, err)
}

func (s *Server) handleList(w http.ResponseWriter, r *http.Request) {
	o, err := api.ParseListOptions(r.URL.Query())
	if err != nil {
		writeError(w, err)
		return
	}
	if o.Waiting || o.Resources {
		// Ordered by waiting, or with what each costs: made whole first.
		list, err := s.core.List(r.Context(), o)
		if err != nil {
			writeError(w, err)
			return
		}
		writeList(w, list, o.Table)
		return
	}
	lw := listWriter{w: w, table: o.Table}
	warnings, err := s.core.ListEach(r.Context(), o, lw.begin, lw.session)
	switch {
	case err != nil && !lw.begun:
		writeError(w, err)
	case err == nil:
		lw.end(warnings, nil)
	}
	// Otherwise the client went away, or a session could not be written:
	// the answer is cut short.
}

// writeList writes a list made whole (see listWriter).
func writeList(w http.ResponseWriter, list api.SessionList, table bool) {
	lw := listWriter{w: w, table: table}
	lw.begin(len(list.Sessions))
	for i := range list.Sessions {
		if lw.session(&list.Sessions[i]) != nil {
			return // the answer is cut short
		}
	}
	lw.end(list.Warnings, list.Machine)
}

// listWriter writes a list's answer a session at a time, as the core
// makes them, through a small buffer: the answer for a large store (tens
// of MB) is never held whole, as writeJSON would hold it. The JSON is
// writeJSON's, but for the line breaks between sessions; table writes
// each session's TableRow.
type listWriter struct {
	w     http.ResponseWriter
	table bool
	bw    *bufio.Writer
	// b is each session's JSON: AppendJSON writes Encode's bytes without
	// its reflection (most of a large list's time), into this one buffer.
	b     []byte
	n     int
	begun bool
}

// begin writes the headers, with at most how many sessions follow (the
// client sizes its list by it), and opens the list.
func (lw *listWriter) begin(atMost int) {
	lw.w.Header().Set("Content-Type", "application/json")
	lw.w.Header().Set(api.HeaderListCount, strconv.Itoa(atMost))
	lw.w.WriteHeader(http.StatusOK)
	lw.bw = bufio.NewWriterSize(lw.w, 64<<10)
	lw.bw.WriteString(`{"sessions":[`)
	lw.begun = true
}

// session writes s, the list's next session.
func (lw *listWriter) session(s *api.Session) error {
	if lw.n > 0 {
		lw.bw.WriteByte(',')
	}
	lw.n++
	if lw.table {
		row := s.TableRow()
		s = &row
	}
	var err error
	if lw.b, err = s.AppendJSON(lw.b[:0]); err != nil {
		return err
	}
	lw.b = append(lw.b, '\n')
	_, err = lw.bw.Write(lw.b)
	return err
}

// end closes the list with its warnings and the machine's figures.
func (lw *listWriter) end(warnings []string, machine *api.Machine) {
	enc := json.NewEncoder(lw.bw)
	lw.bw.WriteByte(']')
	if len(warnings) > 0 {
		lw.bw.WriteString(`,"warnings":`)
		enc.Encode(warnings)
	}
	if machine != nil {
		lw.bw.WriteString(`,"machine":`)
		enc.Encode(machine)
	}
	lw.bw.WriteString("}\n")
	lw.bw.Flush()
}

func (s *Server) handleGet(w http.ResponseWriter, r *http.Request) {
	sess, err := s.core.Get(r.Context(), r.PathValue("id"))
	answer(w, http.StatusOK, s.withHooks(sess), err)
}

func (s *Server) handleExplain(w http.ResponseWriter, r *http.Request) {
	ex, err := s.core.Explain(r.Context(), r.PathValue("id"))
	ex.Session = s.withHooks(ex.Session)
	answer(w, http.StatusOK, ex, err)
}

func (s *Server) handleTranscript(w http.ResponseWriter, r *http.Request) {
	n, _ := strconv.Atoi(r.URL.Query().Get("n"))
	t, err := s.core.Transcript(r.Context(), r.PathValue("id"), n)
	answer(w, http.StatusOK, t, err)
}

func (s *Server) handleStop(w http.ResponseWriter, r *http.Request) {
	var req api.StopRequest
	if err := decode(r, &req, true); err != nil {
		writeError(w, err)
		return
	}
	sess, err := s.core.Stop(r.Context(), r.PathValue("id"), req)
	answer(w, http.StatusOK, sess, err)
}

func (s *Server) handleInput(w http.ResponseWriter, r *http.Request) {
	var req api.InputRequest
	if err := decode(r, &req, false); err != nil {
		writeError(w, err)
		return
	}
	sess, err := s.core.Input(r.Context(), r.PathValue("id"), req.Data)
	answer(w, http.StatusOK, sess, err)
}

func (s *Server) handlePrune(w http.ResponseWriter, r *http.Request) {
	var req api.PruneRequest
	if err := decode(r, &req, true); err != nil {
		writeError(w, err)
		return
	}
	var older time.Duration
	if req.OlderThan != "" {
		d, err := time.ParseDuration(req.OlderThan)
		if err != nil {
			writeError(w, api.Errorf(api.CodeInvalid, "older-than %s: want a duration such as 24h", text.Quote(req.OlderThan)))
			return
		}
		older = d
	}
	removed, err := s.prune(older, req.DryRun)
	answer(w, http.StatusOK, api.PruneResult{Removed: removed}, err)
}

// handleLogs streams a session's output as NDJSON, one chunk a line; an
// error before the first chunk is an ordinary error answer.
func (s *Server) handleLogs(w http.ResponseWriter, r *http.Request) {
	o, err := api.ParseLogOptions(r.URL.Query())
	if err != nil {
		writeError(w, err)
		return
	}
	stream(w)
	out := s.newNDJSON(w, r)
	defer out.close()
	err = s.core.Logs(out.ctx, r.PathValue("id"), o, func(ch api.LogChunk) error { return out.send(ch) })
	if err != nil && !out.began() {
		writeError(w, err)
	}
}

// ndjson writes a stream of JSON lines, each flushed as it is written. A
// stream that has had nothing to say for a while says so with an empty
// line, so a client can tell a quiet stream from a dead service.
type ndjson struct {
	w      http.ResponseWriter
	rc     *http.ResponseController
	enc    *json.Encoder
	ctx    context.Context
	cancel context.CancelFunc
	alive  sync.WaitGroup
	every  time.Duration // how long it may be silent

	mu      sync.Mutex
	started bool
	last    time.Time
}

// newNDJSON starts a stream for r's answer; close ends it, before the
// handler returns.
func (s *Server) newNDJSON(w http.ResponseWriter, r *http.Request) *ndjson {
	ctx, cancel := context.WithCancel(r.Context())
	return &ndjson{w: w, rc: http.NewResponseController(w), enc: json.NewEncoder(w), ctx: ctx, cancel: cancel, every: s.opts.KeepAlive}
}

// start writes the stream's header once, and keeps the stream alive.
func (n *ndjson) start() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.startLocked()
}

func (n *ndjson) startLocked() error {
	if n.started {
		return nil
	}
	n.started = true
	n.w.Header().Set("Content-Type", "application/x-ndjson")
	n.w.WriteHeader(http.StatusOK)
	n.last = time.Now()
	n.alive.Add(1)
	go n.keepAlive()
	return n.rc.Flush()
}

// began says whether the stream's header went out (an error after that
// can no longer be an error answer).
func (n *ndjson) began() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.started
}

// close stops the keep-alives; nothing is written after it returns.
func (n *ndjson) close() {
	n.cancel()
	n.alive.Wait()
}

func (n *ndjson) keepAlive() {
	defer n.alive.Done()
	t := time.NewTicker(n.every / 3)
	defer t.Stop()
	for {
		select {
		case <-n.ctx.Done():
			return
		case <-t.C:
		}
		n.mu.Lock()
		if time.Since(n.last) >= n.every {
			n.w.Write([]byte("\n"))
			n.rc.Flush()
			n.last = time.Now()
		}
		n.mu.Unlock()
	}
}

func (n *ndjson) send(v any) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if err := n.startLocked(); err != nil {
		return err
	}
	n.last = time.Now()
	if err := n.enc.Encode(v); err != nil {
		return err
	}
	return n.rc.Flush()
}

// attachUpgrade is the protocol an attach request switches to: the
// terminal's frames (api.WriteFrame) in both directions.
const attachUpgrade = "agentctl-attach"

// handleAttach joins a session's terminal: once its monitor accepts, the
// connection switches protocols and carries frames both ways until either
// side leaves.
func (s *Server) handleAttach(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	rows, _ := strconv.ParseUint(q.Get("rows"), 10, 16)
	cols, _ := strconv.ParseUint(q.Get("cols"), 10, 16)
	at, _, err := s.core.Attach(r.Context(), r.PathValue("id"), uint16(rows), uint16(cols))
	if err != nil {
		writeError(w, err)
		return
	}
	defer at.Close()
	conn, buf, err := http.NewResponseController(w).Hijack()
	if err != nil {
		writeError(w, fmt.Errorf("attach: take over the connection: %w", err))
		return
	}
	defer conn.Close()
	conn.SetDeadline(time.Time{})
	fmt.Fprintf(buf, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: %s\r\n\r\n", attachUpgrade)
	if err := buf.Flush(); err != nil {
		return
	}
	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	at.Splice(ctx, struct {
		*bufio.Reader
		io.Writer
	}{buf.Reader, conn})
}
