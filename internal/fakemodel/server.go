// Package fakemodel is the fake model server that agentctl's tests point the
// real agent CLIs at. It speaks the three wire protocols those CLIs use
// (Anthropic Messages, OpenAI Chat Completions, OpenAI Responses), streaming
// and not, on 127.0.0.1 only, and answers from directives written in the
// prompt:
//
//	[[sleep: N]]   one tool call running `echo sleeping N; sleep N; echo slept N`
//	[[bash: CMD]]  one tool call running CMD (several directives run in order, one per turn)
//	[[escalate: CMD]] as bash, asking to run outside the sandbox where the
//	               tool offers that (Codex's exec_command): the agent asks
//	               the user's permission first, as its approval policy says
//	[[text: WORDS]] the final answer (default "hi from fakellm")
//	[[delay: S]]   wait S seconds before answering (a slow model)
//	[[error: CODE]] answer every model call with HTTP CODE
//	[[limit: S]]   answer every model call with the provider's usage-limit
//	               error, its window resetting S seconds from now
//
// The directives are read from the latest plain user text of the request, so
// a resumed session's new prompt brings its own. Tool results after that text
// count the steps already taken; a tool call is made only when the request
// offers a shell-like tool.
package fakemodel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// maxLoggedRequests bounds the in-memory request log of a long-running server;
// older entries are dropped first.
const maxLoggedRequests = 2000

// maxKeptBodies is how many of the latest requests keep their body in the
// log.
const maxKeptBodies = 100

// maxBody bounds a request body the server will read.
const maxBody = 64 << 20

// Request is one entry of the request log.
type Request struct {
	N         int       `json:"n"`
	Time      time.Time `json:"t"`
	Method    string    `json:"method"`
	Path      string    `json:"path"`
	UserAgent string    `json:"ua,omitempty"`
	// Auth is how the client authenticated: "x-api-key", "bearer" or "".
	Auth string `json:"auth,omitempty"`
	// Beta is the anthropic-beta header.
	Beta string `json:"beta,omitempty"`
	// API is the protocol the request was answered in: "anthropic",
	// "chat", "responses", "count_tokens", "models", "head" or "not_found".
	API       string   `json:"api"`
	Model     string   `json:"model,omitempty"`
	Stream    bool     `json:"stream"`
	MaxTokens int      `json:"max_tokens,omitempty"`
	Messages  int      `json:"n_messages,omitempty"`
	Tools     []string `json:"tools,omitempty"`
	// Prompt is the user text the directives were read from.
	Prompt string `json:"prompt,omitempty"`
	// Step is the number of tool results since that text.
	Step int `json:"step"`
	// Reply says what was answered: "text: WORDS", "tool: NAME CMD",
	// "error: CODE", "limit: RESET-EPOCH", ...
	Reply string `json:"reply"`
	// Body is the raw request body, kept for the latest 100 requests only
	// and not written to the log file.
	Body []byte `json:"-"`
}

// Option configures Start.
type Option func(*config)

type config struct {
	port    int
	logPath string
}

// WithPort listens on port instead of a free one.
func WithPort(port int) Option { return func(c *config) { c.port = port } }

// WithLogFile appends one JSON line per request to path.
func WithLogFile(path string) Option { return func(c *config) { c.logPath = path } }

// Server is a running fake model server.
type Server struct {
	ln   net.Listener
	http *http.Server
	done chan struct{}
	// closeOnce makes Close idempotent and safe from the context watcher.
	closeOnce sync.Once
	closeErr  error

	mu       sync.Mutex
	seq      int
	requests []Request
	logFile  *os.File
	// limitUntil, when set, answers every model request before it with a
	// usage-limit error (LimitUntil).
	limitUntil time.Time
}

