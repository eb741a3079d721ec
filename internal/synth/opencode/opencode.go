// Package opencode writes synthetic stores in OpenCode's own on-disk format, for
// benchmarks and tests; no production package links it.
package opencode

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	_ "modernc.org/sqlite" // the "sqlite" database/sql driver
)

// SchemaDDL is the part of opencode.db's schema (OpenCode 1.18) that
// holds sessions: the same tables, columns, types, defaults and indexes.
const SchemaDDL = `
CREATE TABLE IF NOT EXISTS project (
	id text PRIMARY KEY,
	worktree text NOT NULL,
	vcs text,
	name text,
	icon_url text,
	icon_url_override text,
	icon_color text,
	time_created integer NOT NULL,
	time_updated integer NOT NULL,
	time_initialized integer,
	sandboxes text NOT NULL,
	commands text
);
CREATE TABLE IF NOT EXISTS session (
	id text PRIMARY KEY,
	project_id text NOT NULL,
	workspace_id text,
	parent_id text,
	slug text NOT NULL,
	directory text NOT NULL,
	path text,
	title text NOT NULL,
	version text NOT NULL,
	share_url text,
	summary_additions integer,
	summary_deletions integer,
	summary_files integer,
	summary_diffs text,
	metadata text,
	cost real DEFAULT 0 NOT NULL,
	tokens_input integer DEFAULT 0 NOT NULL,
	tokens_output integer DEFAULT 0 NOT NULL,
	tokens_reasoning integer DEFAULT 0 NOT NULL,
	tokens_cache_read integer DEFAULT 0 NOT NULL,
	tokens_cache_write integer DEFAULT 0 NOT NULL,
	revert text,
	permission text,
	agent text,
	model text,
	time_created integer NOT NULL,
	time_updated integer NOT NULL,
	time_compacting integer,
	time_archived integer,
	CONSTRAINT fk_session_project_id_project_id_fk FOREIGN KEY (project_id) REFERENCES project(id) ON DELETE CASCADE
);
CREATE TABLE IF NOT EXISTS message (
	id text PRIMARY KEY,
	session_id text NOT NULL,
	time_created integer NOT NULL,
	time_updated integer NOT NULL,
	data text NOT NULL,
	CONSTRAINT fk_message_session_id_session_id_fk FOREIGN KEY (session_id) REFERENCES session(id) ON DELETE CASCADE
);
CREATE TABLE IF NOT EXISTS part (
	id text PRIMARY KEY,
	message_id text NOT NULL,
	session_id text NOT NULL,
	time_created integer NOT NULL,
	time_updated integer NOT NULL,
	data text NOT NULL,
	CONSTRAINT fk_part_message_id_message_id_fk FOREIGN KEY (message_id) REFERENCES message(id) ON DELETE CASCADE
);
CREATE TABLE IF NOT EXISTS event_sequence (
	aggregate_id text PRIMARY KEY,
	seq integer NOT NULL,
	owner_id text
);
CREATE TABLE IF NOT EXISTS event (
	id text PRIMARY KEY,
	aggregate_id text NOT NULL,
	seq integer NOT NULL,
	type text NOT NULL,
	data text NOT NULL,
	CONSTRAINT fk_event_aggregate_id_event_sequence_aggregate_id_fk FOREIGN KEY (aggregate_id) REFERENCES event_sequence(aggregate_id) ON DELETE CASCADE
);
CREATE TABLE IF NOT EXISTS todo (
	session_id text NOT NULL,
	content text NOT NULL,
	status text NOT NULL,
	priority text NOT NULL,
	position integer NOT NULL,
	time_created integer NOT NULL,
	time_updated integer NOT NULL,
	CONSTRAINT todo_pk PRIMARY KEY(session_id, position),
	CONSTRAINT fk_todo_session_id_session_id_fk FOREIGN KEY (session_id) REFERENCES session(id) ON DELETE CASCADE
);
CREATE INDEX IF NOT EXISTS event_aggregate_type_seq_idx ON event (aggregate_id, type, seq);
CREATE INDEX IF NOT EXISTS message_session_time_created_id_idx ON message (session_id, time_created, id);
CREATE INDEX IF NOT EXISTS part_message_id_id_idx ON part (message_id, id);
CREATE INDEX IF NOT EXISTS part_session_idx ON part (session_id);
CREATE INDEX IF NOT EXISTS session_project_idx ON session (project_id);
CREATE INDEX IF NOT EXISTS session_workspace_idx ON session (workspace_id);
CREATE INDEX IF NOT EXISTS session_parent_idx ON session (parent_id);
CREATE INDEX IF NOT EXISTS todo_session_idx ON todo (session_id);
`

