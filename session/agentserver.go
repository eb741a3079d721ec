package session

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/home"
	"github.com/agentctl/agentctl/internal/atomicfile"
	"github.com/agentctl/agentctl/internal/text"
)

// agentServer is agent-server.json: the agent's own server on 127.0.0.1.
type agentServer struct {
	URL string `json:"url"`
}

// noteServer records the agent's server in the session's folder, when its
// launch gives it one.
func noteServer(dir, url string) error {
	if url == "" {
		return nil
	}
	if err := atomicfile.WriteJSON(filepath.Join(dir, home.ServerFile), agentServer{URL: url}, 0o600); err != nil {
		return fmt.Errorf("record the agent's server: %w", err)
	}
	return nil
}

func readServer(dir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, home.ServerFile))
	if err != nil {
		return "", err
	}
	var s agentServer
	if err := json.Unmarshal(b, &s); err != nil {
		return "", fmt.Errorf("parse %s: %w", home.ServerFile, err)
	}
	if !strings.HasPrefix(s.URL, "http://127.0.0.1:") {
		return "", fmt.Errorf("%s: %q is not a server on 127.0.0.1", home.ServerFile, s.URL)
	}
	return s.URL, nil
}

// serverEvent is one event of OpenCode's /event stream.
type serverEvent struct {
	Type       string          `json:"type"`
	Properties json.RawMessage `json:"properties"`
}

// WatchAgentServer follows the event stream of a running session's agent
// server (OpenCode's TUI), for as long as the session runs: permission
// requests and questions make it wait, their replies and the agent's
// busy/idle status move it on. Sessions without a server are left alone.
// It is called at launch and, for running sessions, when the service
// starts.
func (c *Core) WatchAgentServer(id string) {
	url, err := readServer(c.opts.Home.SessionDir(id))
	if err != nil {
		return
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		w := &serverWatch{c: c, id: id, url: url, pending: map[string]string{}}
		w.run(c.ctx)
	}()
}

type serverWatch struct {
	c       *Core
	id      string
	url     string
	pending map[string]string // kinds of the requests asked, not replied, by id
	// native is the native session the server said it works on, once
	// recorded.
	native string
}

func (w *serverWatch) run(ctx context.Context) {
	hc := &http.Client{}
	wait := 200 * time.Millisecond
	for {
		sess, err := w.c.records.get(w.id)
		if err != nil || sess.Status != api.StatusRunning {
			return
		}
		if err := w.follow(ctx, hc); err == nil {
			wait = 200 * time.Millisecond // it was up: come back soon
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		// The server starts seconds after the agent; then it only goes
		// away with the agent.
		wait = min(2*wait, 5*time.Second)
	}
}

// Bounds of one subscription to the event stream. OpenCode 1.18 sends a
// heartbeat every 10 s; a stream opened while its TUI was still starting was
// seen to stay silent for good, so a silent stream is reopened, and every
// stream is renewed now and then, each time with a catch-up of what the
// server holds.
const (
	streamSilence = 15 * time.Second
	streamRenew   = time.Minute
	// streamGreeting bounds the wait for the stream's first event: the
	// server says server.connected as it opens one, so a stream without
	// it is one of the silent ones, and a turn must not pass unseen while
	// it waits out streamSilence.
	streamGreeting = 3 * time.Second
)

// follow reads the event stream until it ends, falls silent or is due for
// renewal.
func (w *serverWatch) follow(ctx context.Context, hc *http.Client) error {
	ctx, cancel := context.WithTimeout(ctx, streamRenew)
	defer cancel()
	silent := time.AfterFunc(streamGreeting, cancel)
	defer silent.Stop()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, w.url+"/event", nil)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s/event: %s", w.url, resp.Status)
	}
	w.catchUp(ctx)
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 8<<20)
	for sc.Scan() {
		silent.Reset(streamSilence)
		data, ok := bytes.CutPrefix(sc.Bytes(), []byte("data:"))
		if !ok {
			continue
		}
		var ev serverEvent
		if json.Unmarshal(bytes.TrimSpace(data), &ev) != nil {
			continue
		}
		w.event(ev)
	}
	return nil
}

// catchUp reads the requests the server holds already (asked before the
// stream was followed: a service restart) as if their events had come.
func (w *serverWatch) catchUp(ctx context.Context) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, w.url+"/permission", nil)
	if err != nil {
		return
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return
	}
	defer resp.Body.Close()
	var list []json.RawMessage
	if json.NewDecoder(io.LimitReader(resp.Body, 4<<20)).Decode(&list) != nil {
		return
	}
	held := map[string]bool{}
	for _, p := range list {
		var id struct {
			ID string `json:"id"`
		}
		json.Unmarshal(p, &id)
		held[id.ID] = true
		if w.pending[id.ID] == "" {
			w.event(serverEvent{Type: "permission.asked", Properties: p})
		}
	}
	// Requests answered while the stream was not followed.
	for id, kind := range w.pending {
		if kind == "permission" && !held[id] {
			b, _ := json.Marshal(map[string]string{"requestID": id})
			w.event(serverEvent{Type: "permission.replied", Properties: b})
		}
	}
}