// Start listens on 127.0.0.1 (a free port unless WithPort) and serves until
// ctx is done or Close is called.
func Start(ctx context.Context, opts ...Option) (*Server, error) {
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(cfg.port)))
	if err != nil {
		return nil, fmt.Errorf("fake model server: listen: %w", err)
	}
	s := &Server{ln: ln, done: make(chan struct{})}
	if cfg.logPath != "" {
		f, err := os.OpenFile(cfg.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			ln.Close()
			return nil, fmt.Errorf("fake model server: open request log: %w", err)
		}
		s.logFile = f
	}
	s.http = &http.Server{
		Handler:           http.HandlerFunc(s.serveHTTP),
		ReadHeaderTimeout: 10 * time.Second,
	}
	go s.http.Serve(ln) //nolint:errcheck // returns ErrServerClosed on Close
	go func() {
		select {
		case <-ctx.Done():
			s.Close()
		case <-s.done:
		}
	}()
	return s, nil
}

// URL is the server's base URL, http://127.0.0.1:PORT, without a path.
func (s *Server) URL() string { return "http://" + s.ln.Addr().String() }

// Port is the port the server listens on.
func (s *Server) Port() int { return s.ln.Addr().(*net.TCPAddr).Port }

// Requests returns a copy of the request log, oldest first.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Close stops the server: the listener, open connections and any answer
// still waiting out a [[delay]].
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		close(s.done)
		s.closeErr = s.http.Close()
		s.mu.Lock()
		if s.logFile != nil {
			if err := s.logFile.Close(); err != nil && s.closeErr == nil {
				s.closeErr = err
			}
			s.logFile = nil
		}
		s.mu.Unlock()
	})
	if s.closeErr != nil {
		return fmt.Errorf("fake model server: close: %w", s.closeErr)
	}
	return nil
}

// next assigns the next request sequence number.
func (s *Server) next() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	return s.seq
}

// record appends r to the log.
func (s *Server) record(r Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.requests) >= maxLoggedRequests {
		s.requests = append(s.requests[:0], s.requests[len(s.requests)-maxLoggedRequests+1:]...)
	}
	s.requests = append(s.requests, r)
	if n := len(s.requests); n > maxKeptBodies {
		s.requests[n-maxKeptBodies-1].Body = nil
	}
	if s.logFile != nil {
		b, err := json.Marshal(r)
		if err == nil {
			s.logFile.Write(append(b, '\n')) //nolint:errcheck // the log is best effort
		}
	}
}

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	rec := Request{
		N:         s.next(),
		Time:      time.Now(),
		Method:    r.Method,
		Path:      r.URL.Path,
		UserAgent: r.UserAgent(),
		Beta:      r.Header.Get("anthropic-beta"),
	}
	switch {
	case r.Header.Get("x-api-key") != "":
		rec.Auth = "x-api-key"
	case strings.HasPrefix(strings.ToLower(r.Header.Get("Authorization")), "bearer "):
		rec.Auth = "bearer"
	}
	defer func() { s.record(rec) }()

	if r.Method == http.MethodHead {
		rec.API, rec.Reply = "head", "200"
		w.WriteHeader(http.StatusOK)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
	if err != nil {
		rec.API, rec.Reply = "not_found", "error: read body: "+err.Error()
		http.Error(w, "read body", http.StatusBadRequest)
		return
	}
	rec.Body = body

	path := strings.TrimSuffix(r.URL.Path, "/")
	switch {
	case r.Method == http.MethodPost && strings.HasSuffix(path, "/messages/count_tokens"):
		rec.API = "count_tokens"
		n := len(body)/4 + 1
		rec.Reply = "input_tokens: " + strconv.Itoa(n)
		writeJSON(w, http.StatusOK, map[string]any{"input_tokens": n})
	case r.Method == http.MethodPost && strings.HasSuffix(path, "/messages"):
		rec.API = "anthropic"
		s.answer(w, r, &rec, body, anthropicAPI{})
	case r.Method == http.MethodPost && strings.HasSuffix(path, "/chat/completions"):
		rec.API = "chat"
		s.answer(w, r, &rec, body, chatAPI{})
	case r.Method == http.MethodPost && strings.HasSuffix(path, "/responses"):
		rec.API = "responses"
		s.answer(w, r, &rec, body, responsesAPI{})
	case r.Method == http.MethodGet && strings.HasSuffix(path, "/models"):
		rec.API, rec.Reply = "models", "fake-model"
		writeJSON(w, http.StatusOK, modelList)
	default:
		rec.API, rec.Reply = "not_found", "404"
		writeJSON(w, http.StatusNotFound, map[string]any{
			"type":  "error",
			"error": map[string]any{"type": "not_found_error", "message": r.URL.Path},
		})
	}
}

