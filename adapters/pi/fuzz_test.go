package pi

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentctl/agentctl/adapters"
)

// seedLines adds every line of the checked-in sessions to f's corpus.
func seedLines(f *testing.F) [][]byte {
	var all [][]byte
	files, _ := filepath.Glob(filepath.Join("testdata", "sessions", "*.jsonl"))
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		all = append(all, b)
		for _, line := range bytes.Split(b, []byte("\n")) {
			f.Add(line)
		}
	}
	return all
}

// FuzzRecord: any line parses or is rejected, never panics, and what it
// yields for a transcript is well formed.
func FuzzRecord(f *testing.F) {
	seedLines(f)
	f.Add([]byte(`{"type":"message","message":{"role":"assistant","content":"x","usage":{"cost":1}}}`))
	f.Add([]byte(`{"type":"message","message":{"role":"toolResult","content":[{"type":"text"},7,null]}}`))
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

// FuzzSessionFile: any file content gives a session (or a warning), never a
// panic, and Transcript never fails on a file Discover could read.
func FuzzSessionFile(f *testing.F) {
	for _, b := range seedLines(f) {
		f.Add(b)
	}
	f.Add([]byte(robustHeader + "\n" + robustUser + "\n" + robustAnswer))
	f.Add([]byte(robustHeader + "\n" + robustAnswer[:50]))
	f.Fuzz(func(t *testing.T, content []byte) {
		home := t.TempDir()
		p := sessionPath(home)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, content, 0o644); err != nil {
			t.Fatal(err)
		}
		a := New(adapters.Env{Home: home})
		got, err := a.Discover(context.Background())
		if err != nil {
			t.Fatalf("Discover: %v", err)
		}
		if len(got) != 1 {
			t.Fatalf("got %d sessions from one file", len(got))
		}
		s := got[0]
		if s.NativeID == "" {
			t.Fatal("session without an id")
		}
		if (s.TokensIn == nil) != (s.TokensOut == nil) {
			t.Fatal("tokens in without tokens out")
		}
		if len(s.Warnings) == 0 {
			if _, err := a.Transcript(context.Background(), s.NativeID, 3); err != nil {
				t.Fatalf("Transcript of a readable session: %v", err)
			}
		}
		// Growing the file continues the sums from the cache, and the result
		// is the same as reading the grown file afresh.
		fh, _ := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
		fh.Write([]byte("\n" + robustAnswer + "\n"))
		fh.Close()
		warm, err := a.Discover(context.Background())
		if err != nil {
			t.Fatalf("Discover after growth: %v", err)
		}
		cold, err := New(adapters.Env{Home: home}).Discover(context.Background())
		if err != nil || len(cold) != 1 || len(warm) != 1 {
			t.Fatalf("Discover after growth: %v", err)
		}
		w, c := warm[0], cold[0]
		if fmt.Sprint(deref(w.TokensIn), deref(w.TokensOut), deref(w.CostUSD), w.LastMessage, w.Model) !=
			fmt.Sprint(deref(c.TokensIn), deref(c.TokensOut), deref(c.CostUSD), c.LastMessage, c.Model) {
			t.Fatalf("incremental read differs from a fresh one:\nwarm %+v\ncold %+v", w, c)
		}
	})
}

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}
