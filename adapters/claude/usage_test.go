package claude

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/adapters"
	claudesynth "github.com/agentctl/agentctl/internal/synth/claude"
)

// recordKeys and messageKeys name every field of record and message: a
// field the scanner did not keep would decode where the full read fails.
func TestRecordKeys(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		v    any
		keys []string
	}{{record{}, recordKeys}, {message{}, messageKeys}} {
		var tags []string
		rt := reflect.TypeOf(tc.v)
		for i := range rt.NumField() {
			tag, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
			tags = append(tags, tag)
		}
		if got, want := slices.Sorted(slices.Values(tc.keys)), slices.Sorted(slices.Values(tags)); !slices.Equal(got, want) {
			t.Errorf("%T: keys %q, fields %q", tc.v, got, want)
		}
	}
}

// totalsOf is what a transcript's totals are by a full read (every line
// decoded and applied) and by the usage scanner.
func totalsOf(t *testing.T, data []byte) (full, scanned summary) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "s.jsonl")
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sr := summaryReader{ctx: context.Background()}
	if err := sr.scan(&full, f, 0, int64(len(data)), true); err != nil {
		t.Fatal(err)
	}
	scanned.LongLines = -1 // the scanner's count replaces the head and tail's
	if err := sr.totals(&scanned, f, full.Offset); err != nil {
		t.Fatal(err)
	}
	return full, scanned
}

// sameTotals fails when the scanner's totals are not the full read's.
func sameTotals(t *testing.T, name string, full, scanned summary) {
	t.Helper()
	type totals struct {
		HaveCost                                               bool
		CostUSD                                                float64
		CostIn, CostOut, UsageIn, UsageOut, CarriedIn, CarrOut int64
		LastMsg                                                string
		LastIn, LastOut                                        int64
		Since                                                  []usageAt
		Complete                                               bool
		Bad, Long                                              int
	}
	of := func(s summary) totals {
		return totals{s.HaveCost, s.CostUSD, s.CostIn, s.CostOut, s.UsageIn, s.UsageOut, s.CarriedIn, s.CarriedOut, s.lastUsageMsg, s.lastMsgIn, s.lastMsgOut, slices.Clip(s.sinceCost), s.Complete, s.BadLines, s.LongLines}
	}
	f, s := of(full), of(scanned)
	if len(f.Since) == 0 {
		f.Since = nil
	}
	if len(s.Since) == 0 {
		s.Since = nil
	}
	if !reflect.DeepEqual(f, s) {
		t.Fatalf("%s: the scanner's totals are not the full read's:\nfull    %+v\nscanner %+v", name, f, s)
	}
	fi, fo := full.tokens()
	si, so := scanned.tokens()
	if fmt.Sprint(val(fi), val(fo), val(full.cost())) != fmt.Sprint(val(si), val(so), val(scanned.cost())) {
		t.Fatalf("%s: tokens %v/%v cost %v, the full read's %v/%v %v", name, val(si), val(so), val(scanned.cost()), val(fi), val(fo), val(full.cost()))
	}
}

// val is *p, or nil.
func val[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

// The usage scanner's totals are a full read's, to the token, over
// transcripts as Claude Code 2.1 writes them (generated: tool results,
// request records, usage on every assistant message, running sessions
// without their last cost-state), and without their cost-states (an older
// release), where the totals are the usage summed.
func TestUsageScanner(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	if err := claudesynth.GenerateStore(home, 40, 7); err != nil {
		t.Fatal(err)
	}
	paths, _ := filepath.Glob(filepath.Join(home, ".claude", "projects", "*", "*.jsonl"))
	if len(paths) != 40 {
		t.Fatalf("%d transcripts generated", len(paths))
	}
	summed := 0
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		full, scanned := totalsOf(t, data)
		sameTotals(t, filepath.Base(p), full, scanned)
		// Without cost-states: every assistant message's usage.
		var kept [][]byte
		for _, l := range bytes.SplitAfter(data, []byte{'\n'}) {
			if !bytes.HasPrefix(l, []byte(`{"type":"cost-state"`)) {
				kept = append(kept, l)
			}
		}
		full, scanned = totalsOf(t, bytes.Join(kept, nil))
		sameTotals(t, filepath.Base(p)+" without cost-states", full, scanned)
		if full.UsageIn > 0 {
			summed++
		}
	}
	if summed == 0 {
		t.Fatal("no transcript had usage to sum")
	}
}

