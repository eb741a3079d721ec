package web

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/client"
)

// keepAlive is how often an idle stream says it is alive, so proxies and
// tunnels keep it open and the browser notices a dead one.
const keepAlive = 15 * time.Second

// streamBuffer bounds what one page's stream holds back: a reader that
// falls further behind is dropped, and its browser reconnects to a fresh
// snapshot.
const streamBuffer = 256

// writeTimeout is how long one write to a page may take before the page
// counts as gone.
const writeTimeout = 10 * time.Second

var errSlowReader = errors.New("the page reads too slowly")

// sse writes server-sent events to one page.
type sse struct {
	w  http.ResponseWriter
	rc *http.ResponseController
}

func newSSE(w http.ResponseWriter) *sse {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	return &sse{w: w, rc: http.NewResponseController(w)}
}

// send writes one event (data as JSON) and flushes it.
func (e *sse) send(event string, data any) error {
	b, err := json.Marshal(data)
	if err != nil {
		return fmt.Errorf("encode a %s event: %w", event, err)
	}
	return e.raw("event: " + event + "\ndata: " + string(b) + "\n\n")
}

func (e *sse) raw(s string) error {
	_ = e.rc.SetWriteDeadline(time.Now().Add(writeTimeout))
	if _, err := e.w.Write([]byte(s)); err != nil {
		return err
	}
	return e.rc.Flush()
}

// rowEvent places (or, with no HTML, removes) one row of the list.
type rowEvent struct {
	ID      string `json:"id"`
	Section string `json:"section,omitempty"`
	Key     string `json:"key,omitempty"`
	HTML    string `json:"html,omitempty"`
	// TS is when the service published the change (Unix ms): the page
	// measures how long it took to arrive.
	TS int64 `json:"ts,omitempty"`
}

// snapshot is the whole list, section by section.
type snapshot struct {
	Waiting string `json:"waiting"`
	Running string `json:"running"`
	Ended   string `json:"ended"`
	Count   int    `json:"count"`
	Hash    string `json:"hash"`
	// Warnings are the list's (a host that does not answer, over
	// several): the page shows them as they are now.
	Warnings []string `json:"warnings"`
}

// handleListEvents is the live list: a snapshot, then each session's
// changes as rows to place or remove. The service's event stream is
// opened before the snapshot is read, so nothing between them is missed;
// a change that the snapshot already holds is placed again, which
// changes nothing. Every (re)connection starts with a snapshot, so a
// reconnecting page neither loses nor doubles a row.
func (s *Server) handleListEvents(w http.ResponseWriter, r *http.Request) {
	f := parseFilter(r)
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	events := make(chan api.Event, streamBuffer)
	opened := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- s.c.Events(ctx, client.EventOptions{Types: []string{"session"}}, func(uint64) { close(opened) }, func(e api.Event) error {
			select {
			case events <- e:
				return nil
			default:
				return errSlowReader
			}
		})
	}()
	select {
	case <-opened:
	case err := <-done:
		http.Error(w, "agentctl web: the service's event stream: "+err.Error(), http.StatusBadGateway)
		return
	case <-ctx.Done():
		return
	}
	out := newSSE(w)
	// The browser reconnects a second after a stream ends.
	if err := out.raw("retry: 1000\n\n"); err != nil {
		return
	}
	if err := s.sendSnapshot(ctx, out, f); err != nil {
		s.log.Debug("web: list stream", "err", err)
		return
	}
	tick := time.NewTicker(keepAlive)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case err := <-done:
			s.log.Debug("web: list stream ends", "err", err)
			return
		case <-tick.C:
			if err := out.raw(": keep-alive\n\n"); err != nil {
				return
			}
		case e := <-events:
			var err error
			switch {
			case e.Type == api.EventGap:
				err = s.sendSnapshot(ctx, out, f)
			case e.Session != nil:
				re := s.rowEvent(e.Session, f)
				re.TS = e.Timestamp.UnixMilli()
				err = out.send("row", re)
			}
			if err != nil {
				return
			}
		}
	}
}

