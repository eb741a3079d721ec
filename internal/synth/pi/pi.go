// Package pi writes synthetic stores in Pi's own on-disk format, for
// benchmarks and tests; no production package links it.
package pi

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/uuid"
)

// GenerateStore writes n synthetic Pi sessions under dir, which stands for a
// home directory: the files go to dir/.pi/agent/sessions/--<cwd slug>--/,
// named, laid out and shaped as Pi 0.73 writes them (header, model and
// thinking-level records, user / assistant / toolResult messages in a tree,
// usage with cost, some branched, some failed, aborted or cut mid-tool).
// Sizes are skewed as real stores are: most sessions are a few kB, a few
// are several MB. The same seed gives the same sessions, dated relative to
// now over the last 60 days, with file times set to the last record.
func GenerateStore(dir string, n int, seed int64) error {
	g := generator{r: rand.New(rand.NewPCG(uint64(seed), 0x9e3779b97f4a7c15)), now: time.Now().UTC()}
	g.corpus = g.words(corpusSize)
	root := filepath.Join(dir, ".pi", "agent", "sessions")
	projects := max(1, n/25)
	for i := range n {
		cwd := fmt.Sprintf("/home/dev/src/project-%03d", g.r.IntN(projects))
		if err := g.session(root, cwd); err != nil {
			return fmt.Errorf("generate pi session %d: %w", i, err)
		}
	}
	return nil
}

type generator struct {
	r   *rand.Rand
	now time.Time
	// corpus is random words that text slices, which is much faster than
	// drawing every word.
	corpus string
}

// corpusSize is larger than the largest tool output generated.
const corpusSize = 1 << 20

// size draws a target file size: 75% under 20 kB, 20% up to 200 kB, 4% up
// to 1 MB, 1% 2-6 MB.
func (g *generator) size() int {
	switch p := g.r.IntN(100); {
	case p < 75:
		return 2<<10 + g.r.IntN(18<<10)
	case p < 95:
		return 20<<10 + g.r.IntN(180<<10)
	case p < 99:
		return 200<<10 + g.r.IntN(800<<10)
	default:
		return 2<<20 + g.r.IntN(4<<20)
	}
}

var words = strings.Fields(`the a function test file error build module package return value
	config server request handler parse read write update fix refactor add remove check
	import type struct interface method field index cache session process signal output`)

func (g *generator) words(n int) string {
	var b strings.Builder
	for b.Len() < n {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(words[g.r.IntN(len(words))])
	}
	return b.String()
}

// text returns about n bytes of words.
func (g *generator) text(n int) string {
	n = min(n, len(g.corpus)/2)
	off := g.r.IntN(len(g.corpus) - n)
	return strings.TrimSpace(g.corpus[off : off+n])
}

func (g *generator) shortID() string { return fmt.Sprintf("%08x", g.r.Uint32()) }

// uuidV7 builds a UUIDv7 for t from the generator's random stream.
func (g *generator) uuidV7(t time.Time) string {
	var u uuid.UUID
	binary.BigEndian.PutUint64(u[8:], g.r.Uint64())
	binary.BigEndian.PutUint16(u[6:], uint16(g.r.Uint32()))
	ms := uint64(t.UnixMilli())
	u[0], u[1], u[2], u[3], u[4], u[5] = byte(ms>>40), byte(ms>>32), byte(ms>>24), byte(ms>>16), byte(ms>>8), byte(ms)
	u[6] = 0x70 | u[6]&0x0f
	u[8] = 0x80 | u[8]&0x3f
	return u.String()
}

// providers are the models sessions are spread over.
var providers = [][2]string{
	{"anthropic", "claude-sonnet-4-5"}, {"openai", "gpt-5"}, {"google", "gemini-2.5-pro"}, {"fakeopenai", "fake-model"},
}

// Records in the field order Pi writes them (JSON.stringify keeps
// insertion order), so generated files look like real ones byte for byte.
type (
	genHeader struct {
		Type      string `json:"type"`
		Version   int    `json:"version"`
		ID        string `json:"id"`
		Timestamp string `json:"timestamp"`
		Cwd       string `json:"cwd"`
	}
	genEntry struct {
		Type          string  `json:"type"`
		ID            string  `json:"id"`
		ParentID      *string `json:"parentId"`
		Timestamp     string  `json:"timestamp"`
		Provider      string  `json:"provider,omitempty"`
		ModelID       string  `json:"modelId,omitempty"`
		ThinkingLevel string  `json:"thinkingLevel,omitempty"`
		FromID        string  `json:"fromId,omitempty"`
		Summary       string  `json:"summary,omitempty"`
		Message       any     `json:"message,omitempty"`
	}
	genText struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	genToolCall struct {
		Type      string `json:"type"`
		ID        string `json:"id"`
		Name      string `json:"name"`
		Arguments struct {
			Command string `json:"command"`
		} `json:"arguments"`
	}
	genUser struct {
		Role      string    `json:"role"`
		Content   []genText `json:"content"`
		Timestamp int64     `json:"timestamp"`
	}
	genCost struct {
		Input      float64 `json:"input"`
		Output     float64 `json:"output"`
		CacheRead  float64 `json:"cacheRead"`
		CacheWrite float64 `json:"cacheWrite"`
		Total      float64 `json:"total"`
	}
	genUsage struct {
		Input       int     `json:"input"`
		Output      int     `json:"output"`
		CacheRead   int     `json:"cacheRead"`
		CacheWrite  int     `json:"cacheWrite"`
		TotalTokens int     `json:"totalTokens"`
		Cost        genCost `json:"cost"`
	}
	genAssistant struct {
		Role         string   `json:"role"`
		Content      []any    `json:"content"`
		API          string   `json:"api"`
		Provider     string   `json:"provider"`
		Model        string   `json:"model"`
		Usage        genUsage `json:"usage"`
		StopReason   string   `json:"stopReason"`
		Timestamp    int64    `json:"timestamp"`
		ResponseID   string   `json:"responseId,omitempty"`
		ErrorMessage string   `json:"errorMessage,omitempty"`
	}
	genToolResult struct {
		Role       string    `json:"role"`
		ToolCallID string    `json:"toolCallId"`
		ToolName   string    `json:"toolName"`
		Content    []genText `json:"content"`
		IsError    bool      `json:"isError"`
		Timestamp  int64     `json:"timestamp"`
	}
)