// modelList answers GET .../models in a shape both Anthropic and OpenAI
// clients accept.
var modelList = map[string]any{
	"object": "list",
	"data": []any{map[string]any{
		"id": "fake-model", "object": "model", "type": "model", "display_name": "fake-model",
		"owned_by": "fakellm", "created": 0, "created_at": "2025-01-01T00:00:00Z",
	}},
	"has_more": false, "first_id": "fake-model", "last_id": "fake-model",
}

// api is one wire protocol: how to read a request into a conversation, and
// how to write a decided reply.
type api interface {
	parse(body []byte) (*conversation, error)
	writeError(w http.ResponseWriter, code int)
	writeReply(w http.ResponseWriter, conv *conversation, rep reply, n int)
}

func (s *Server) answer(w http.ResponseWriter, r *http.Request, rec *Request, body []byte, a api) {
	conv, err := a.parse(body)
	if err != nil {
		rec.Reply = "error: 400 " + err.Error()
		a.writeError(w, http.StatusBadRequest)
		return
	}
	rec.Model, rec.Stream, rec.MaxTokens = conv.model, conv.stream, conv.maxTokens
	rec.Messages, rec.Prompt, rec.Step = conv.nMessages, conv.prompt, conv.step()
	for i, t := range conv.tools {
		if i == 60 {
			break
		}
		rec.Tools = append(rec.Tools, t.name)
	}
	d := parseDirectives(conv.prompt)
	if d.delay > 0 {
		t := time.NewTimer(d.delay)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			rec.Reply = "canceled during delay"
			return
		case <-s.done:
			t.Stop()
			rec.Reply = "server closed during delay"
			return
		}
	}
	now := time.Now()
	if l, ok := s.limited(now); ok {
		rec.Reply = "limit: " + strconv.FormatInt(l.resetsAt.Unix(), 10)
		writeLimit(w, a, l, now)
		return
	}
	if d.limit > 0 {
		l := limitAnswer{resetsAt: now.Add(d.limit)}
		rec.Reply = "limit: " + strconv.FormatInt(l.resetsAt.Unix(), 10)
		writeLimit(w, a, l, now)
		return
	}
	if d.errorCode != 0 {
		rec.Reply = "error: " + strconv.Itoa(d.errorCode)
		a.writeError(w, d.errorCode)
		return
	}
	rep := decide(conv, d)
	rec.Reply = rep.String()
	a.writeReply(w, conv, rep, rec.N)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		// Every value written here is built from plain maps and strings.
		panic(fmt.Sprintf("fakemodel: marshal reply: %v", err))
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(code)
	w.Write(b) //nolint:errcheck // the client may have gone
}

// sse writes server-sent events. The connection is closed after the stream:
// some clients (Bun's fetch) wait forever on a kept-alive stream.
type sse struct {
	w  http.ResponseWriter
	rc *http.ResponseController
}

func startSSE(w http.ResponseWriter) *sse {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "close")
	w.WriteHeader(http.StatusOK)
	return &sse{w: w, rc: http.NewResponseController(w)}
}

// event writes one frame; name "" writes a data-only frame. v is JSON-encoded
// unless it is a string.
func (e *sse) event(name string, v any) {
	var data []byte
	if s, ok := v.(string); ok {
		data = []byte(s)
	} else {
		var err error
		if data, err = json.Marshal(v); err != nil {
			panic(fmt.Sprintf("fakemodel: marshal event: %v", err))
		}
	}
	if name != "" {
		fmt.Fprintf(e.w, "event: %s\n", name)
	}
	fmt.Fprintf(e.w, "data: %s\n\n", data)
	if err := e.rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return
	}
}
