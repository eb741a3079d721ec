package web

import (
	"bytes"
	"cmp"
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/internal/text"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed assets
var assetFS embed.FS

type pages struct {
	t *template.Template
}

func newPages() (*pages, error) {
	t, err := template.New("").ParseFS(templateFS, "templates/*.html")
	if err != nil {
		return nil, fmt.Errorf("web: parse the page templates: %w", err)
	}
	return &pages{t: t}, nil
}

// render writes a page; a template that fails is a bug, logged and shown.
func (s *Server) render(w http.ResponseWriter, code int, name string, data any) {
	var buf bytes.Buffer
	if err := s.pages.t.ExecuteTemplate(&buf, name, data); err != nil {
		s.log.Error("web: render a page", "page", name, "err", err)
		http.Error(w, "agentctl web: cannot render "+name+": "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	w.Write(buf.Bytes())
}

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	assets, _ := fs.Sub(assetFS, "assets")
	files := http.FileServerFS(assets)
	mux.Handle("GET /assets/", http.StripPrefix("/assets/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "private, max-age=3600")
		files.ServeHTTP(w, r)
	})))
	mux.HandleFunc("GET /manifest.webmanifest", func(w http.ResponseWriter, r *http.Request) {
		b, _ := fs.ReadFile(assetFS, "assets/manifest.webmanifest")
		w.Header().Set("Content-Type", "application/manifest+json")
		w.Write(b)
	})
	mux.HandleFunc("GET /{$}", s.handleList)
	mux.HandleFunc("GET /events", s.handleListEvents)
	mux.HandleFunc("GET /new", s.handleNewForm)
	mux.HandleFunc("POST /new", s.handleLaunch)
	// A session is /s/ID, or /s/HOST/ID over several hosts (its handle).
	for _, s0 := range []string{"/s/{id}", "/s/{host}/{id}"} {
		mux.HandleFunc("GET "+s0, s.handleSession)
		mux.HandleFunc("GET "+s0+"/output", s.handleOutput)
		mux.HandleFunc("GET "+s0+"/term", s.handleTerm)
		mux.HandleFunc("GET "+s0+"/ws", s.handleTermSocket)
		mux.HandleFunc("POST "+s0+"/{action}", s.handleAction)
	}
	return s.guard(mux)
}

// handle is the session a request's path names: ID, or HOST/ID.
func handle(r *http.Request) string {
	if h := r.PathValue("host"); h != "" {
		return h + "/" + r.PathValue("id")
	}
	return r.PathValue("id")
}

// filter is what the list shows: a text to find, a group, and whether
// ended sessions are in it.
type filter struct {
	Q     string
	Group string
	Ended bool
	// Since is how long ago an ended session may have ended to show.
	Since time.Duration
}

func parseFilter(r *http.Request) filter {
	q := r.URL.Query()
	f := filter{Q: strings.TrimSpace(q.Get("q")), Group: q.Get("group"), Ended: q.Get("ended") != "0", Since: endedWithin}
	if d, err := time.ParseDuration(q.Get("since")); err == nil && d > 0 {
		f.Since = d
	}
	return f
}

// Query is the filter as a URL query, for the event stream and links.
func (f filter) Query() string {
	v := make([]string, 0, 3)
	if f.Q != "" {
		v = append(v, "q="+template.URLQueryEscaper(f.Q))
	}
	if f.Group != "" {
		v = append(v, "group="+template.URLQueryEscaper(f.Group))
	}
	if !f.Ended {
		v = append(v, "ended=0")
	}
	if f.Since != endedWithin {
		v = append(v, "since="+f.Since.String())
	}
	return strings.Join(v, "&")
}

// endedWithin is how far back the list shows ended sessions by default.
const endedWithin = 24 * time.Hour

func (f filter) options() api.ListOptions {
	return api.ListOptions{All: f.Ended, Since: f.Since, Group: f.Group}
}

// match applies what the service's list cannot: the text, and (for an
// event's session) the group and ended rules.
func (f filter) match(s *api.Session, now time.Time) bool {
	if f.Group != "" && s.Group != f.Group {
		return false
	}
	if s.Status.Ended() {
		if !f.Ended || (s.EndedAt != nil && now.Sub(*s.EndedAt) > f.Since) {
			return false
		}
	}
	if f.Q == "" {
		return true
	}
	q := strings.ToLower(f.Q)
	for _, v := range []string{s.ID, s.Name, s.Adapter, s.Group, s.Cwd, s.Prompt, s.Title, s.Model, string(s.Status), s.Activity, s.Waiting.Summary()} {
		if strings.Contains(strings.ToLower(v), q) {
			return true
		}
	}
	return false
}