// CreateDB creates an empty opencode.db at path with OpenCode's session
// schema, in WAL mode as OpenCode keeps it, and returns it open for
// writing (tests use it to write real-shaped rows).
func CreateDB(path string) (*sql.DB, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("create opencode db: %w", err)
	}
	u := url.URL{Scheme: "file", Path: path, RawQuery: "_pragma=journal_mode(wal)&_pragma=busy_timeout(5000)&_pragma=synchronous(normal)"}
	db, err := sql.Open("sqlite", u.String())
	if err != nil {
		return nil, fmt.Errorf("create opencode db: %w", err)
	}
	db.SetMaxOpenConns(1)
	if _, err := db.ExecContext(context.Background(), SchemaDDL); err != nil {
		db.Close()
		return nil, fmt.Errorf("create opencode db: %w", err)
	}
	return db, nil
}

// GenerateStore writes a synthetic OpenCode store of n sessions under dir
// (an XDG_DATA_HOME): opencode/opencode.db with sessions, messages and
// parts shaped as OpenCode 1.18 writes them (user prompts, assistant steps
// with step-start, bash tool calls and their output, text, step-finish;
// token and cost totals; the event log OpenCode keeps beside the rows, with
// its per-session sequence numbers). Most turns
// complete; some end in an API error, some were interrupted, some are left
// open mid-tool. Sizes are long-tailed, from a few kB to about 2 MB per
// session. The same seed writes the same store, relative to the current
// time.
func GenerateStore(dir string, n int, seed int64) error {
	db, err := CreateDB(filepath.Join(dir, "opencode", "opencode.db"))
	if err != nil {
		return err
	}
	defer db.Close()
	g := &generator{rng: rand.New(rand.NewPCG(uint64(seed), 0x6f70656e)), now: time.Now()}
	tx, err := db.Begin()
	if err != nil {
		return fmt.Errorf("generate opencode store: %w", err)
	}
	defer tx.Rollback()
	w, err := newRowWriter(tx)
	if err != nil {
		return err
	}
	defer w.close()
	ms := g.now.UnixMilli()
	if _, err := tx.Exec(`INSERT OR IGNORE INTO project (id, worktree, time_created, time_updated, sandboxes) VALUES ('global', '/', ?, ?, '[]')`, ms, ms); err != nil {
		return fmt.Errorf("generate opencode store: %w", err)
	}
	for i := range n {
		if err := g.session(w, i); err != nil {
			return err
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("generate opencode store: %w", err)
	}
	return nil
}

// rowWriter holds the prepared inserts.
type rowWriter struct {
	session, message, part, seq, event *sql.Stmt
}

func newRowWriter(tx *sql.Tx) (*rowWriter, error) {
	var w rowWriter
	var err error
	prep := func(q string) *sql.Stmt {
		if err != nil {
			return nil
		}
		var st *sql.Stmt
		st, err = tx.Prepare(q)
		return st
	}
	w.session = prep(`INSERT INTO session (id, project_id, slug, directory, path, title, version, cost, tokens_input, tokens_output,
		tokens_reasoning, tokens_cache_read, tokens_cache_write, permission, agent, model, time_created, time_updated, time_archived)
		VALUES (?, 'global', ?, ?, ?, ?, '1.18.33', ?, ?, ?, 0, ?, 0, '[]', 'build', ?, ?, ?, NULL)`)
	w.message = prep(`INSERT INTO message (id, session_id, time_created, time_updated, data) VALUES (?, ?, ?, ?, ?)`)
	w.part = prep(`INSERT INTO part (id, message_id, session_id, time_created, time_updated, data) VALUES (?, ?, ?, ?, ?, ?)`)
	w.seq = prep(`INSERT INTO event_sequence (aggregate_id, seq) VALUES (?, ?)`)
	w.event = prep(`INSERT INTO event (id, aggregate_id, seq, type, data) VALUES (?, ?, ?, ?, ?)`)
	if err != nil {
		w.close()
		return nil, fmt.Errorf("generate opencode store: %w", err)
	}
	return &w, nil
}

func (w *rowWriter) close() {
	for _, st := range []*sql.Stmt{w.session, w.message, w.part, w.seq, w.event} {
		if st != nil {
			st.Close()
		}
	}
}

type generator struct {
	rng *rand.Rand
	now time.Time
	err error
	// seq numbers the current session's events.
	seq int
}

// event appends the event OpenCode logs with every write: its
// event-sourced copy of the session's rows.
func (g *generator) event(w *rowWriter, sid, typ, key string, at time.Time, data obj) error {
	if _, err := w.event.Exec(g.id("evt_", at), sid, g.seq, typ, g.jsonText(obj{"sessionID": sid, key: data})); err != nil {
		return fmt.Errorf("generate opencode event: %w", err)
	}
	g.seq++
	return nil
}

var (
	genWords = strings.Fields("the a to of and in for is on that with as it this build test fix add update file function error module parse read write config value return change check run server client cache handler request response type struct field index query table session process signal")
	genDirs  = []string{"api", "web", "infra", "tools", "docs", "agent", "billing", "search"}
	genSlugs = strings.Fields("tidy quiet lucky brave calm eager happy swift bright gentle")
	genNouns = strings.Fields("pixel meadow forest river moon cloud harbor canyon comet garden")
	base62   = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
)

func (g *generator) words(n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(genWords[g.rng.IntN(len(genWords))])
	}
	return b.String()
}

