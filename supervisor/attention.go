package supervisor

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/config"
	"github.com/agentctl/agentctl/proc"
	"github.com/agentctl/agentctl/session"
	"github.com/agentctl/agentctl/supervisor/desktop"
	"github.com/agentctl/agentctl/supervisor/webhook"
)

// maxHookBody bounds one hook report (a tool's input can be a whole file).
const maxHookBody = 4 << 20

func (s *Server) attentionRoutes(mux *http.ServeMux) {
	mux.HandleFunc("POST /v1/sessions/{id}/attention", s.handleAttention)
	mux.HandleFunc("POST /v1/sessions/{id}/hooks/{agent}", s.handleHook)
	mux.HandleFunc("POST /v1/sessions/{id}/decide", s.handleDecide)
	mux.HandleFunc("POST /v1/hooks/{agent}", s.handleIntegrationHook)
	mux.HandleFunc("GET /v1/hooks", s.handleIntegrationStatus)
}

// handleIntegrationHook takes one report of an agent's user-level
// integration (a session started by hand). The core proves which agent
// process sent it; a refused report is answered with why and logged, at
// most refusalLogs lines a second (a flood writes one summary).
func (s *Server) handleIntegrationHook(w http.ResponseWriter, r *http.Request) {
	stream(w)
	caller := peerOf(r)
	agent, event := r.PathValue("agent"), r.URL.Query().Get("event")
	payload, err := io.ReadAll(io.LimitReader(r.Body, api.MaxHookReport+1))
	if err != nil {
		writeError(w, api.Errorf(api.CodeInvalid, "read the report: %v", err))
		return
	}
	if len(payload) > api.MaxHookReport {
		err := api.Errorf(api.CodeInvalid, "a report of more than %d bytes from pid %d: refused", api.MaxHookReport, caller.PID)
		s.refused(agent, event, caller, err)
		writeError(w, err)
		return
	}
	// A report that waits for a person's decision is answered at once
	// with its headers: the hook then knows the service is alive, and
	// waits for the decision rather than failing fast.
	begun := false
	taken := func() {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		http.NewResponseController(w).Flush()
		begun = true
	}
	reply, err := s.core.IntegrationHook(r.Context(), caller, agent, event, payload, taken)
	if err != nil && r.Context().Err() != nil {
		return // the hook went away (killed, timed out): nobody to answer
	}
	if begun {
		json.NewEncoder(w).Encode(reply) // no decision on an error: the agent asks
		return
	}
	var refusal *session.HookRefusal
	if errors.As(err, &refusal) {
		s.refused(agent, event, caller, refusal.Err)
	}
	answer(w, http.StatusOK, reply, err)
}

// refusalLogs bounds the log lines of refused reports, per second.
const refusalLogs = 10

// refused logs a refused integration report.
func (s *Server) refused(agent, event string, caller *proc.Caller, why error) {
	s.mu.Lock()
	now := time.Now()
	if now.Sub(s.refusalsAt) >= time.Second {
		if s.refusalsDropped > 0 {
			s.log.Warn("integration reports refused and not logged", "count", s.refusalsDropped)
		}
		s.refusalsAt, s.refusalsLogged, s.refusalsDropped = now, 0, 0
	}
	s.refusalsLogged++
	log := s.refusalsLogged <= refusalLogs
	if !log {
		s.refusalsDropped++
	}
	s.mu.Unlock()
	if log {
		s.log.Warn("integration report refused", "agent", agent, "event", event, "pid", caller.PID, "uid", caller.UID, "why", why)
	}
}

// handleIntegrationStatus says when each agent's integration last
// reported.
func (s *Server) handleIntegrationStatus(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, api.IntegrationStatus{LastReport: s.core.IntegrationReports()})
}

// handleAttention: a session's monitor says its terminal evidence changed.
func (s *Server) handleAttention(w http.ResponseWriter, r *http.Request) {
	var rep api.AttentionReport
	if err := decode(r, &rep, true); err != nil {
		writeError(w, err)
		return
	}
	err := s.core.Observe(r.PathValue("id"))
	answer(w, http.StatusOK, map[string]bool{"ok": true}, err)
}

// handleHook takes one report of an agent's hook. A permission request is
// answered when the person decides, so the stream's read deadline is
// lifted: the hook may wait for long.
func (s *Server) handleHook(w http.ResponseWriter, r *http.Request) {
	stream(w)
	payload, err := io.ReadAll(io.LimitReader(r.Body, maxHookBody))
	if err != nil {
		writeError(w, api.Errorf(api.CodeInvalid, "read hook input: %v", err))
		return
	}
	q := r.URL.Query()
	ev := session.HookEvent{Agent: r.PathValue("agent"), Event: q.Get("event"), Interactive: q.Get("interactive") == "1", Payload: payload}
	reply, err := s.core.Hook(r.Context(), r.PathValue("id"), ev)
	if err != nil && r.Context().Err() != nil {
		return // the hook went away (killed, timed out): nobody to answer
	}
	answer(w, http.StatusOK, reply, err)
}