// event turns one server event into the session's evidence.
func (w *serverWatch) event(ev serverEvent) {
	now := time.Now().UTC()
	next := hookEvidence{Since: now, Event: ev.Type, Source: api.SourceNative}
	switch ev.Type {
	case "permission.asked":
		var p struct {
			ID         string   `json:"id"`
			Permission string   `json:"permission"`
			Patterns   []string `json:"patterns"`
			Metadata   struct {
				Command string `json:"command"`
			} `json:"metadata"`
		}
		if json.Unmarshal(ev.Properties, &p) != nil || p.ID == "" {
			return
		}
		input := p.Metadata.Command
		if input == "" {
			input = strings.Join(p.Patterns, " ")
		}
		w.pending[p.ID] = "permission"
		next.Activity = api.ActivityWaiting
		next.Waiting = &api.Waiting{For: api.WaitingPermission, Request: p.ID, Tool: p.Permission, Input: text.Truncate(input, 300), Kind: ev.Type}
	case "question.asked":
		var q struct {
			ID        string `json:"id"`
			Questions []struct {
				Question string `json:"question"`
				Options  []struct {
					Label string `json:"label"`
				} `json:"options"`
			} `json:"questions"`
		}
		if json.Unmarshal(ev.Properties, &q) != nil || q.ID == "" {
			return
		}
		wt := &api.Waiting{For: api.WaitingQuestion, Request: q.ID, Kind: ev.Type}
		if len(q.Questions) > 0 {
			wt.Text = text.Truncate(q.Questions[0].Question, 300)
			for _, o := range q.Questions[0].Options {
				wt.Options = append(wt.Options, o.Label)
			}
		}
		w.pending[q.ID] = "question"
		next.Activity, next.Waiting = api.ActivityWaiting, wt
	case "permission.replied", "question.replied", "question.rejected":
		var r struct {
			ID        string `json:"id"`
			RequestID string `json:"requestID"`
		}
		json.Unmarshal(ev.Properties, &r)
		delete(w.pending, r.ID)
		delete(w.pending, r.RequestID)
		if r.ID == "" && r.RequestID == "" {
			clear(w.pending)
		}
		if len(w.pending) > 0 {
			return
		}
		next.Activity = api.ActivityBusy
	case "session.status":
		var st struct {
			SessionID string `json:"sessionID"`
			Status    struct {
				Type string `json:"type"`
			} `json:"status"`
		}
		if json.Unmarshal(ev.Properties, &st) != nil {
			return
		}
		w.learnNative(st.SessionID)
		if len(w.pending) > 0 {
			return // a pending request outranks the agent's status
		}
		switch st.Status.Type {
		case "busy", "retry":
			next.Activity = api.ActivityBusy
		case "idle":
			// The TUI sits at its prompt: the next instruction is the
			// person's.
			next.Activity = api.ActivityWaiting
			next.Waiting = &api.Waiting{For: api.WaitingInput, Kind: ev.Type}
		default:
			return
		}
	default:
		return
	}
	if prev, _ := readHookEvidence(w.c.opts.Home.SessionDir(w.id)); prev != nil && prev.Activity == next.Activity && sameWait(prev.Waiting, next.Waiting) {
		return // nothing new
	}
	if err := w.c.writeHookEvidence(w.id, next); err != nil {
		w.c.log.Warn("record the agent server's report", "session", w.id, "err", err)
		return
	}
	w.c.observe(w.id)
}

// learnNative records the session the agent's own server says its turn
// runs in, when the launch could not name it up front (a TUI started
// without a prompt creates its session with the first message). The
// server is this process's alone: that is first-hand evidence. The first
// one said is kept.
func (w *serverWatch) learnNative(nativeID string) {
	if nativeID == "" || w.native != "" {
		return
	}
	sess, err := w.c.records.get(w.id)
	if err != nil {
		return
	}
	w.native = sess.NativeID
	if w.native != "" {
		return
	}
	if err := w.c.records.setNativeID(w.id, nativeID); err != nil {
		w.c.log.Warn("record native session id", "session", w.id, "err", err)
		return
	}
	w.native = nativeID
}

func sameWait(a, b *api.Waiting) bool {
	switch {
	case a == nil || b == nil:
		return a == b
	}
	return a.For == b.For && a.Request == b.Request && a.Kind == b.Kind
}

// replyServer answers a pending permission request through the agent's
// server and checks that it went away.
func replyServer(ctx context.Context, dir string, w *api.Waiting, d api.Decision) error {
	url, err := readServer(dir)
	if err != nil {
		return err
	}
	if w == nil || w.For != api.WaitingPermission || w.Request == "" || w.Kind != "permission.asked" {
		return errors.New("no permission request of the agent's server is pending")
	}
	reply := map[string]string{"reply": "once"}
	if d.Action == api.DecisionDeny {
		reply["reply"] = "reject"
		if d.Reason != "" {
			reply["message"] = d.Reason
		}
	}
	body, _ := json.Marshal(reply)
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/permission/"+w.Request+"/reply", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("answer the agent's server: %w", err)
	}
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("answer the agent's server: %s: %s", resp.Status, bytes.TrimSpace(msg))
	}
	// The request must be gone from the server's list.
	for {
		pending, err := serverPending(ctx, url)
		if err == nil && !slices.Contains(pending, w.Request) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the agent's server still lists permission request %s after the answer", w.Request)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// serverPending lists the ids of the permission requests the server holds.
func serverPending(ctx context.Context, url string) ([]string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/permission", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var list []struct {
		ID string `json:"id"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 4<<20)).Decode(&list); err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(list))
	for _, p := range list {
		ids = append(ids, p.ID)
	}
	return ids, nil
}
