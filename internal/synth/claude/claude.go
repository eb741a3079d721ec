// Package claude writes synthetic stores in Claude Code's own on-disk format, for
// benchmarks and tests; no production package links it.
package claude

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode"
)

// GenerateStore writes a synthetic Claude Code store of n sessions under
// home (home/.claude/...), for benchmarks and tests. It writes the record
// types, field names, key order and layout Claude Code 2.1 writes (see
// the package documentation), with realistic sizes: most transcripts are
// tens to hundreds of kB, a few reach several MB. Sessions spread over
// n/20+1 project folders and the 30 days before now; about 1% are left
// mid-turn without a closing cost-state, as a running session is. The
// content is a function of seed; the times depend on the current time.
func GenerateStore(home string, n int, seed int64) error {
	g := &generator{
		rng:      rand.New(rand.NewPCG(uint64(seed), uint64(seed)^0x9e3779b97f4a7c15)),
		now:      time.Now().UTC(),
		projects: n/20 + 1,
	}
	root := filepath.Join(home, ".claude")
	if err := os.MkdirAll(root, 0o700); err != nil {
		return fmt.Errorf("generate claude store: %w", err)
	}
	hist, err := os.OpenFile(filepath.Join(root, "history.jsonl"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("generate claude store: %w", err)
	}
	defer hist.Close()
	hw := bufio.NewWriter(hist)
	for i := 0; i < n; i++ {
		if err := g.session(root, hw); err != nil {
			return fmt.Errorf("generate claude store: %w", err)
		}
	}
	if err := hw.Flush(); err != nil {
		return fmt.Errorf("generate claude store: %w", err)
	}
	return nil
}

type generator struct {
	rng      *rand.Rand
	now      time.Time
	projects int
	corpus   string
}

func (g *generator) uuid() string {
	b := make([]byte, 16)
	for i := range b {
		b[i] = byte(g.rng.UintN(256))
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

func (g *generator) hex(n int) string {
	const digits = "0123456789abcdef"
	b := make([]byte, n)
	for i := range b {
		b[i] = digits[g.rng.IntN(16)]
	}
	return string(b)
}

var words = strings.Fields(`the a function test file error fix add remove update build run check config
server client request response handler session process module package import return value type
struct field method interface slice map string int bool context cancel timeout retry log debug`)

// text returns about n bytes of words: a random window of the corpus,
// which is made once per store.
func (g *generator) text(n int) string {
	if g.corpus == "" {
		var b strings.Builder
		for b.Len() < corpusSize {
			b.WriteString(words[g.rng.IntN(len(words))])
			b.WriteByte(' ')
		}
		g.corpus = b.String()
	}
	n = min(n, corpusSize/2)
	i := g.rng.IntN(corpusSize - n)
	return strings.TrimSpace(g.corpus[i : i+n])
}

const corpusSize = 1 << 20

// turns draws a session's number of turns: mostly a few; 3% of sessions
// are long, with hundreds of turns (transcripts of several MB).
func (g *generator) turns() int {
	if g.rng.IntN(100) < 3 {
		return min(30+int(g.rng.ExpFloat64()*60), 300)
	}
	return min(1+int(g.rng.ExpFloat64()*6), 100)
}

// ts formats a time the way Claude does.
func ts(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// rec marshals fields in order: Claude's key order matters to readers
// that peek at a record's first keys.
type rec []kv

type kv struct {
	k string
	v any
}

func (r rec) MarshalJSON() ([]byte, error) {
	var b strings.Builder
	b.WriteByte('{')
	for i, f := range r {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(f.k)
		v, err := json.Marshal(f.v)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return []byte(b.String()), nil
}

func (g *generator) session(root string, hist *bufio.Writer) error {
	proj := g.rng.IntN(g.projects)
	cwd := fmt.Sprintf("/home/dev/src/project-%04d", proj)
	dir := filepath.Join(root, "projects", projectSlug(cwd))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	id := g.uuid()
	path := filepath.Join(dir, id+".jsonl")
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 256<<10)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	write := func(r rec) {
		if err == nil {
			err = enc.Encode(r)
		}
	}

	start := g.now.Add(-time.Duration(g.rng.Float64() * float64(30*24*time.Hour)))
	t := start
	step := func(max time.Duration) time.Time {
		t = t.Add(time.Duration(g.rng.Int64N(int64(max))) + time.Millisecond)
		return t
	}
	model := []string{"claude-opus-5-5", "claude-sonnet-5", "claude-haiku-5"}[g.rng.IntN(3)]
	interactive := g.rng.IntN(3) == 0
	entry := "sdk-cli"
	if interactive {
		entry = "cli"
	}
	running := g.rng.IntN(100) == 0
	nTurns := g.turns()
	var parent any
	var inTok, outTok int64
	common := func(uuid string, at time.Time) rec {
		return rec{{"uuid", uuid}, {"timestamp", ts(at)}, {"userType", "external"}, {"entrypoint", entry},
			{"cwd", cwd}, {"sessionId", id}, {"version", "2.1.330"}, {"gitBranch", "main"}}
	}
	for turn := 0; turn < nTurns && err == nil; turn++ {
		prompt := g.text(20 + g.rng.IntN(300))
		if turn == 0 && interactive {
			fmt.Fprintf(hist, `{"display":%q,"pastedContents":{},"timestamp":%d,"project":%q,"sessionId":%q}`+"\n", prompt, t.UnixMilli(), cwd, id)
		}
		write(rec{{"type", "queue-operation"}, {"operation", "enqueue"}, {"timestamp", ts(step(time.Second))}, {"sessionId", id}, {"content", prompt}})
		write(rec{{"type", "queue-operation"}, {"operation", "dequeue"}, {"timestamp", ts(step(10 * time.Millisecond))}, {"sessionId", id}})
		userID := g.uuid()
		write(append(rec{{"parentUuid", parent}, {"isSidechain", false}, {"promptId", g.uuid()}, {"type", "user"},
			{"message", map[string]any{"role": "user", "content": prompt}}}, common(userID, step(100*time.Millisecond))...))
		parent = userID
		for a := 0; a < 1+g.rng.IntN(3); a++ {
			attID := g.uuid()
			write(append(rec{{"parentUuid", parent}, {"isSidechain", false}, {"attachment", map[string]any{
				"type":    []string{"environment", "skill_listing", "deferred_tools_delta", "date"}[g.rng.IntN(4)],
				"content": g.text(200 + g.rng.IntN(6000))}}, {"type", "attachment"}}, common(attID, t)...))
			parent = attID
		}
		if turn == 0 {
			write(rec{{"type", "api-request-shape"}, {"sessionId", id}, {"shapeHash", g.hex(16)}, {"timestamp", ts(t)},
				{"system", g.text(30000)}})
		}
		write(rec{{"type", "api-request-blob"}, {"sessionId", id}, {"hash", g.hex(16)}, {"message", g.text(500 + g.rng.IntN(8000))}})
		write(rec{{"type", "api-request"}, {"sessionId", id}, {"id", "req_" + g.hex(24)}, {"timestamp", ts(t)},
			{"params", map[string]any{"model": model, "max_tokens": 32000, "thinking": map[string]any{"type": "adaptive"}}}})
		tools := g.rng.IntN(4)
		for k := 0; k < tools && err == nil; k++ {
			msgID, toolID, aID := "msg_"+g.hex(24), "toolu_"+g.hex(24), g.uuid()
			in, out := int64(2000+g.rng.IntN(40000)), int64(20+g.rng.IntN(400))
			inTok, outTok = inTok+in, outTok+out
			cmd := "go test ./... -run " + words[g.rng.IntN(len(words))]
			write(append(rec{{"parentUuid", parent}, {"isSidechain", false}, {"message", map[string]any{
				"id": msgID, "type": "message", "role": "assistant", "model": model,
				"content":     []any{map[string]any{"type": "tool_use", "id": toolID, "name": "Bash", "input": map[string]any{"command": cmd, "description": "Run the tests"}}},
				"stop_reason": "tool_use", "stop_sequence": nil,
				"usage": map[string]any{"input_tokens": in, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, "output_tokens": out}}},
				{"requestId", "req_" + g.hex(24)}, {"type", "assistant"}}, common(aID, step(20*time.Second))...))
			parent = aID
			if running && turn == nTurns-1 && k == tools-1 {
				break // the session's process is still running this tool
			}
			output := g.text(100 + int(g.rng.ExpFloat64()*3000))
			rID := g.uuid()
			write(append(rec{{"parentUuid", parent}, {"isSidechain", false}, {"promptId", g.uuid()}, {"type", "user"},
				{"message", map[string]any{"role": "user", "content": []any{map[string]any{"tool_use_id": toolID, "type": "tool_result", "content": output, "is_error": false}}}}},
				append(common(rID, step(30*time.Second)), kv{"toolUseResult", map[string]any{"stdout": output, "stderr": "", "interrupted": false}}, kv{"sourceToolAssistantUUID", aID})...))
			parent = rID
		}
		if running && turn == nTurns-1 && tools > 0 {
			break
		}
		msgID, aID := "msg_"+g.hex(24), g.uuid()
		in, out := int64(2000+g.rng.IntN(40000)), int64(20+g.rng.IntN(1500))
		inTok, outTok = inTok+in, outTok+out
		write(append(rec{{"parentUuid", parent}, {"isSidechain", false}, {"message", map[string]any{
			"id": msgID, "type": "message", "role": "assistant", "model": model,
			"content":     []any{map[string]any{"type": "text", "text": g.text(40 + g.rng.IntN(2000))}},
			"stop_reason": "end_turn", "stop_sequence": nil,
			"usage": map[string]any{"input_tokens": in, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, "output_tokens": out}}},
			{"requestId", "req_" + g.hex(24)}, {"type", "assistant"}}, common(aID, step(20*time.Second))...))
		parent = aID
		write(rec{{"type", "tools-used"}, {"tools", []string{"Bash"}}, {"sessionId", id}})
		write(rec{{"type", "last-prompt"}, {"lastPrompt", prompt}, {"leafUuid", aID}, {"sessionId", id}})
		write(rec{{"type", "atis-latch"}, {"atis", ""}, {"sessionId", id}})
		if !(running && turn == nTurns-1) {
			cost := math.Round((float64(inTok)*5e-6+float64(outTok)*25e-6)*1e6) / 1e6
			write(rec{{"type", "cost-state"}, {"sessionId", id}, {"totalCostUSD", cost}, {"totalAPIDuration", g.rng.IntN(100000)},
				{"totalDuration", g.rng.IntN(1000000)}, {"totalToolDuration", g.rng.IntN(100000)}, {"startTime", start.UnixMilli()},
				{"modelUsage", map[string]any{model: map[string]any{"inputTokens": inTok, "outputTokens": outTok,
					"cacheReadInputTokens": 0, "cacheCreationInputTokens": 0, "costUSD": cost}}}})
		}
	}
	if err == nil {
		err = w.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Chtimes(path, t, t)
}

// projectSlug is Claude Code's project folder name for cwd: each character
// but ASCII letters and digits becomes '-'. (The generated cwds are short
// ASCII paths; the adapter's reader covers the long and non-ASCII cases.)
func projectSlug(cwd string) string {
	return strings.Map(func(r rune) rune {
		if r < 128 && (unicode.IsLetter(r) || unicode.IsDigit(r)) {
			return r
		}
		return '-'
	}, cwd)
}