// handleDecide answers a waiting session on behalf of the caller, whose
// uid and pid the kernel vouches for.
func (s *Server) handleDecide(w http.ResponseWriter, r *http.Request) {
	var d api.Decision
	if err := decode(r, &d, false); err != nil {
		writeError(w, err)
		return
	}
	caller := peerOf(r)
	sess, err := s.core.Decide(r.Context(), r.PathValue("id"), caller, d)
	relayed := r.Header.Get(api.RelayedHeader)
	if err == nil {
		s.log.Info("session answered", "session", sess.ID, "action", d.Action, "request", d.Request, "uid", caller.UID, "pid", caller.PID, "relayed", relayed)
	} else if api.CodeOf(apiError(err)) == api.CodeForbidden {
		s.log.Warn("answer refused", "session", r.PathValue("id"), "action", d.Action, "uid", caller.UID, "pid", caller.PID, "relayed", relayed, "why", err)
	}
	answer(w, http.StatusOK, sess, err)
}

// openDesktop connects the desktop notifier, unless configured off or no
// session bus is there (a service without a graphical session).
func openDesktop(cfg config.Notify, log *slog.Logger) *desktop.Notifier {
	if !cfg.DesktopOn() {
		return nil
	}
	after, err := cfg.Delay()
	if err != nil {
		after = config.DefaultNotifyAfter
	}
	n, err := desktop.Open("", after, log)
	if err != nil {
		log.Info("desktop notifications off", "why", err)
		return nil
	}
	return n
}

// attentionChanged announces that a session began or stopped waiting: the
// event, the webhook, and the desktop notification.
func (o *ops) attentionChanged(ch session.Change) {
	s := ch.Session
	typ := api.EventSessionWaiting
	switch {
	case ch.Kind == session.ChangeResumed:
		typ = api.EventSessionResumed
	case s.WaitingFor == api.WaitingLimit:
		typ = api.EventSessionLimited
	}
	var meta map[string]any
	if ch.Kind == session.ChangeWaiting {
		meta = map[string]any{"reason": s.WaitingFor, "source": s.ActivitySource}
		if s.Waiting != nil {
			meta["summary"] = s.Waiting.Summary()
			if l := s.Waiting.Limit; l != nil {
				meta["provider"], meta["window"] = l.Provider, l.Window
				if l.ResetsAt != nil {
					meta["resets_at"] = l.ResetsAt.UTC().Format(time.RFC3339)
				}
			}
		}
	}
	o.bus.Publish(api.Event{Type: typ, Adapter: s.Adapter, SessionID: s.ID, Session: &s, Meta: meta})
	if o.desktop != nil {
		if ch.Kind == session.ChangeWaiting {
			o.desktop.Waiting(desktop.Note{SessionID: s.ID, Summary: desktopSummary(s), Body: s.Waiting.Summary()})
		} else {
			o.desktop.Resumed(s.ID)
		}
	}
	if o.cfg.WebhookURL == "" {
		return
	}
	body, err := json.Marshal(webhook.SessionAttention(typ, s, time.Now()))
	if err != nil {
		o.log.Warn("encode session webhook", "session", s.ID, "err", err)
		return
	}
	since := time.Now()
	if s.ActivitySince != nil {
		since = *s.ActivitySince
	}
	o.webhooks.Send(webhook.Delivery{URL: o.cfg.WebhookURL, Secret: o.cfg.WebhookSecret, Event: typ, ID: s.ID + "-" + typ + "-" + since.Format(time.RFC3339Nano), Body: body})
}

func desktopSummary(s api.Session) string {
	who := s.Adapter
	if s.Name != "" {
		who += " " + s.Name
	} else {
		who += " " + s.ID[:min(len(s.ID), 10)]
	}
	return who + " waits for " + s.WaitingFor
}

// waitingCounts counts the running sessions waiting now, by reason: the
// launched ones as they are now, those started by hand as the transitions
// detector last saw them.
func (o *ops) waitingCounts() map[string]int {
	if o.sessions == nil {
		return nil
	}
	out := o.sessions.WaitingByHand()
	all, _, err := o.sessions.AllLaunched()
	if err != nil {
		return out
	}
	for _, s := range all {
		if s.Status == api.StatusRunning && s.Activity == api.ActivityWaiting {
			out[s.WaitingFor]++
		}
	}
	return out
}