func (g *generator) session(root, cwd string) error {
	created := g.now.Add(-time.Duration(g.r.Int64N(int64(60 * 24 * time.Hour)))).Truncate(time.Millisecond)
	target := g.size()
	id := g.uuidV7(created)
	ts := created.Format("2006-01-02T15:04:05.000Z")
	dir := filepath.Join(root, cwdSlug(cwd))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	path := filepath.Join(dir, strings.NewReplacer(":", "-", ".", "-").Replace(ts)+"_"+id+".jsonl")
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 256<<10)
	written := 0
	t := created
	var encErr error
	put := func(r any) {
		b, err := json.Marshal(r)
		if err != nil {
			encErr = err
			return
		}
		w.Write(b)
		w.WriteByte('\n')
		written += len(b) + 1
	}
	iso := func() string { return t.Format("2006-01-02T15:04:05.000Z") }
	tick := func(max time.Duration) {
		t = t.Add(time.Duration(1 + g.r.Int64N(int64(max)))).Truncate(time.Millisecond)
	}

	put(genHeader{"session", 3, id, ts, cwd})
	prov := providers[g.r.IntN(len(providers))]
	parent := g.shortID()
	put(genEntry{Type: "model_change", ID: parent, Timestamp: iso(), Provider: prov[0], ModelID: prov[1]})
	level := g.shortID()
	put(genEntry{Type: "thinking_level_change", ID: level, ParentID: &parent, Timestamp: iso(), ThinkingLevel: "off"})
	parent = level

	message := func(m any) string {
		id := g.shortID()
		p := parent
		put(genEntry{Type: "message", ID: id, ParentID: &p, Timestamp: iso(), Message: m})
		parent = id
		return id
	}
	usage := func(in, out int) genUsage {
		c := genCost{Input: float64(in) * 3e-6, Output: float64(out) * 15e-6}
		c.Total = c.Input + c.Output
		return genUsage{Input: in, Output: out, CacheRead: g.r.IntN(in + 1), TotalTokens: in + out, Cost: c}
	}
	assistant := func(content []any, stop, errMsg string, in, out int) string {
		tick(20 * time.Second)
		return message(genAssistant{Role: "assistant", Content: content, API: "openai-completions", Provider: prov[0], Model: prov[1],
			Usage: usage(in, out), StopReason: stop, Timestamp: t.UnixMilli(), ResponseID: "resp_" + g.shortID(), ErrorMessage: errMsg})
	}
	user := func(text string) {
		tick(10 * time.Minute)
		message(genUser{Role: "user", Content: []genText{{"text", text}}, Timestamp: t.UnixMilli()})
	}

	ending := g.r.IntN(100)
	context := 600
	var branchPoint string
	for turn := 0; ; turn++ {
		user(g.text(40 + g.r.IntN(400)))
		cut := false
		for step := 0; step < 1+g.r.IntN(6); step++ {
			var call genToolCall
			call.Type, call.ID, call.Name = "toolCall", "call_"+g.shortID(), "bash"
			call.Arguments.Command = "grep -rn " + words[g.r.IntN(len(words))] + " ."
			context += 200
			assistant([]any{call}, "toolUse", "", context, 30+g.r.IntN(200))
			if written >= target && ending >= 95 {
				cut = true // the agent was killed while the tool ran
				break
			}
			tick(30 * time.Second)
			out := g.text(200 + g.r.IntN(max(400, min(target/20, corpusSize/2))))
			context += len(out) / 4
			message(genToolResult{Role: "toolResult", ToolCallID: call.ID, ToolName: "bash", Content: []genText{{"text", out}}, Timestamp: t.UnixMilli()})
		}
		if cut {
			break
		}
		answer := assistant([]any{genText{"text", g.text(80 + g.r.IntN(1500))}}, "stop", "", context, 50+g.r.IntN(800))
		if turn == 0 {
			branchPoint = answer
		}
		if written >= target {
			break
		}
		if turn == 2 && g.r.IntN(20) == 0 {
			// Go back to the first answer with a summary of the abandoned
			// branch, as /tree does.
			id := g.shortID()
			tick(time.Minute)
			bp := branchPoint
			put(genEntry{Type: "branch_summary", ID: id, ParentID: &bp, Timestamp: iso(), FromID: parent, Summary: g.text(300)})
			parent = id
		}
	}
	switch {
	case ending >= 95:
	case ending >= 90:
		assistant([]any{}, "error", "529 overloaded_error", 0, 0)
	case ending >= 85:
		user(g.text(60))
		assistant([]any{genText{"text", g.text(40)}}, "aborted", "", context, 10)
	}
	if encErr != nil {
		f.Close()
		return encErr
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Chtimes(path, t, t)
}

// cwdSlug is Pi's session folder name for cwd: "--" around the path with
// its separators as '-'.
func cwdSlug(cwd string) string {
	return "--" + strings.ReplaceAll(strings.TrimPrefix(cwd, "/"), "/", "-") + "--"
}