func (s *Server) rowEvent(sess *api.Session, f filter) rowEvent {
	now := time.Now()
	if !f.match(sess, now) {
		return rowEvent{ID: sess.ID}
	}
	rw := s.row(sess, now)
	var b bytes.Buffer
	if err := s.pages.t.ExecuteTemplate(&b, "row", rw); err != nil {
		s.log.Error("web: render a row", "err", err)
		return rowEvent{ID: sess.ID}
	}
	return rowEvent{ID: sess.ID, Section: rw.Section, Key: rw.Key, HTML: b.String()}
}

func (s *Server) sendSnapshot(ctx context.Context, out *sse, f filter) error {
	list, err := s.c.List(ctx, f.options())
	if err != nil && len(list.Warnings) == 0 {
		return err
	}
	// Over several hosts, none answered: what is known of them (their
	// sessions last seen, as unknown), and the warnings that say why.
	snap, err := s.snapshot(list.Sessions, f)
	if err != nil {
		return err
	}
	snap.Warnings = list.Warnings
	return out.send("snapshot", snap)
}

// snapshot renders the list's three sections; the page renders its first
// view with it too, so a stream's first snapshot that finds nothing
// changed (the same Hash) costs the browser nothing.
func (s *Server) snapshot(list []api.Session, f filter) (snapshot, error) {
	waiting, running, ended := s.sections(list, f, time.Now())
	snap := snapshot{Count: len(waiting) + len(running) + len(ended)}
	h := fnv.New64a()
	for _, part := range []struct {
		rows []row
		to   *string
	}{{waiting, &snap.Waiting}, {running, &snap.Running}, {ended, &snap.Ended}} {
		var b strings.Builder
		for _, rw := range part.rows {
			if err := s.pages.t.ExecuteTemplate(&b, "row", rw); err != nil {
				return snapshot{}, fmt.Errorf("render a row: %w", err)
			}
		}
		*part.to = b.String()
		h.Write([]byte(*part.to))
		h.Write([]byte{0})
	}
	snap.Hash = strconv.FormatUint(h.Sum64(), 36)
	return snap, nil
}

// outputLine is one line of a session's live output, as HTML.
type outputLine struct {
	HTML    string `json:"html"`
	Partial bool   `json:"partial,omitempty"`
}

// handleOutput streams a session's output, coloured: the last lines, then
// what it writes, until it ends. A reconnecting page starts over ("reset")
// rather than guessing where it was.
func (s *Server) handleOutput(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	id := handle(r)
	lines := make(chan api.LogChunk, streamBuffer)
	done := make(chan error, 1)
	go func() {
		defer close(lines)
		done <- s.c.Logs(ctx, id, api.LogOptions{Lines: outputLines, Follow: true, Color: true, Partial: true, TextAsData: true}, func(ch api.LogChunk) error {
			select {
			case lines <- ch:
				return nil
			default:
				return errSlowReader
			}
		})
	}()
	out := newSSE(w)
	if err := out.raw("retry: 2000\n\nevent: reset\ndata: {}\n\n"); err != nil {
		return
	}
	tick := time.NewTicker(keepAlive)
	defer tick.Stop()
	var st sgr
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			if err := out.raw(": keep-alive\n\n"); err != nil {
				return
			}
		case ch, ok := <-lines:
			if !ok {
				// The session ended (or the stream broke): say so, and
				// keep the browser from reconnecting to a finished log.
				msg := "ended"
				if err := <-done; err != nil {
					msg = err.Error()
				}
				out.send("end", map[string]string{"why": msg})
				return
			}
			if ch.Cursor != "" || (ch.End && len(ch.Data) == 0 && ch.Text == "") {
				continue
			}
			line := outputLine{Partial: ch.Partial}
			if ch.Partial {
				// A partial line is shown again when it grows: its
				// colours must not leak into the next rendering.
				tmp := st
				line.HTML = ansiHTML(chunkText(ch), &tmp)
			} else {
				line.HTML = ansiHTML(chunkText(ch), &st)
			}
			if err := out.send("line", line); err != nil {
				return
			}
		}
	}
}