func (g *generator) textOfSize(n int) string {
	var b strings.Builder
	for b.Len() < n {
		b.WriteString(g.words(8 + g.rng.IntN(8)))
		b.WriteByte('\n')
	}
	return b.String()
}

// id makes an OpenCode-style id: prefix, 12 hex digits of time, 14 random
// base62 characters. Message and part ids ascend with time; session ids
// descend (newest first), as OpenCode's do.
func (g *generator) id(prefix string, at time.Time) string {
	var b strings.Builder
	b.WriteString(prefix)
	t := uint64(at.UnixMicro()) & 0xffffffffffff
	if prefix == "ses_" {
		t = 0xffffffffffff - t
	}
	fmt.Fprintf(&b, "%012x", t)
	for range 14 {
		b.WriteByte(base62[g.rng.IntN(len(base62))])
	}
	return b.String()
}

func (g *generator) jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil && g.err == nil {
		g.err = err
	}
	return string(b)
}

type obj = map[string]any

// session writes one session with its messages and parts.
func (g *generator) session(w *rowWriter, i int) error {
	created := g.now.Add(-3*time.Hour - time.Duration(g.rng.Int64N(int64(30*24*time.Hour))))
	sid := g.id("ses_", created)
	dir := "/home/dev/src/" + genDirs[g.rng.IntN(len(genDirs))]
	model, provider := "claude-sonnet-4-6", "anthropic"
	if g.rng.IntN(3) == 0 {
		model, provider = "gpt-5.4", "openai"
	}
	target := max(4<<10, min(2<<20, int(24<<10*math.Exp(1.2*g.rng.NormFloat64()))))
	turns := 1 + g.rng.IntN(3)
	outPerTurn := target / turns
	at := created
	var tin, tout int64
	var cost float64
	g.seq = 0
	var prompt string
	tick := func(d time.Duration) int64 { at = at.Add(d); return at.UnixMilli() }
	for t := range turns {
		text := "please " + g.words(5+g.rng.IntN(25))
		if t == 0 {
			prompt = text
		}
		uid := g.id("msg_", at)
		ums := tick(50 * time.Millisecond)
		user := obj{"role": "user", "time": obj{"created": ums}, "agent": "build",
			"model": obj{"providerID": provider, "modelID": model}, "summary": obj{"diffs": []any{}}}
		if _, err := w.message.Exec(uid, sid, ums, ums, g.jsonText(user)); err != nil {
			return fmt.Errorf("generate opencode session %d: %w", i, err)
		}
		user["id"], user["sessionID"] = uid, sid
		if err := g.event(w, sid, "message.updated.1", "info", at, user); err != nil {
			return err
		}
		if err := g.part(w, uid, sid, at, obj{"type": "text", "text": text}); err != nil {
			return err
		}
		last := t == turns-1
		ending := "stop"
		if last {
			switch x := g.rng.IntN(100); {
			case x < 5:
				ending = "error"
			case x < 9:
				ending = "aborted"
			case x < 15:
				ending = "open"
			}
		}
		steps := 1 + g.rng.IntN(4)
		for s := range steps {
			finalStep := s == steps-1
			mid := g.id("msg_", at)
			mstart := tick(time.Duration(300+g.rng.IntN(3000)) * time.Millisecond)
			in, out := int64(2000+g.rng.IntN(20000)), int64(50+g.rng.IntN(800))
			c := float64(in)*3e-6 + float64(out)*15e-6
			if err := g.part(w, mid, sid, at, obj{"type": "step-start"}); err != nil {
				return err
			}
			finish := "tool-calls"
			toolStatus := "completed"
			if finalStep {
				finish = "stop"
			}
			if !finalStep || ending == "open" {
				cmd := "rg -n " + genWords[g.rng.IntN(len(genWords))] + " " + genDirs[g.rng.IntN(len(genDirs))]
				state := obj{"status": "completed", "input": obj{"command": cmd, "description": "Search the code"},
					"output": g.textOfSize(max(64, outPerTurn/steps)), "metadata": obj{"exit": 0},
					"time": obj{"start": at.UnixMilli(), "end": at.Add(time.Second).UnixMilli()}}
				if finalStep && ending == "open" {
					toolStatus = "running"
					state = obj{"status": "running", "input": obj{"command": "sleep 600", "description": "Wait"}, "time": obj{"start": at.UnixMilli()}}
				}
				if err := g.part(w, mid, sid, at, obj{"type": "tool", "tool": "bash", "callID": fmt.Sprintf("call_%d_%d", t, s), "state": state}); err != nil {
					return err
				}
			}
			data := obj{"parentID": uid, "role": "assistant", "mode": "build", "agent": "build",
				"path": obj{"cwd": dir, "root": "/"}, "cost": c,
				"tokens":  obj{"total": in + out, "input": in, "output": out, "reasoning": 0, "cache": obj{"write": 0, "read": in / 2}},
				"modelID": model, "providerID": provider}
			switch {
			case finalStep && ending == "open" && toolStatus == "running":
				data["time"] = obj{"created": mstart}
			case finalStep && ending == "error":
				data["time"] = obj{"created": mstart, "completed": tick(time.Second)}
				data["error"] = obj{"name": "APIError", "data": obj{"message": "Overloaded", "statusCode": 529, "isRetryable": true}}
			case finalStep && ending == "aborted":
				data["time"] = obj{"created": mstart, "completed": tick(time.Second)}
				data["error"] = obj{"name": "MessageAbortedError", "data": obj{"message": "The operation was aborted."}}
			default:
				if finalStep {
					answer := "Done: " + g.words(10+g.rng.IntN(80))
					if err := g.part(w, mid, sid, at, obj{"type": "text", "text": answer,
						"time": obj{"start": at.UnixMilli(), "end": at.UnixMilli() + 20}}); err != nil {
						return err
					}
				}
				if err := g.part(w, mid, sid, at, obj{"reason": finish, "type": "step-finish",
					"tokens": obj{"total": in + out, "input": in, "output": out, "reasoning": 0, "cache": obj{"write": 0, "read": in / 2}}, "cost": c}); err != nil {
					return err
				}
				data["time"] = obj{"created": mstart, "completed": tick(time.Duration(500+g.rng.IntN(5000)) * time.Millisecond)}
				data["finish"] = finish
				tin, tout, cost = tin+in, tout+out, cost+c
			}
			if _, err := w.message.Exec(mid, sid, mstart, at.UnixMilli(), g.jsonText(data)); err != nil {
				return fmt.Errorf("generate opencode session %d: %w", i, err)
			}
			data["id"], data["sessionID"] = mid, sid
			if err := g.event(w, sid, "message.updated.1", "info", at, data); err != nil {
				return err
			}
			if finalStep && (ending == "open" || ending == "error" || ending == "aborted") {
				break
			}
		}
		if ending != "stop" {
			break
		}
		tick(time.Duration(g.rng.IntN(900)) * time.Second)
	}
	title := strings.ToUpper(prompt[7:8]) + prompt[8:min(len(prompt), 50)]
	slug := genSlugs[g.rng.IntN(len(genSlugs))] + "-" + genNouns[g.rng.IntN(len(genNouns))]
	modelJSON := g.jsonText(obj{"id": model, "providerID": provider, "variant": "default"})
	if g.err != nil {
		return fmt.Errorf("generate opencode session %d: %w", i, g.err)
	}
	if _, err := w.session.Exec(sid, slug, dir, strings.TrimPrefix(dir, "/"), title, cost, tin, tout, tin/2, modelJSON, created.UnixMilli(), at.UnixMilli()); err != nil {
		return fmt.Errorf("generate opencode session %d: %w", i, err)
	}
	info := obj{"id": sid, "slug": slug, "projectID": "global", "directory": dir, "title": title, "version": "1.18.33",
		"time": obj{"created": created.UnixMilli(), "updated": at.UnixMilli()}}
	if err := g.event(w, sid, "session.updated.1", "info", at, info); err != nil {
		return err
	}
	if _, err := w.seq.Exec(sid, g.seq-1); err != nil {
		return fmt.Errorf("generate opencode session %d: %w", i, err)
	}
	return nil
}

func (g *generator) part(w *rowWriter, mid, sid string, at time.Time, data obj) error {
	ms := at.UnixMilli()
	pid := g.id("prt_", at)
	if _, err := w.part.Exec(pid, mid, sid, ms, ms, g.jsonText(data)); err != nil {
		return fmt.Errorf("generate opencode part: %w", err)
	}
	data["id"], data["messageID"], data["sessionID"] = pid, mid, sid
	return g.event(w, sid, "message.part.updated.1", "part", at, data)
}
