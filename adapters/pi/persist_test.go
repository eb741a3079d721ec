package pi

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/agentctl/agentctl/adapters"
)

// The facts kept in the cache folder serve a new adapter (a restarted
// service) the same sessions without reading an unchanged file; a file
// that grew is read again to the same facts a fresh read gives; a corrupt
// cache is ignored with a log line, and without one everything is read as
// before.
func TestFactsKeptAcrossRestarts(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	p := putFixture(t, home, "resumed.jsonl", "/home/ada/proj", "2026-11-22T06-00-00-000Z_019a0000-0000-7000-8000-000000000001.jsonl")
	putFixture(t, home, "model-error.jsonl", "/home/ada/proj", "2026-11-22T06-30-40-056Z_01a201f3-1eb7-7513-ada7-a18cc61f81d6.jsonl")
	putFixture(t, home, "branched.jsonl", "/home/ada/other", "2026-11-20T10-00-00-000Z_01a1f000-0000-7000-8000-00000000b0b0.jsonl")
	if err := os.WriteFile(filepath.Join(filepath.Dir(p), "2026-11-22T07-00-00-000Z_01a20000-0000-7000-8000-0000000000ba.jsonl"), []byte("not a header\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	const id = "019a0000-0000-7000-8000-000000000001"
	cacheDir := t.TempDir()
	var logged []string
	env := func(cache string) adapters.Env {
		return adapters.Env{Home: home, CacheDir: cache, Getenv: func(string) string { return "" },
			Logf: func(f string, a ...any) { logged = append(logged, f) }}
	}
	discover := func(a *Adapter) map[string]adapters.NativeSession {
		t.Helper()
		ss, err := a.Discover(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]adapters.NativeSession{}
		for _, s := range ss {
			out[s.NativeID] = s
		}
		return out
	}
	first := discover(New(env(cacheDir)))
	if len(first) != 4 { // the unreadable one too
		t.Fatalf("%d sessions in the fixture, want 4", len(first))
	}
	restarted := New(env(cacheDir))
	if second := discover(restarted); !reflect.DeepEqual(first, second) {
		t.Errorf("after a restart the sessions differ:\n%+v\n%+v", first, second)
	}
	if st := restarted.files.Stats(); st.Misses != 0 {
		t.Errorf("after a restart %d files were read again, want none", st.Misses)
	}

	// A session grows after the cache was written.
	f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`{"type":"message","id":"late","parentId":"x","timestamp":"2026-11-22T06:59:00.000Z","message":{"role":"assistant","content":[{"type":"text","text":"a late answer"}],"provider":"p","model":"m","usage":{"input":10,"output":5,"cacheRead":0,"cacheWrite":0,"cost":{"total":0.5}},"stopReason":"stop"}}` + "\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	grown := discover(New(env(cacheDir)))[id]
	fresh := discover(New(env("")))[id]
	if !reflect.DeepEqual(grown, fresh) || *grown.TokensIn <= *first[id].TokensIn {
		t.Errorf("a grown session after a restart:\n%+v\nwant, as a fresh read:\n%+v", grown, fresh)
	}

	if err := os.WriteFile(filepath.Join(cacheDir, "pi-facts.gob"), []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := discover(New(env(cacheDir))); !reflect.DeepEqual(got[id], fresh) || len(logged) != 1 {
		t.Errorf("with a corrupt cache: %+v, logged %q", got[id], logged)
	}
	os.RemoveAll(cacheDir)
	if got := discover(New(env(cacheDir))); len(got) != len(first) {
		t.Errorf("without the cache folder: %d sessions, want %d", len(got), len(first))
	}
}

// Every field but where the sums stopped survives the disk form; the test
// fails when a field is added to facts and not to it.
func TestFactsDiskFormKeepsEveryField(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	x := facts{id: "i", cwd: "/w", created: at, mtime: at.Add(1), headerModel: "h", firstPrompt: "p", headModel: "m", bad: errNoHeader,
		summedTo: 9, fingerprint: []byte{1}, tokensIn: 1, tokensOut: 2, cost: 0.5, hasUsage: true, hasCost: true, sumsKnown: true, sumsPending: true,
		lastModel: "lm", lastRole: "r", lastStop: "s", lastError: "429 e", lastProvider: "pv", lastTime: at.Add(2), warnings: []string{"head: w", ""}}
	v := reflect.ValueOf(x)
	for i := range v.NumField() {
		if v.Field(i).IsZero() {
			t.Fatalf("set %s in this test", v.Type().Field(i).Name)
		}
	}
	b, err := x.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	var y facts
	if err := y.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	want := x
	want.summedTo, want.fingerprint = 0, nil
	if !reflect.DeepEqual(y, want) || !errors.Is(y.bad, errNoHeader) {
		t.Errorf("read back:\n%+v\nwant\n%+v", y, want)
	}
	for n := range b {
		if err := new(facts).UnmarshalBinary(b[:n]); err == nil {
			t.Errorf("a record cut at %d bytes was accepted", n)
		}
	}
}