// usageSeeds are lines that test the scanner's reading of a record as the
// decoder reads it: keys in any case, escaped or repeated, a type given
// twice, sidechains, synthetic messages, a message's records repeated,
// text that looks like a usage, lines that are not JSON.
var usageSeeds = []string{
	lines(userRec("a"), assistantRec("m1", "x", "end_turn", 1, 2), costRec(0.5, 3, 4), assistantRec("m1", "y", "tool_use", 5, 6)),
	lines(assistantRec("", "x", "", 1, 1), assistantRec("", "y", "", 1, 1), userRec("[Request interrupted by user]")),
	"{\"messAge\":{\"id\":\"m1\",\"usAge\":{}},\"tYpe\":\"assistant\"}\n{\"messAge\":{\"id\":\"m1\",\"usAge\":{\"output_tokens\":1}},\"tYpe\":\"assistant\"}\n",
	`{"type":"user","message":{"content":"x"},"type":"assistant","message":{"id":"m","model":"x","usage":{"input_tokens":7}}}` + "\n",
	`{"type":"assistant","message":{"id":"m","usage":{"input_tokens":7}},"message":{"model":"<synthetic>"}}` + "\n",
	`{"type":"assistant","isSidechain":true,"message":{"id":"m","usage":{"input_tokens":7}}}` + "\n",
	`{"typ\u0065":"assistant","message":{"id":"m","usage":{"input_tokens":7}}}` + "\n",
	`{"type":"assistant","message":{"id":"m","\u0075sage":{"input_tokens":7}}}` + "\n",
	`{"type":"assistant","me` + "\u017f" + `sage":{"id":"m","usage":{"input_tokens":7}}}` + "\n",
	`{"type":"assistant","message":{"id":"m","content":[{"type":"text","text":"\"usage\":{\"input_tokens\":99}"}],"usage":{"input_tokens":7}}}` + "\n",
	`{"type":"assistant","message":{"id":"m","content":[1,],"usage":{"input_tokens":7}}}` + "\n",
	`{"type":"assistant","message":{"id":"m","usage":{"input_tokens":7.5}}}` + "\n",
	`{"type":"assistant","cwd":5,"message":{"id":"m","usage":{"input_tokens":7}}}` + "\n",
	`{"type":"assistant","timestamp":"yesterday","message":{"id":"m","usage":{"input_tokens":7}}}` + "\n",
	`{"type":"assistant","message":"m"}` + "\n" + `{"type":"assistant","message":null}` + "\n",
	`{"type":"assistant","message":{"id":"m","usage":{"input_tokens":7}}} trailing` + "\n",
	`{"type":"cost-state","totalCostUSD":1.5,"startTime":5,"modelUsage":{"m":{"inputTokens":3,"outputTokens":4}}}` + "\n",
	killedThenContinued(0),
}

// FuzzUsageScanner: on any transcript the usage scanner's totals are a
// full read's.
func FuzzUsageScanner(f *testing.F) {
	for _, s := range usageSeeds {
		f.Add([]byte(s))
	}
	for _, b := range fixtureFiles(f) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		full, scanned := totalsOf(t, data)
		sameTotals(t, "fuzzed", full, scanned)
	})
}

// The seeds alone, in every run of the tests.
func TestUsageScannerSeeds(t *testing.T) {
	t.Parallel()
	for i, s := range usageSeeds {
		full, scanned := totalsOf(t, []byte(s))
		sameTotals(t, fmt.Sprintf("seed %d", i), full, scanned)
	}
}

// BenchmarkTotals compares the usage scanner with a full read over the
// generated transcripts of a store of 100 sessions.
//
//	go test ./adapters/claude -run '^$' -bench Totals
func BenchmarkTotals(b *testing.B) {
	home := benchStore(b, 100)
	paths, _ := filepath.Glob(filepath.Join(home, ".claude", "projects", "*", "*.jsonl"))
	var files []*os.File
	var size int64
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		fi, _ := f.Stat()
		size += fi.Size()
		files = append(files, f)
	}
	sr := summaryReader{ctx: context.Background()}
	for _, bc := range []struct {
		name string
		read func(f *os.File, size int64) error
	}{
		{"full", func(f *os.File, size int64) error { var s summary; return sr.scan(&s, f, 0, size, true) }},
		{"scanner", func(f *os.File, size int64) error { var s summary; return sr.totals(&s, f, size) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(size)
			for b.Loop() {
				for _, f := range files {
					fi, _ := f.Stat()
					if err := bc.read(f, fi.Size()); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

// A transcript too large for the usage scanner (sparse, 2 GB) whose last
// cost-state lies further back than its row: the tail goes on to that
// cost-state for the totals, as before there was a scanner.
func TestHugeTranscriptCostBeyondTheRow(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	id := "0b6c1b1e-0000-4000-8000-000000000005"
	p := writeTranscript(t, home, "/w/p", id, lines(userRec("start")))
	var tail []string
	tail = append(tail, costRec(1.5, 1000, 200))
	for i := range 60 { // about 60 KB of answers after it, the last turn's
		tail = append(tail, assistantRec(fmt.Sprintf("m%d", i), strings.Repeat("x", 1000), "tool_use", 1, 1))
	}
	tail = append(tail, assistantRec("mlast", "the end", "end_turn", 1, 1))
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt([]byte("\n"+lines(tail...)), 2<<30); err != nil {
		t.Fatal(err)
	}
	s := discover(t, newAdapter(home))[id]
	if s.State != adapters.NativeDone || s.TokensIn == nil || *s.TokensIn != 1000+61 || s.CostUSD == nil || *s.CostUSD != 1.5 {
		t.Fatalf("state %q tokens %v cost %v; want done, %d, 1.5", s.State, val(s.TokensIn), val(s.CostUSD), 1000+61)
	}
}
