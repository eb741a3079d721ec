// Package codex writes synthetic stores in Codex's own on-disk format, for
// benchmarks and tests; no production package links it.
package codex

import (
	"bufio"
	"bytes"
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

	"github.com/google/uuid"
	_ "modernc.org/sqlite" // the "sqlite" database/sql driver
)

// GenerateStore writes a synthetic Codex store of n sessions under dir (a
// CODEX_HOME): rollouts laid out and shaped as Codex 0.169 writes them
// (session_meta with its large base instructions, turn records, tool calls
// and outputs, token counts, task_complete / turn_aborted / failed turns,
// some turns left open), and the threads table of state_5.sqlite. Sizes
// follow a long-tailed distribution from about 30 kB to several MB. The
// same seed writes the same store, relative to the current time.
func GenerateStore(dir string, n int, seed int64) error {
	g := &generator{rng: rand.New(rand.NewPCG(uint64(seed), 0x636f646578)), now: time.Now()}
	db, err := createStateDB(filepath.Join(dir, "state_5.sqlite"))
	if err != nil {
		return err
	}
	defer db.Close()
	tx, err := db.Begin()
	if err != nil {
		return fmt.Errorf("generate codex store: %w", err)
	}
	defer tx.Rollback()
	ins, err := tx.Prepare(`INSERT INTO threads (id, rollout_path, created_at, updated_at, source, model_provider, cwd, title,
		sandbox_policy, approval_mode, tokens_used, has_user_event, archived, cli_version, first_user_message, model,
		created_at_ms, updated_at_ms, thread_source, preview, history_mode, originator)
		VALUES (?, ?, ?, ?, 'exec', 'openai', ?, ?, '{"type":"danger-full-access"}', 'never', ?, 0, 0, '0.169.0', ?, ?, ?, ?, 'user', ?, 'paginated', 'codex_exec')`)
	if err != nil {
		return fmt.Errorf("generate codex store: %w", err)
	}
	defer ins.Close()
	for i := range n {
		s, err := g.session(dir, i)
		if err != nil {
			return err
		}
		if _, err := ins.Exec(s.id, s.path, s.created.Unix(), s.updated.Unix(), s.cwd, s.prompt, s.tokensIn+s.tokensOut,
			s.prompt, s.model, s.created.UnixMilli(), s.updated.UnixMilli(), s.prompt); err != nil {
			return fmt.Errorf("generate codex store: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("generate codex store: %w", err)
	}
	return nil
}

// ThreadsDDL is the threads table of state_5.sqlite as Codex 0.169 creates
// it (columns, types and defaults), with the indexes its readers use.
const ThreadsDDL = `
CREATE TABLE IF NOT EXISTS threads (
	id TEXT PRIMARY KEY,
	rollout_path TEXT NOT NULL,
	created_at INTEGER NOT NULL,
	updated_at INTEGER NOT NULL,
	source TEXT NOT NULL,
	model_provider TEXT NOT NULL,
	cwd TEXT NOT NULL,
	title TEXT NOT NULL,
	sandbox_policy TEXT NOT NULL,
	approval_mode TEXT NOT NULL,
	tokens_used INTEGER NOT NULL DEFAULT 0,
	has_user_event INTEGER NOT NULL DEFAULT 0,
	archived INTEGER NOT NULL DEFAULT 0,
	archived_at INTEGER,
	git_sha TEXT,
	git_branch TEXT,
	git_origin_url TEXT,
	cli_version TEXT NOT NULL DEFAULT '',
	first_user_message TEXT NOT NULL DEFAULT '',
	agent_nickname TEXT,
	agent_role TEXT,
	memory_mode TEXT NOT NULL DEFAULT 'enabled',
	model TEXT,
	reasoning_effort TEXT,
	agent_path TEXT,
	created_at_ms INTEGER,
	updated_at_ms INTEGER,
	thread_source TEXT,
	preview TEXT NOT NULL DEFAULT '',
	recency_at INTEGER NOT NULL DEFAULT 0,
	recency_at_ms INTEGER NOT NULL DEFAULT 0,
	history_mode TEXT NOT NULL DEFAULT 'legacy',
	name TEXT,
	is_pinned INTEGER NOT NULL DEFAULT 0,
	thread_section_id TEXT,
	section_position INTEGER,
	section_entered_at_ms INTEGER,
	project_id TEXT,
	originator TEXT,
	daybreak_enabled BOOLEAN,
	creator_user_id TEXT,
	creator_account_id TEXT,
	attached_thread_parent_id TEXT
);
CREATE INDEX IF NOT EXISTS idx_threads_created_at ON threads(created_at DESC, id DESC);
CREATE INDEX IF NOT EXISTS idx_threads_updated_at ON threads(updated_at DESC, id DESC);
CREATE INDEX IF NOT EXISTS idx_threads_archived ON threads(archived);
CREATE INDEX IF NOT EXISTS idx_threads_updated_at_ms ON threads(updated_at_ms DESC, id DESC);
`

// createStateDB creates (or opens) state_5.sqlite in WAL mode, as Codex does.
func createStateDB(path string) (*sql.DB, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("create codex state db: %w", err)
	}
	u := url.URL{Scheme: "file", Path: path, RawQuery: "_pragma=journal_mode(wal)&_pragma=busy_timeout(5000)"}
	db, err := sql.Open("sqlite", u.String())
	if err != nil {
		return nil, fmt.Errorf("create codex state db: %w", err)
	}
	db.SetMaxOpenConns(1)
	if _, err := db.ExecContext(context.Background(), ThreadsDDL); err != nil {
		db.Close()
		return nil, fmt.Errorf("create codex state db: %w", err)
	}
	return db, nil
}

type generator struct {
	rng *rand.Rand
	now time.Time
}

// genSession is what the generator wrote for one session.
type genSession struct {
	id, path, cwd, prompt, model string
	created, updated             time.Time
	tokensIn, tokensOut          int64
}

var (
	genWords  = strings.Fields("the a to of and in for is on that with as it this build test fix add update file function error module parse read write config value return change check run server client cache handler request response type struct field index query table session process signal")
	genModels = []string{"gpt-5.5-codex", "gpt-5.4", "gpt-5.5-codex-mini"}
	genDirs   = []string{"api", "web", "infra", "tools", "docs", "agent", "billing", "search"}
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

// textOfSize returns about n bytes of prose-like text in lines.
func (g *generator) textOfSize(n int) string {
	var b strings.Builder
	for b.Len() < n {
		b.WriteString(g.words(8 + g.rng.IntN(8)))
		b.WriteByte('\n')
	}
	return b.String()
}

// logNormal returns a long-tailed size around median, within [lo, hi].
func (g *generator) logNormal(median float64, sigma float64, lo, hi int) int {
	v := median * math.Exp(sigma*g.rng.NormFloat64())
	return max(lo, min(hi, int(v)))
}

func (g *generator) uuidV7(at time.Time) string {
	var b [16]byte
	ms := uint64(at.UnixMilli())
	for i := range 6 {
		b[i] = byte(ms >> (40 - 8*i))
	}
	for i := 6; i < 16; i++ {
		b[i] = byte(g.rng.IntN(256))
	}
	b[6] = 0x70 | b[6]&0x0f
	b[8] = 0x80 | b[8]&0x3f
	return uuid.UUID(b).String()
}

// rolloutWriter writes rollout lines with their envelope.
type rolloutWriter struct {
	w       *bufio.Writer
	ordinal int
	at      time.Time
	err     error
}

func (r *rolloutWriter) write(typ string, payload any) {
	if r.err != nil {
		return
	}
	b, err := json.Marshal(struct {
		Timestamp string `json:"timestamp"`
		Ordinal   int    `json:"ordinal"`
		Type      string `json:"type"`
		Payload   any    `json:"payload"`
	}{r.at.UTC().Format("2006-01-02T15:04:05.000Z"), r.ordinal, typ, payload})
	if err != nil {
		r.err = err
		return
	}
	r.ordinal++
	b = append(b, '\n')
	_, r.err = r.w.Write(b)
}

// ordered is a JSON object that keeps its keys in the order given, as
// Codex writes them ("type" first in a payload).
type ordered []any

// o builds an ordered object from alternating keys and values.
func o(kv ...any) ordered { return ordered(kv) }

// MarshalJSON writes the object with its keys in order.
func (m ordered) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i := 0; i+1 < len(m); i += 2 {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := json.Marshal(m[i])
		if err != nil {
			return nil, err
		}
		v, err := json.Marshal(m[i+1])
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

func usageOf(in, out int64) ordered {
	return o("input_tokens", in, "cached_input_tokens", in/2, "cache_write_input_tokens", 0,
		"output_tokens", out, "reasoning_output_tokens", out/4, "total_tokens", in+out)
}

// session writes one rollout.
func (g *generator) session(home string, i int) (genSession, error) {
	var s genSession
	created := g.now.Add(-3*time.Hour - time.Duration(g.rng.Int64N(int64(30*24*time.Hour))))
	s.created = created
	s.id = g.uuidV7(created)
	s.cwd = "/home/dev/src/" + genDirs[g.rng.IntN(len(genDirs))]
	s.model = genModels[g.rng.IntN(len(genModels))]
	local := created.Local()
	dir := filepath.Join(home, "sessions", local.Format("2006"), local.Format("01"), local.Format("02"))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return s, fmt.Errorf("generate codex session: %w", err)
	}
	s.path = filepath.Join(dir, "rollout-"+local.Format("2006-01-02T15-04-05")+"-"+s.id+".jsonl")
	f, err := os.Create(s.path)
	if err != nil {
		return s, fmt.Errorf("generate codex session: %w", err)
	}
	defer f.Close()
	r := &rolloutWriter{w: bufio.NewWriterSize(f, 256<<10), at: created}

	// A target size: most sessions are tens of kB, a few several MB.
	target := g.logNormal(60<<10, 1.3, 30<<10, 6<<20)
	turns := 1 + g.rng.IntN(3)
	if target > 200<<10 {
		turns += g.rng.IntN(8)
	}
	outputBudget := max(0, target-30<<10) / turns

	r.write("session_meta", o("account_scoped", true, "session_id", s.id, "id", s.id,
		"timestamp", created.UTC().Format("2006-01-02T15:04:05.000Z"), "cwd", s.cwd,
		"runtime_workspace_roots", []string{s.cwd}, "originator", "codex_exec", "cli_version", "0.169.0",
		"source", "exec", "thread_source", "user", "model_provider", "openai",
		"base_instructions", o("text", g.textOfSize(20<<10), "provenance", o("type", "model", "model", s.model)),
		"history_mode", "paginated", "context_window", o("window_id", g.uuidV7(created))))
	var tin, tout int64
	for t := range turns {
		turnID := g.uuidV7(r.at)
		prompt := "please " + g.words(6+g.rng.IntN(30))
		if t == 0 {
			s.prompt = prompt
		}
		r.write("event_msg", o("type", "task_started", "turn_id", turnID, "root_turn_id", turnID,
			"started_at", r.at.Unix(), "model_context_window", 258400, "collaboration_mode_kind", "default"))
		if t == 0 {
			r.write("response_item", o("type", "message", "id", "msg_"+g.uuidV7(r.at), "role", "developer",
				"content", []any{o("type", "input_text", "text", "<skills_instructions>\n"+g.textOfSize(2<<10)+"</skills_instructions>")}))
			r.write("response_item", o("type", "message", "id", "msg_"+g.uuidV7(r.at), "role", "user",
				"content", []any{o("type", "input_text", "text", "<environment_context>\n  <cwd>"+s.cwd+"</cwd>\n  <shell>bash</shell>\n</environment_context>")}))
			r.write("world_state", o("full", true, "state", o("model", s.model, "environments", o("environments", o("local", o("cwd", s.cwd, "status", "available", "shell", "bash"))))))
		}
		r.write("turn_context", o("turn_id", turnID, "root_turn_id", turnID, "cwd", s.cwd, "approval_policy", "never",
			"model", s.model, "summary", "none", "sandbox_policy", o("type", "danger-full-access")))
		r.write("response_item", o("type", "message", "id", "msg_"+g.uuidV7(r.at), "role", "user",
			"content", []any{o("type", "input_text", "text", prompt)}))
		r.write("event_msg", o("type", "item_completed", "thread_id", s.id, "turn_id", turnID,
			"item", o("type", "UserMessage", "id", g.uuidV7(r.at), "content", []any{o("type", "text", "text", prompt, "text_elements", []any{})})))
		last := t == turns-1
		// The last turn of some sessions failed, was interrupted, or is
		// still open (the process was killed, or is still working).
		ending := "complete"
		if last {
			switch x := g.rng.IntN(100); {
			case x < 5:
				ending = "failed"
			case x < 10:
				ending = "aborted"
			case x < 14:
				ending = "open"
			}
		}
		calls := g.rng.IntN(5)
		for c := range calls {
			r.at = r.at.Add(time.Duration(200+g.rng.IntN(3000)) * time.Millisecond)
			callID := fmt.Sprintf("call_%d_%d", t, c)
			cmd := "rg -n " + genWords[g.rng.IntN(len(genWords))] + " " + genDirs[g.rng.IntN(len(genDirs))]
			args, _ := json.Marshal(o("cmd", cmd, "yield_time_ms", 10000))
			r.write("response_item", o("type", "function_call", "status", "completed", "id", "fc_"+callID,
				"name", "exec_command", "arguments", string(args), "call_id", callID))
			if ending == "open" && c == calls-1 {
				break
			}
			out := g.textOfSize(max(64, outputBudget/max(calls, 1)))
			r.write("event_msg", o("type", "item_completed", "thread_id", s.id, "turn_id", turnID,
				"item", o("type", "CommandExecution", "id", callID, "command", []string{"/bin/bash", "-lc", cmd},
					"status", "completed", "aggregated_output", out, "exit_code", 0)))
			r.write("response_item", o("type", "function_call_output", "call_id", callID,
				"output", "Chunk ID: 3f0780\nWall time: 0.2 seconds\nProcess exited with code 0\nOriginal token count: 120\nOutput:\n"+out))
			tin += int64(1000 + g.rng.IntN(9000))
			tout += int64(50 + g.rng.IntN(500))
			r.write("event_msg", o("type", "token_count", "info", o("total_token_usage", usageOf(tin, tout),
				"last_token_usage", usageOf(1000, 100), "model_context_window", 258400)))
		}
		if ending == "open" {
			if calls == 0 {
				r.write("event_msg", o("type", "thread_settings_applied", "thread_id", s.id, "thread_settings", o("model", s.model)))
			}
			break
		}
		r.at = r.at.Add(time.Duration(500+g.rng.IntN(5000)) * time.Millisecond)
		switch ending {
		case "aborted":
			r.write("event_msg", o("type", "turn_aborted", "turn_id", turnID, "reason", "interrupted"))
		case "failed":
			r.write("event_msg", o("type", "task_complete", "turn_id", turnID, "root_turn_id", turnID,
				"last_agent_message", nil, "error", o("message", "stream disconnected before completion", "codex_error_info", "other"),
				"started_at", r.at.Unix(), "completed_at", r.at.Unix(), "duration_ms", 104))
		default:
			answer := "Done: " + g.words(10+g.rng.IntN(60))
			r.write("event_msg", o("type", "item_completed", "thread_id", s.id, "turn_id", turnID,
				"item", o("type", "AgentMessage", "id", "msg_"+turnID, "content", []any{o("type", "Text", "text", answer)})))
			r.write("response_item", o("type", "message", "status", "completed", "id", "msg_"+turnID, "role", "assistant",
				"content", []any{o("type", "output_text", "text", answer, "annotations", []any{})}))
			tin += int64(1000 + g.rng.IntN(9000))
			tout += int64(50 + g.rng.IntN(500))
			r.write("token_usage_record", o("thread_id", s.id, "turn_id", turnID, "session_id", s.id,
				"usage", usageOf(1000, 100), "thread_token_usage", usageOf(tin, tout)))
			r.write("event_msg", o("type", "token_count", "info", o("total_token_usage", usageOf(tin, tout),
				"last_token_usage", usageOf(1000, 100), "model_context_window", 258400)))
			r.write("event_msg", o("type", "task_complete", "turn_id", turnID, "root_turn_id", turnID,
				"last_agent_message", answer, "started_at", r.at.Unix(), "completed_at", r.at.Unix(), "duration_ms", 5120))
		}
		r.at = r.at.Add(time.Duration(g.rng.IntN(600)) * time.Second)
	}
	if r.err == nil {
		r.err = r.w.Flush()
	}
	if r.err != nil {
		return s, fmt.Errorf("generate codex session %d: %w", i, r.err)
	}
	if err := f.Close(); err != nil {
		return s, fmt.Errorf("generate codex session %d: %w", i, err)
	}
	s.updated = r.at
	s.tokensIn, s.tokensOut = tin, tout
	if err := os.Chtimes(s.path, r.at, r.at); err != nil {
		return s, fmt.Errorf("generate codex session %d: %w", i, err)
	}
	return s, nil
}
