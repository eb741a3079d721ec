package pi

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	pisynth "github.com/agentctl/agentctl/internal/synth/pi"
)

// The usage sums (facts.sum, the scanner that looks only at an assistant
// line's usage object) are those of a full decode of every record.

// fullSums totals the usage of every assistant message of a session file
// by decoding each record whole.
func fullSums(data []byte) (in, out int64, cost float64, hasCost bool) {
	for line := range bytes.Lines(data) {
		if !bytes.HasSuffix(line, []byte("\n")) {
			break // the scanner counts complete lines only
		}
		r, ok, _ := parseRecord(bytes.TrimSuffix(line, []byte("\n")))
		if !ok || r.Message == nil || r.Message.Role != "assistant" || r.Message.Usage == nil {
			continue
		}
		u := r.Message.Usage
		in += int64(u.Input + u.CacheRead + u.CacheWrite)
		out += int64(u.Output)
		if c, ok := u.costUSD(); ok {
			cost, hasCost = cost+c, true
		}
	}
	return in, out, cost, hasCost
}

// checkSums holds the scanner's sums over data to the full decode's.
func checkSums(t *testing.T, name string, data []byte) {
	t.Helper()
	var x facts
	if err := x.sum(bytes.NewReader(data), int64(len(data)), nil); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	in, out, cost, hasCost := fullSums(data)
	if x.tokensIn != in || x.tokensOut != out || x.hasCost != hasCost || math.Abs(x.cost-cost) > 1e-9*math.Max(1, math.Abs(cost)) {
		t.Errorf("%s: scanner %d in, %d out, cost %v (%v); full decode %d, %d, %v (%v)", name, x.tokensIn, x.tokensOut, x.cost, x.hasCost, in, out, cost, hasCost)
	}
}

func TestUsageScannerMatchesFullDecode(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	if err := pisynth.GenerateStore(home, 60, 21); err != nil {
		t.Fatal(err)
	}
	n := 0
	err := filepath.WalkDir(home, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".jsonl") {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		n++
		checkSums(t, path, data)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 60 {
		t.Fatalf("%d session files, want 60", n)
	}
}

// fuzzSession writes a session as Pi does, its texts, tool output and
// numbers from the fuzzer: whatever a message says, the scanner finds the
// usage of the assistant's alone.
func fuzzSession(prompt, answer, output string, in, outTokens, cacheRead int32, cost float64, costAsNumber bool) []byte {
	var b bytes.Buffer
	put := func(v any) {
		line, err := json.Marshal(v)
		if err != nil {
			return // a number JSON cannot say: no line
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	usage := map[string]any{"input": in, "output": outTokens, "cacheRead": cacheRead, "cacheWrite": 0, "totalTokens": int64(in) + int64(outTokens)}
	if costAsNumber {
		usage["cost"] = cost
	} else {
		usage["cost"] = map[string]any{"input": cost / 2, "output": cost / 2, "total": cost}
	}
	put(map[string]any{"type": "session", "version": 3, "id": "0199aaaa-0000-7000-8000-000000000001", "timestamp": "2026-01-02T03:04:05.000Z", "cwd": "/home/u/p"})
	put(map[string]any{"type": "message", "id": "a1", "message": map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": prompt}}}})
	put(map[string]any{"type": "message", "id": "a2", "parentId": "a1", "message": map[string]any{"role": "assistant",
		"content":  []any{map[string]any{"type": "toolCall", "id": "c1", "name": "bash", "arguments": map[string]any{"command": answer}}},
		"provider": "openai", "model": "gpt", "usage": usage, "stopReason": "toolUse"}})
	put(map[string]any{"type": "message", "id": "a3", "parentId": "a2", "message": map[string]any{"role": "toolResult", "toolCallId": "c1", "toolName": "bash",
		"content": []any{map[string]any{"type": "text", "text": output}}}})
	put(map[string]any{"type": "message", "id": "a4", "parentId": "a3", "message": map[string]any{"role": "assistant",
		"content": []any{map[string]any{"type": "text", "text": answer}}, "provider": "openai", "model": "gpt", "usage": usage, "stopReason": "stop"}})
	put(map[string]any{"type": "message", "id": "a5", "parentId": "a4", "message": map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": output}}}})
	return b.Bytes()
}

var scannerSeeds = []struct {
	prompt, answer, output string
}{
	{"fix the build", "done", "ok"},
	{`"role":"assistant","usage":{"input":9}`, `{"usage":{"input":7,"output":7}}`, `"usage": {"cost": 5}`},
	{"\"role\":\"assistant\"", "\\\"usage\\\":{\"input\":3}", "\u2028\u00e9\x00"},
	{strings.Repeat("x", 70<<10), "", `}{"usage":`},
}

func TestUsageScannerSeeds(t *testing.T) {
	t.Parallel()
	for i, s := range scannerSeeds {
		checkSums(t, "seed "+string(rune('0'+i)), fuzzSession(s.prompt, s.answer, s.output, 1200, 34, 56, 0.0123, i%2 == 0))
	}
}

func FuzzUsageScanner(f *testing.F) {
	for i, s := range scannerSeeds {
		f.Add(s.prompt, s.answer, s.output, int32(1200), int32(34), int32(56), 0.0123, i%2 == 0)
	}
	f.Fuzz(func(t *testing.T, prompt, answer, output string, in, out, cacheRead int32, cost float64, costAsNumber bool) {
		checkSums(t, "fuzzed", fuzzSession(prompt, answer, output, in, out, cacheRead, cost, costAsNumber))
	})
}