// row is one session as the list shows it.
type row struct {
	S *api.Session
	// Section is "waiting", "running" or "ended": the list's order.
	Section string
	// Key orders rows within their section, ascending.
	Key   string
	Label string
	State string
	What  string
	Since string
	// Answer says which answer buttons the row has: "permission"
	// (approve/deny), "text" (an answer box), "terminal" (a dialog only
	// the terminal answers) or "".
	Answer string
	CSRF   string
	// Back is where the row's answer forms return.
	Back string
}

func (s *Server) row(sess *api.Session, now time.Time) row {
	r := row{S: sess, CSRF: s.csrf, Back: "/", Label: cmp.Or(sess.Name, shortID(sess.ID))}
	switch {
	case sess.Status == api.StatusRunning && sess.Activity == api.ActivityWaiting:
		r.Section = "waiting"
		since := sess.CreatedAt
		if sess.ActivitySince != nil {
			since = *sess.ActivitySince
		}
		r.Key = fmt.Sprintf("%020d", since.UnixNano())
		r.Since = text.Ago(now, since)
		r.State = "waiting"
		r.What = sess.Waiting.Summary()
		switch {
		case sess.Waiting != nil && sess.Waiting.For == api.WaitingPermission && sess.Waiting.Request != "":
			r.Answer = "permission"
		case sess.Waiting != nil && sess.Waiting.For == api.WaitingDialog, sess.Waiting != nil && sess.Waiting.For == api.WaitingPermission:
			r.Answer = "terminal"
		default:
			r.Answer = "text"
		}
	case sess.Status.Ended():
		r.Section = "ended"
		at := sess.CreatedAt
		if sess.EndedAt != nil {
			at = *sess.EndedAt
		}
		r.Key = fmt.Sprintf("%020d", int64(1<<62)-at.UnixNano())
		r.Since = text.Ago(now, at)
		r.State = string(sess.Status)
		if sess.ExitCode != nil {
			r.State += fmt.Sprintf(" (%d)", *sess.ExitCode)
		} else if sess.Signal != "" {
			r.State += " (" + sess.Signal + ")"
		}
	default:
		r.Section = "running"
		r.Key = fmt.Sprintf("%020d", int64(1<<62)-sess.CreatedAt.UnixNano())
		r.Since = text.Ago(now, sess.CreatedAt)
		r.State = string(sess.Status)
		if sess.Activity != "" {
			r.State = sess.Activity
		}
	}
	if r.What == "" {
		r.What = cmp.Or(sess.Title, sess.Prompt, strings.Join(sess.Command, " "))
	}
	r.What = text.TruncateRunes(text.Clean(r.What), 160)
	return r
}

func shortID(id string) string { return text.Truncate(id, 8) }

// listPage is the list's template data.
type listPage struct {
	Filter   filter
	Groups   []string
	Waiting  template.HTML
	Running  template.HTML
	Ended    template.HTML
	Hash     string
	Count    int
	Warnings []string
	CSRF     string
	Err      string
}

// sections sorts sessions into the list's three parts, each in order.
func (s *Server) sections(list []api.Session, f filter, now time.Time) (waiting, running, ended []row) {
	for i := range list {
		if !f.match(&list[i], now) {
			continue
		}
		r := s.row(&list[i], now)
		switch r.Section {
		case "waiting":
			waiting = append(waiting, r)
		case "ended":
			ended = append(ended, r)
		default:
			running = append(running, r)
		}
	}
	for _, rs := range [][]row{waiting, running, ended} {
		slices.SortFunc(rs, func(a, b row) int { return strings.Compare(a.Key, b.Key) })
	}
	return waiting, running, ended
}

