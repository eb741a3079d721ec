package web

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/coder/websocket"

	"github.com/agentctl/agentctl/api"
)

func (s *Server) handleTerm(w http.ResponseWriter, r *http.Request) {
	sess, err := s.c.Get(r.Context(), handle(r))
	if err != nil {
		s.fail(w, err)
		return
	}
	s.render(w, http.StatusOK, "term.html", map[string]any{"S": sess, "Row": s.row(&sess, time.Now()), "CSRF": s.csrf})
}

// termMessage is what the page's terminal sends as text: a new size. Its
// keystrokes come as binary messages.
type termMessage struct {
	Type string `json:"type"`
	Rows uint16 `json:"rows"`
	Cols uint16 `json:"cols"`
}

// handleTermSocket joins a session's terminal over a WebSocket: the
// monitor's frames out as binary messages (its first repaints the screen),
// keystrokes and sizes in. Closing the page detaches; the session goes on.
func (s *Server) handleTermSocket(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	rows, _ := strconv.ParseUint(q.Get("rows"), 10, 16)
	cols, _ := strconv.ParseUint(q.Get("cols"), 10, 16)
	if rows == 0 || cols == 0 {
		rows, cols = 24, 80
	}
	// guard has checked Origin against the served addresses; the
	// library's own check would refuse an allowed tunnel's name.
	conn, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true})
	if err != nil {
		return
	}
	defer conn.CloseNow()
	conn.SetReadLimit(64 << 10)
	// A refusal is a close reason, which the page shows.
	rctx, err := s.relayed(r)
	if err != nil {
		conn.Close(websocket.StatusPolicyViolation, trimReason(err.Error()))
		return
	}
	ctx, cancel := context.WithCancel(rctx)
	defer cancel()
	at, err := s.c.Attach(ctx, handle(r), uint16(rows), uint16(cols))
	if err != nil {
		conn.Close(websocket.StatusTryAgainLater, trimReason(err.Error()))
		return
	}
	defer at.Close()
	go func() {
		defer cancel()
		for {
			typ, b, err := conn.Read(ctx)
			if err != nil {
				return
			}
			if typ == websocket.MessageBinary {
				if at.Input(b) != nil {
					return
				}
				continue
			}
			var m termMessage
			if json.Unmarshal(b, &m) == nil && m.Type == "resize" && m.Rows > 0 && m.Cols > 0 {
				if at.Resize(m.Rows, m.Cols) != nil {
					return
				}
			}
		}
	}()
	go func() {
		// Detach when the page goes, so Next returns.
		<-ctx.Done()
		at.Close()
	}()
	for {
		typ, payload, err := at.Next()
		if err != nil {
			conn.Close(websocket.StatusNormalClosure, "detached")
			return
		}
		switch typ {
		case api.FrameOutput:
			wctx, wcancel := context.WithTimeout(ctx, writeTimeout)
			err = conn.Write(wctx, websocket.MessageBinary, payload)
			wcancel()
			if err != nil {
				return
			}
		case api.FrameExit:
			conn.Write(ctx, websocket.MessageText, payload)
			conn.Close(websocket.StatusNormalClosure, "the session ended")
			return
		}
	}
}

// trimReason fits a close reason in a control frame (123 bytes).
func trimReason(s string) string {
	if len(s) > 120 {
		return s[:120]
	}
	return s
}
