package pi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentctl/agentctl/adapters/storeio"
	"github.com/agentctl/agentctl/adapters/storeio/storeiotest"
)

// seedLines returns the checked-in sessions and, with addLines, adds each of
// their lines to f's corpus.
func seedLines(f *testing.F, addLines bool) [][]byte {
	var all [][]byte
	files, _ := filepath.Glob(filepath.Join("testdata", "sessions", "*.jsonl"))
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		all = append(all, b)
		for _, line := range bytes.Split(b, []byte("\n")) {
			if addLines {
				f.Add(line)
			}
		}
	}
	return all
}

// The fuzz targets run with, for example:
//
//	go test -run '^$' -fuzz '^FuzzSessionGrowth$' -fuzztime 90s -fuzzminimizetime 5s ./adapters/pi
//
// (the default minimisation budget of 60 s per new input otherwise eats
// most of a short run).

// FuzzRecord: any line parses or is rejected, never panics, and what it
// yields for a transcript is well formed.
func FuzzRecord(f *testing.F) {
	seedLines(f, true)
	f.Add([]byte(`{"type":"message","message":{"role":"assistant","content":"x","usage":{"cost":1}}}`))
	f.Add([]byte(`{"type":"message","message":{"role":"toolResult","content":[{"type":"text"},7,null]}}`))
	f.Add([]byte(piLimitRecord))
	f.Fuzz(func(t *testing.T, line []byte) {
		r, ok, _ := parseRecord(line)
		if !ok {
			return
		}
		for _, m := range messagesOf(r) {
			if m.Role != "user" && m.Role != "assistant" && m.Role != "tool" {
				t.Fatalf("message role %q", m.Role)
			}
		}
		if r.Message != nil {
			r.Message.Usage.costUSD()
			_ = textOf(r.Message.Content)
		}
	})
}

// FuzzSessionGrowth: any file content gives facts (or a reason it is not a
// session) without a panic or a stall; growing the file and reading it
// incrementally gives the same facts as reading it afresh; Transcript never
// fails on a file that has a header.
func FuzzSessionGrowth(f *testing.F) {
	for _, b := range seedLines(f, false) {
		f.Add(b, []byte(robustAnswer))
	}
	f.Add([]byte(robustHeader+"\n"+robustUser+"\n"+robustAnswer), []byte("\n"))
	f.Add([]byte(robustHeader+"\n"+robustAnswer[:50]), []byte(robustAnswer[50:]+"\n"))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, content, more []byte) {
		p := filepath.Join(dir, "s.jsonl")
		if err := os.WriteFile(p, content, 0o644); err != nil {
			t.Fatal(err)
		}
		// The reads run on their own goroutine so a stall is reported as a
		// failure of this input rather than hanging the fuzzer.
		errc := make(chan error, 1)
		go func() { errc <- growAndCompare(p, more) }()
		select {
		case err := <-errc:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("reading a %d-byte session stalled", len(content))
		}
	})
}

func growAndCompare(p string, more []byte) error {
	cache := storeio.NewFileCache[*facts](4)
	x, _, err := cache.Get(p, readFacts)
	if err != nil {
		return fmt.Errorf("read: %w", err)
	}
	if x.bad == nil {
		if x.id == "" {
			return errors.New("a session without an id")
		}
		if _, err := readTranscript(context.Background(), p, 3); err != nil {
			return fmt.Errorf("Transcript of a readable session: %w", err)
		}
	}
	fh, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	fh.Write(more)
	fh.Close()
	warm, _, err := cache.Get(p, readFacts)
	if err != nil {
		return fmt.Errorf("read grown: %w", err)
	}
	cold, _, err := storeio.NewFileCache[*facts](4).Get(p, readFacts)
	if err != nil {
		return fmt.Errorf("read grown afresh: %w", err)
	}
	if summary(warm) != summary(cold) {
		return fmt.Errorf("incremental read differs from a fresh one:\nwarm %s\ncold %s", summary(warm), summary(cold))
	}
	return nil
}

func summary(x *facts) string {
	if x.bad != nil {
		return "bad: " + x.bad.Error()
	}
	return fmt.Sprint(x.id, x.sumsKnown, x.hasUsage, x.tokensIn, x.tokensOut, x.hasCost, x.cost, x.lastModel, x.lastRole, x.lastStop)
}

// FuzzFactsDiskForm: any bytes in the cache file are rejected or read to
// facts that read back to the same record (times compare as instants, so
// the bytes are compared).
func FuzzFactsDiskForm(f *testing.F) {
	storeiotest.FuzzDiskForm(f, &facts{id: "i", cwd: "/w", firstPrompt: "p", tokensIn: 9, cost: 0.25, hasUsage: true, warnings: []string{"head: w"},
		lastRole: roleAssistant, lastStop: stopError, lastError: "429 limit", lastProvider: "fakeopenai"})
}