// handleList writes the page's top at once (the browser paints it while
// the service lists), then the list.
func (s *Server) handleList(w http.ResponseWriter, r *http.Request) {
	f := parseFilter(r)
	p := listPage{Filter: f, CSRF: s.csrf}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if err := s.pages.t.ExecuteTemplate(w, "list-top", p); err != nil {
		s.log.Error("web: render the list", "err", err)
		return
	}
	http.NewResponseController(w).Flush()
	list, err := s.c.List(r.Context(), f.options())
	// Over several hosts, those that do not answer are warnings; the
	// list fails only when none answers, and still says which.
	p.Warnings = list.Warnings
	if err != nil {
		p.Err = err.Error()
	} else {
		snap, err := s.snapshot(list.Sessions, f)
		if err != nil {
			p.Err = err.Error()
		}
		//nolint:gosec // rendered by the row template, which escapes
		p.Waiting, p.Running, p.Ended = template.HTML(snap.Waiting), template.HTML(snap.Running), template.HTML(snap.Ended)
		p.Count, p.Hash = snap.Count, snap.Hash
		groups := map[string]bool{}
		for _, x := range list.Sessions {
			if x.Group != "" {
				groups[x.Group] = true
			}
		}
		for g := range groups {
			p.Groups = append(p.Groups, g)
		}
		slices.Sort(p.Groups)
	}
	if err := s.pages.t.ExecuteTemplate(w, "list-rows", p); err != nil {
		s.log.Error("web: render the list", "err", err)
	}
}

// sessionPage is a session's template data.
type sessionPage struct {
	Row         row
	S           api.Session
	Explain     *api.Explanation
	Messages    []api.Message
	Output      template.HTML
	Tokens      string
	Cost        string
	Warnings    []string
	CSRF        string
	Interactive bool
}

// outputLines is how much of the output a session's page starts with.
const outputLines = 200

func (s *Server) handleSession(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	sess, err := s.c.Get(ctx, handle(r))
	if err != nil {
		s.fail(w, err)
		return
	}
	p := sessionPage{S: sess, Row: s.row(&sess, time.Now()), CSRF: s.csrf}
	p.Row.Back = "/s/" + sess.ID
	if ex, err := s.c.Explain(ctx, sess.ID); err == nil {
		p.Explain = &ex
	} else {
		p.Warnings = append(p.Warnings, "explain: "+err.Error())
	}
	if tr, err := s.c.Transcript(ctx, sess.ID, 10); err == nil {
		p.Messages = tr.Messages
		p.Warnings = append(p.Warnings, tr.Warnings...)
	} else {
		p.Warnings = append(p.Warnings, "peek: "+err.Error())
	}
	p.Tokens, p.Cost = totalsText(&sess)
	if sess.Origin == api.OriginLaunched {
		out, err := s.lastOutput(ctx, sess.ID)
		if err != nil {
			p.Warnings = append(p.Warnings, "output: "+err.Error())
		}
		p.Output = out
	}
	s.render(w, http.StatusOK, "session.html", p)
}

// totalsText is a session's tokens and cost as its page shows them:
// text.Pending while the service is still counting them, never a zero.
func totalsText(sess *api.Session) (tokens, cost string) {
	if sess.TotalsPending {
		return text.Pending, text.Pending
	}
	return text.Tokens(sess.TokensIn, sess.TokensOut), text.Cost(sess.CostUSD)
}

// lastOutput is the end of a session's output, coloured.
func (s *Server) lastOutput(ctx context.Context, id string) (template.HTML, error) {
	var b strings.Builder
	var st sgr
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	err := s.c.Logs(ctx, id, api.LogOptions{Lines: outputLines, Color: true, TextAsData: true}, func(ch api.LogChunk) error {
		if ch.End && len(ch.Data) == 0 && ch.Text == "" {
			return nil
		}
		b.WriteString(ansiHTML(chunkText(ch), &st))
		b.WriteByte('\n')
		return nil
	})
	return template.HTML(b.String()), err //nolint:gosec // ansiHTML escapes the text
}

func chunkText(ch api.LogChunk) string {
	if ch.Data != nil {
		return string(ch.Data)
	}
	return ch.Text
}

// fail shows an error from the service with its status.
func (s *Server) fail(w http.ResponseWriter, err error) {
	code := http.StatusBadGateway
	var e *api.Error
	if errors.As(err, &e) {
		code = api.HTTPStatus(e.Code)
	}
	s.render(w, code, "error.html", map[string]any{"Err": err.Error(), "Code": code})
}
