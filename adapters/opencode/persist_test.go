package opencode

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/agentctl/agentctl/adapters"
)

// What was read from a database is kept in the cache folder: a new adapter
// (a restarted service) answers from it without reading any session of an
// unchanged database, and of a changed one reads only the sessions that
// changed, to what a fresh read gives; a corrupt cache is ignored with a
// log line, and without one everything is read as before.
func TestDatabaseResultKeptAcrossRestarts(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	db := loadFixture(t, data)
	path := filepath.Join(data, "opencode", "opencode.db")
	cacheDir := t.TempDir()
	var logged []string
	adapter := func(cache string) *Adapter {
		return New(adapters.Env{Home: t.TempDir(), CacheDir: cache, Logf: func(f string, a ...any) { logged = append(logged, f) },
			Getenv: func(k string) string {
				if k == "XDG_DATA_HOME" {
					return data
				}
				return ""
			}})
	}
	first := discoverByID(t, adapter(cacheDir))
	if len(first) != 4 {
		t.Fatalf("%d sessions in the fixture, want 4", len(first))
	}
	restarted := adapter(cacheDir)
	if second := discoverByID(t, restarted); !reflect.DeepEqual(first, second) {
		t.Errorf("after a restart the sessions differ:\n%+v\n%+v", first, second)
	}
	if n := restarted.store(path).detailed; n != 0 {
		t.Errorf("after a restart %d sessions were read again, want none", n)
	}

	// One session's next step begins after the cache was written (cut
	// off: no process works on it).
	now := time.Now().UnixMilli()
	insertRow(t, db, "message", map[string]any{"id": "msg_ffff00000009AAAAAAAAAAAAAA", "session_id": idComplete, "time_created": now, "time_updated": now,
		"data": `{"role":"assistant","time":{"created":` + itoa(now) + `},"modelID":"m","providerID":"p"}`})
	insertRow(t, db, "part", map[string]any{"id": "prt_ffff00000009AAAAAAAAAAAAAA", "message_id": "msg_ffff00000009AAAAAAAAAAAAAA", "session_id": idComplete,
		"time_created": now, "time_updated": now, "data": `{"type":"text","text":"a late answer"}`})
	bumpEvents(t, db, idComplete, 2)
	changed := adapter(cacheDir)
	got := discoverByID(t, changed)
	fresh := discoverByID(t, adapter(""))
	if !reflect.DeepEqual(got, fresh) || got[idComplete].State != adapters.NativeAborted {
		t.Errorf("a changed database after a restart:\n%+v\nwant, as a fresh read:\n%+v", got, fresh)
	}
	if n := changed.store(path).detailed; n != 1 {
		t.Errorf("after a restart over a changed database %d sessions were read, want 1", n)
	}

	if err := os.WriteFile(filepath.Join(cacheDir, "opencode-databases.gob"), []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := discoverByID(t, adapter(cacheDir)); !reflect.DeepEqual(got, fresh) || len(logged) != 1 {
		t.Errorf("with a corrupt cache: %+v, logged %q", got, logged)
	}
	os.RemoveAll(cacheDir)
	if got := discoverByID(t, adapter(cacheDir)); !reflect.DeepEqual(got, fresh) {
		t.Errorf("without the cache folder: %+v", got)
	}
}

// Every field of a session survives the disk form; the test fails when a
// field is added to session and not to it.
func TestSnapshotDiskFormKeepsEveryField(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	x := session{id: "ses_1", parentID: "p", directory: "/w", model: "m", created: at, updated: at.Add(1), tokensIn: 1, tokensOut: 2,
		hasTokens: true, cost: 0.5, hasCost: true, firstPrompt: "fp",
		last: lastMessage{role: "assistant", completed: true, finish: "stop", errText: "e", errName: "n", errStatus: 429, provider: "pv", at: at}, path: "/db", warnings: []string{"w"}}
	for _, v := range []reflect.Value{reflect.ValueOf(x), reflect.ValueOf(x.last)} {
		for i := range v.NumField() {
			if v.Field(i).IsZero() {
				t.Fatalf("set %s in this test", v.Type().Field(i).Name)
			}
		}
	}
	snap := dbSnapshot{mark: 7, marked: true, sessions: map[string]*session{x.id: &x}, stamps: map[string]stamp{x.id: {updated: 3, seq: 4}}}
	snap.stamp[0].Path, snap.stamp[0].Size, snap.stamp[0].ModTime, snap.stamp[0].Dev, snap.stamp[0].Inode = "/db", 10, at, 1, 2
	b, err := snap.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	var y dbSnapshot
	if err := y.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(y, snap) {
		t.Errorf("read back:\n%+v\nwant\n%+v", y, snap)
	}
	for n := range b {
		if err := new(dbSnapshot).UnmarshalBinary(b[:n]); err == nil {
			t.Errorf("a record cut at %d bytes was accepted", n)
		}
	}
}
