package codex

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/agentctl/agentctl/adapters"
)

// The facts kept in the cache folder serve a new adapter (a restarted
// service) the same sessions without reading an unchanged rollout; a
// rollout that grew is read again to the same facts a fresh read gives; a
// corrupt cache is ignored with a log line, and without one everything is
// read as before.
func TestFactsKeptAcrossRestarts(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	day := installFixtures(t, home)
	cacheDir := t.TempDir()
	var logged []string
	env := func(cache string) adapters.Env {
		return adapters.Env{Home: t.TempDir(), CacheDir: cache, Logf: func(f string, a ...any) { logged = append(logged, f) },
			Getenv: func(k string) string {
				if k == "CODEX_HOME" {
					return home
				}
				return ""
			}}
	}
	first := discoverByID(t, New(env(cacheDir)))
	if len(first) == 0 {
		t.Fatal("no sessions in the fixture")
	}
	restarted := New(env(cacheDir))
	if second := discoverByID(t, restarted); !reflect.DeepEqual(first, second) {
		t.Errorf("after a restart the sessions differ:\n%+v\n%+v", first, second)
	}
	if st := restarted.rollouts.Stats(); st.Misses != 0 {
		t.Errorf("after a restart %d rollouts were read again, want none", st.Misses)
	}

	// A rollout grows after the cache was written.
	matches, err := filepath.Glob(filepath.Join(day, "*"+idResumed+"*"))
	if err != nil || len(matches) != 1 {
		t.Fatalf("the resumed rollout: %v %v", matches, err)
	}
	f, err := os.OpenFile(matches[0], os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`{"timestamp":"2026-11-22T06:27:00.000Z","type":"event_msg","payload":{"type":"agent_message","message":"a late answer"}}` + "\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	grown := discoverByID(t, New(env(cacheDir)))[idResumed]
	fresh := discoverByID(t, New(env("")))[idResumed]
	if !reflect.DeepEqual(grown, fresh) || !grown.UpdatedAt.Equal(time.Date(2026, 11, 22, 6, 27, 0, 0, time.UTC)) {
		t.Errorf("a grown rollout after a restart:\n%+v\nwant, as a fresh read:\n%+v", grown, fresh)
	}

	if err := os.WriteFile(filepath.Join(cacheDir, "codex-facts.gob"), []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := discoverByID(t, New(env(cacheDir))); !reflect.DeepEqual(got[idResumed], fresh) || len(logged) != 1 {
		t.Errorf("with a corrupt cache: %+v, logged %q", got[idResumed], logged)
	}
	os.RemoveAll(cacheDir)
	if got := discoverByID(t, New(env(cacheDir))); len(got) != len(first) {
		t.Errorf("without the cache folder: %d sessions, want %d", len(got), len(first))
	}
}

// Every field but the read position survives the disk form; the test
// fails when a field is added to facts and not to it.
func TestFactsDiskFormKeepsEveryField(t *testing.T) {
	t.Parallel()
	x := facts{id: "i", cwd: "/w", model: "m", cliVersion: "1", originator: "o", firstPrompt: "p", weakPrompt: "w",
		created: time.Date(2026, 1, 2, 3, 4, 5, 6, time.FixedZone("", 3600)), lastTime: time.Date(2026, 1, 2, 3, 4, 5, 7, time.UTC),
		tokensIn: 1, tokensOut: 2, hasTokens: true, turn: turnAborted, turnError: "e", badLines: 3, skipped: 4, tailOnly: true,
		offset: 5, fingerprint: []byte{1}, limited: true, limitAt: time.Date(2026, 1, 2, 3, 4, 6, 0, time.UTC), windowsAt: time.Date(2026, 1, 2, 3, 4, 7, 0, time.UTC),
		windows: [2]usageWindow{{known: true, used: 99.5, minutes: 300, resetsAt: time.Unix(1795731357, 0).UTC()}, {known: true, used: 42}}}
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
	want.offset, want.fingerprint = 0, nil
	if !reflect.DeepEqual(y, want) {
		t.Errorf("read back:\n%+v\nwant\n%+v", y, want)
	}
	for n := range b {
		if err := new(facts).UnmarshalBinary(b[:n]); err == nil {
			t.Errorf("a record cut at %d bytes was accepted", n)
		}
	}
}
