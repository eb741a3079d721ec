package web

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentctl/agentctl/api"
)

// back is where a form returns: a path of this site (the list, or a
// session's page), never another site.
func back(r *http.Request, fallback string) string {
	b := r.PostFormValue("back")
	if !strings.HasPrefix(b, "/") || strings.HasPrefix(b, "//") || strings.ContainsAny(b, "\\\r\n") {
		return fallback
	}
	return b
}

// via names the web and the browser's address in a decision's record.
func via(r *http.Request) string {
	if _, ok := r.Context().Value(connKey{}).(*net.UnixConn); ok {
		return "web over its socket"
	}
	return "web from " + r.RemoteAddr
}

// handleAction runs one of a session's actions, posted by a form: approve,
// deny (with a reason), answer, send, stop, resume (with a message) and
// restart. Success goes back where the form came from (a new run: to its
// page); failure shows why.
func (s *Server) handleAction(w http.ResponseWriter, r *http.Request) {
	ctx, err := s.relayed(r)
	if err != nil {
		s.fail(w, err)
		return
	}
	r = r.WithContext(ctx)
	id := handle(r)
	to := back(r, "/s/"+id)
	switch action := r.PathValue("action"); action {
	case "approve":
		_, err = s.c.Decide(ctx, id, api.Decision{Action: api.DecisionApprove, Request: r.PostFormValue("request"), Via: via(r)})
	case "deny":
		_, err = s.c.Decide(ctx, id, api.Decision{Action: api.DecisionDeny, Request: r.PostFormValue("request"), Reason: r.PostFormValue("reason"), Via: via(r)})
	case "answer":
		_, err = s.c.Decide(ctx, id, api.Decision{Action: api.DecisionAnswer, Text: r.PostFormValue("text"), Via: via(r)})
	case "send":
		data := r.PostFormValue("text")
		if r.PostFormValue("enter") != "0" {
			data += "\r"
		}
		_, err = s.c.Input(ctx, id, []byte(data))
	case "stop":
		_, err = s.c.Stop(ctx, id, api.StopRequest{Force: r.PostFormValue("force") == "1"})
	case "restart":
		var next api.Session
		if next, err = s.c.Restart(ctx, id, api.RestartRequest{Env: s.cfg.Env}); err == nil {
			to = "/s/" + next.ID
		}
	case "resume":
		var next api.Session
		if next, err = s.resume(r, id); err == nil {
			to = "/s/" + next.ID
		}
	default:
		http.NotFound(w, r)
		return
	}
	if err != nil {
		s.fail(w, err)
		return
	}
	http.Redirect(w, r, to, http.StatusSeeOther)
}

// resume continues a launched agent's native session with a message, as
// `agentctl resume` does: same adapter, directory, model, group, labels.
func (s *Server) resume(r *http.Request, id string) (api.Session, error) {
	prev, err := s.c.Get(r.Context(), id)
	if err != nil {
		return api.Session{}, err
	}
	if prev.Origin != api.OriginLaunched || prev.Adapter == api.ExecAdapter {
		return api.Session{}, api.Errorf(api.CodeInvalid, "session %s is not an agent agentctl started: only those resume (a plain command restarts)", prev.ID)
	}
	msg := strings.TrimSpace(r.PostFormValue("text"))
	if msg == "" {
		return api.Session{}, api.Errorf(api.CodeInvalid, "resume needs a message")
	}
	return s.c.Launch(r.Context(), api.RunRequest{
		Adapter: prev.Adapter, Prompt: msg, Cwd: prev.Cwd, Env: s.cfg.Env, Model: prev.Model,
		Group: prev.Group, Labels: prev.Labels, ResumeOf: prev.ID,
	})
}

// adapters the launch form offers.
var launchAdapters = []string{"claude", "codex", "opencode", "pi", api.ExecAdapter}

// hostLauncher is a Service over several hosts (a hosts.View): the launch
// form asks on which to start.
type hostLauncher interface {
	HostNames() []string
	LaunchOn(ctx context.Context, host string, req api.RunRequest) (api.Session, error)
}

func (s *Server) handleNewForm(w http.ResponseWriter, r *http.Request) {
	cwd := ""
	if !s.c.Remote() {
		cwd, _ = os.UserHomeDir()
	}
	var hosts []string
	if hl, ok := s.c.(hostLauncher); ok {
		hosts = hl.HostNames()
	}
	s.render(w, http.StatusOK, "new.html", map[string]any{"CSRF": s.csrf, "Adapters": launchAdapters, "Cwd": cwd, "Group": r.URL.Query().Get("group"), "Hosts": hosts})
}

// handleLaunch starts a session from the launch form: an agent with a
// prompt, or a plain command (run by sh -c, as typed).
func (s *Server) handleLaunch(w http.ResponseWriter, r *http.Request) {
	ctx, err := s.relayed(r)
	if err != nil {
		s.fail(w, err)
		return
	}
	r = r.WithContext(ctx)
	f := func(k string) string { return strings.TrimSpace(r.PostFormValue(k)) }
	req := api.RunRequest{
		Adapter: f("adapter"), Prompt: f("prompt"), Cwd: f("cwd"), Group: f("group"), Name: f("name"),
		Env: s.cfg.Env, Interactive: r.PostFormValue("interactive") == "1",
	}
	if req.Cwd == "" && !s.c.Remote() {
		// Another host's service starts in its user's home.
		req.Cwd, _ = os.UserHomeDir()
	}
	if req.Cwd != "" && !filepath.IsAbs(req.Cwd) {
		s.fail(w, api.Errorf(api.CodeInvalid, "the directory %q is not absolute", req.Cwd))
		return
	}
	if req.Adapter == api.ExecAdapter || req.Adapter == "" {
		cmd := f("command")
		if cmd == "" {
			s.fail(w, api.Errorf(api.CodeInvalid, "a plain command needs its command line"))
			return
		}
		req.Adapter, req.Command, req.Prompt, req.Interactive = api.ExecAdapter, []string{"sh", "-c", cmd}, "", false
	}
	var sess api.Session
	if hl, ok := s.c.(hostLauncher); ok {
		sess, err = hl.LaunchOn(r.Context(), f("host"), req)
	} else {
		sess, err = s.c.Launch(r.Context(), req)
	}
	if err != nil {
		s.fail(w, fmt.Errorf("launch: %w", err))
		return
	}
	http.Redirect(w, r, "/s/"+sess.ID, http.StatusSeeOther)
}
