package claude

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/agentctl/agentctl/adapters"
)

// The summaries kept in the cache folder serve a new adapter (a restarted
// service) the same sessions, without reading an unchanged transcript; a
// transcript that grew is read again, whole, to the same facts a fresh read
// gives; and without the cache file everything is read as before.
func TestSummariesKeptAcrossRestarts(t *testing.T) {
	t.Parallel()
	home := fixtureHome(t)
	cacheDir := t.TempDir()
	var logged []string
	env := adapters.Env{Home: home, Getenv: func(string) string { return "" }, CacheDir: cacheDir,
		Logf: func(f string, a ...any) { logged = append(logged, f) }}
	first := discover(t, New(env))
	if len(first) == 0 {
		t.Fatal("no sessions in the fixture")
	}
	restarted := New(env)
	second := discover(t, restarted)
	if !reflect.DeepEqual(first, second) {
		t.Errorf("after a restart the sessions differ:\n%+v\n%+v", first, second)
	}
	if st := restarted.summaries.Stats(); st.Misses != 0 {
		t.Errorf("after a restart %d transcripts were read again, want none", st.Misses)
	}

	// A transcript grows after the cache was written.
	path := first[resumedID].Path
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(assistantRec("m-late", "a late answer", "end_turn", 7, 3) + "\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	grown := discover(t, New(env))[resumedID]
	fresh := discover(t, newAdapter(home))[resumedID]
	if !reflect.DeepEqual(grown, fresh) || *grown.TokensIn != *first[resumedID].TokensIn+7 {
		t.Errorf("a grown transcript after a restart:\n%+v\nwant, as a fresh read:\n%+v", grown, fresh)
	}

	// Deleting the cache changes nothing but speed; a corrupt one is
	// ignored with a log line.
	if err := os.WriteFile(filepath.Join(cacheDir, "claude-summaries.gob"), []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := discover(t, New(env)); !reflect.DeepEqual(got[resumedID], fresh) || len(logged) != 1 {
		t.Errorf("with a corrupt cache: %+v, logged %q", got[resumedID], logged)
	}
	os.RemoveAll(cacheDir)
	if got := discover(t, New(env)); len(got) != len(first) {
		t.Errorf("without the cache folder: %d sessions, want %d", len(got), len(first))
	}
}
