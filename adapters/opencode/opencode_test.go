package opencode

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	opencodesynth "github.com/agentctl/agentctl/internal/synth/opencode"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/adapters"
	"github.com/agentctl/agentctl/adapters/storeio"
	"github.com/agentctl/agentctl/adapters/storeio/storeiotest"
)

// Sessions in testdata/opencode-1.18.33.json: rows OpenCode 1.18.33 wrote
// against the fake model server.
const (
	idComplete = "ses_dfe1066d5ffejcMUUuaaX9RN6g" // `run -- -v "a  b" q"x`
	idFailed   = "ses_dfe0f0730ffeBbwnE6jwye1mTi" // the model answered 500
	idResumed  = "ses_dfe0de242ffeTszJpbP2oFRrE1" // `please sleep 15`, then resumed
	idKilled   = "ses_dfdf76580ffeZaBIJ1l3mA2koQ" // SIGTERM during the sleep tool
	// Sessions of the legacy JSON tree in testdata/legacy.
	idLegacyDone   = "ses_7a1b2c3d4ffeAbCdEfGhIjKlMn"
	idLegacyFailed = "ses_7a1b2c3d3ffeZyXwVuTsRqPoNm"
)

// testData makes an XDG_DATA_HOME and an adapter reading it.
func testData(t *testing.T) (string, *Adapter) {
	t.Helper()
	return testDataWatched(t, nil)
}

// testDataWatched is testData with the adapter told of changes by watch.
func testDataWatched(t *testing.T, watch adapters.FolderWatch) (string, *Adapter) {
	t.Helper()
	data := t.TempDir()
	a := New(adapters.Env{Home: t.TempDir(), Folders: watch, Getenv: func(k string) string {
		if k == "XDG_DATA_HOME" {
			return data
		}
		return ""
	}})
	return data, a
}

// watchers are the ways an adapter learns of changes: stat alone, and a
// folder watch where the system has one.
func watchers(t *testing.T) map[string]adapters.FolderWatch {
	out := map[string]adapters.FolderWatch{"stat": nil}
	w, err := storeio.NewWatcher()
	if err != nil {
		t.Logf("no folder watch: %v", err)
		return out
	}
	t.Cleanup(func() { w.Close() })
	out["watched"] = w
	return out
}

// loadFixture writes the real rows into a new opencode.db under data and
// returns it open for writing.
func loadFixture(t *testing.T, data string) *sql.DB {
	t.Helper()
	db, err := opencodesynth.CreateDB(filepath.Join(data, "opencode", "opencode.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	b, err := os.ReadFile("testdata/opencode-1.18.33.json")
	if err != nil {
		t.Fatal(err)
	}
	var tables map[string][]map[string]any
	if err := json.Unmarshal(b, &tables); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`INSERT INTO project (id, worktree, time_created, time_updated, sandboxes) VALUES ('global', '/', 0, 0, '[]')`); err != nil {
		t.Fatal(err)
	}
	for _, table := range []string{"session", "message", "part", "event_sequence"} {
		for _, row := range tables[table] {
			insertRow(t, db, table, row)
		}
	}
	return db
}

func insertRow(t *testing.T, db *sql.DB, table string, row map[string]any) {
	t.Helper()
	cols := make([]string, 0, len(row))
	for c := range row {
		cols = append(cols, c)
	}
	sort.Strings(cols)
	args := make([]any, len(cols))
	for i, c := range cols {
		args[i] = row[c]
		if f, ok := row[c].(float64); ok && f == float64(int64(f)) {
			args[i] = int64(f)
		}
	}
	q := "INSERT INTO " + table + " (" + strings.Join(cols, ", ") + ") VALUES (?" + strings.Repeat(", ?", len(cols)-1) + ")"
	if _, err := db.Exec(q, args...); err != nil {
		t.Fatal(err)
	}
}

// installLegacy copies the legacy JSON tree under data.
func installLegacy(t *testing.T, data string) {
	t.Helper()
	src := filepath.Join("testdata", "legacy", "storage")
	err := filepath.Walk(src, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		dst := filepath.Join(data, "opencode", "storage", rel)
		if fi.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func discoverByID(t *testing.T, a *Adapter) map[string]adapters.NativeSession {
	t.Helper()
	ss, err := a.Discover(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]adapters.NativeSession{}
	for _, s := range ss {
		if _, dup := out[s.NativeID]; dup {
			t.Errorf("session %s reported twice", s.NativeID)
		}
		out[s.NativeID] = s
	}
	return out
}

func i64(p *int64) int64 {
	if p == nil {
		return -1
	}
	return *p
}

func TestDiscoverDatabaseAndLegacy(t *testing.T) {
	t.Parallel()
	data, a := testData(t)
	loadFixture(t, data)
	installLegacy(t, data)
	got := discoverByID(t, a)
	tests := []struct {
		id, state, prompt, model, cwd string
		in, out                       int64
		warn                          string
	}{
		{idComplete, "done", `-v "a  b" q"x`, "fake/fake-model", "/home/user/proj", 108, 10, ""},
		{idFailed, "failed", "please error 500\n", "fake/fake-model", "/home/user/proj", 0, 0, "fake error 500"},
		{idResumed, "done", "please sleep 15", "fake/fake-model", "/home/user/proj", -2, -2, ""},
		{idKilled, "aborted", "please sleep 45", "fake/fake-model", "/home/user/proj", -2, -2, ""},
		{idLegacyDone, "done", "the config parser rejects empty sections; fix it", "anthropic/claude-sonnet-4-20250514", "/home/user/old-project", 2310, 145, ""},
		{idLegacyFailed, "failed", "upgrade all dependencies to their latest minor versions", "openai/gpt-4.1", "/home/user/old-project", 0, 0, "Rate limit reached"},
	}
	if len(got) != len(tests) {
		t.Errorf("discovered %d sessions, want %d (child sessions left out)", len(got), len(tests))
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			s, ok := got[tt.id]
			if !ok {
				t.Fatal("not discovered")
			}
			if s.Adapter != "opencode" || string(s.State) != tt.state || s.FirstPrompt != tt.prompt || s.Model != tt.model || s.Cwd != tt.cwd {
				t.Errorf("got state=%q prompt=%q model=%q cwd=%q", s.State, s.FirstPrompt, s.Model, s.Cwd)
			}
			if tt.in != -2 && (i64(s.TokensIn) != tt.in || i64(s.TokensOut) != tt.out) {
				t.Errorf("tokens = %d/%d, want %d/%d", i64(s.TokensIn), i64(s.TokensOut), tt.in, tt.out)
			}
			if s.TokensIn == nil || s.CostUSD == nil {
				t.Error("tokens or cost unknown")
			}
			if s.CreatedAt.IsZero() || s.UpdatedAt.Before(s.CreatedAt) {
				t.Errorf("created %s updated %s", s.CreatedAt, s.UpdatedAt)
			}
			joined := strings.Join(s.Warnings, "; ")
			if (tt.warn == "") != (joined == "") || !strings.Contains(joined, tt.warn) {
				t.Errorf("warnings = %q, want %q", joined, tt.warn)
			}
		})
	}
}

func TestDatabaseChangesAreSeen(t *testing.T) {
	t.Parallel()
	for name, watch := range watchers(t) {
		t.Run(name, func(t *testing.T) { testDatabaseChangesAreSeen(t, watch) })
	}
}

func testDatabaseChangesAreSeen(t *testing.T, watch adapters.FolderWatch) {
	data, a := testDataWatched(t, watch)
	db := loadFixture(t, data)
	if s := discoverByID(t, a)[idComplete]; s.State != adapters.NativeDone {
		t.Fatalf("state %q", s.State)
	}
	// A resume: a user message and an assistant step still running. Only
	// the event sequence moves; the session row is not touched.
	now := time.Now().UnixMilli()
	insertRow(t, db, "message", map[string]any{"id": "msg_ffff00000001AAAAAAAAAAAAAA", "session_id": idComplete, "time_created": now, "time_updated": now,
		"data": `{"role":"user","time":{"created":` + itoa(now) + `}}`})
	insertRow(t, db, "part", map[string]any{"id": "prt_ffff00000001AAAAAAAAAAAAAA", "message_id": "msg_ffff00000001AAAAAAAAAAAAAA", "session_id": idComplete,
		"time_created": now, "time_updated": now, "data": `{"type":"text","text":"and again"}`})
	insertRow(t, db, "message", map[string]any{"id": "msg_ffff00000002AAAAAAAAAAAAAA", "session_id": idComplete, "time_created": now + 1, "time_updated": now + 1,
		"data": `{"role":"assistant","time":{"created":` + itoa(now+1) + `},"modelID":"other","providerID":"fake"}`})
	bumpEvents(t, db, idComplete, 3)
	s := discoverByID(t, a)[idComplete]
	if s.State != adapters.NativeAborted || s.FirstPrompt != `-v "a  b" q"x` {
		t.Errorf("mid-turn without a process (cut off): state=%q prompt=%q", s.State, s.FirstPrompt)
	}
	// The step completes with an answer.
	insertRow(t, db, "part", map[string]any{"id": "prt_ffff00000002AAAAAAAAAAAAAA", "message_id": "msg_ffff00000002AAAAAAAAAAAAAA", "session_id": idComplete,
		"time_created": now + 2, "time_updated": now + 2, "data": `{"type":"text","text":"again done"}`})
	if _, err := db.Exec(`UPDATE message SET data = json_set(data, '$.time.completed', ?, '$.finish', 'stop') WHERE id = 'msg_ffff00000002AAAAAAAAAAAAAA'`, now+3); err != nil {
		t.Fatal(err)
	}
	bumpEvents(t, db, idComplete, 2)
	s = discoverByID(t, a)[idComplete]
	if s.State != adapters.NativeDone {
		t.Errorf("after the answer: state=%q", s.State)
	}
	// A session removed from the database is gone from the list.
	if _, err := db.Exec("DELETE FROM session WHERE id = ?", idFailed); err != nil {
		t.Fatal(err)
	}
	if _, ok := discoverByID(t, a)[idFailed]; ok {
		t.Error("a deleted session is still listed")
	}
	if watch == nil {
		return
	}
	// Reading the database is not a change: with nothing written since,
	// the next Discover is answered without a stat.
	discoverByID(t, a)
	path := filepath.Join(data, "opencode", "opencode.db")
	d := a.store(path)
	tok, ok := watch.Token(filepath.Dir(path))
	if !ok || !d.watched || d.token != tok {
		t.Errorf("after a read the token moved or the folder is not watched: token %d (ok %v), read under %d (watched %v)", tok, ok, d.token, d.watched)
	}
}

// bumpEvents appends n events for a session, as OpenCode does with every
// message and part it writes.
func bumpEvents(t *testing.T, db *sql.DB, id string, n int) {
	t.Helper()
	for range n {
		if _, err := db.Exec("UPDATE event_sequence SET seq = seq + 1 WHERE aggregate_id = ?", id); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(`INSERT INTO event (id, aggregate_id, seq, type, data)
			SELECT 'evt_' || hex(randomblob(8)), aggregate_id, seq, 'message.part.updated.1', '{}' FROM event_sequence WHERE aggregate_id = ?`, id); err != nil {
			t.Fatal(err)
		}
	}
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

func TestUnchangedDatabaseIsNotRead(t *testing.T) {
	t.Parallel()
	data, a := testData(t)
	loadFixture(t, data)
	discoverByID(t, a)
	// Make the database unreadable without changing its stat: a read would
	// fail, so a successful Discover proves it used the cache.
	path := filepath.Join(data, "opencode", "opencode.db")
	if err := os.Chmod(path, 0); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(path, 0o644)
	if os.Getuid() == 0 {
		// root reads anything: check the stat path through the stamps.
		st, _ := storeio.SQLiteStamp(path)
		if !st[0].Same(a.store(path).stamp[0]) {
			t.Skip("chmod changed the stat")
		}
	}
	if got := discoverByID(t, a); len(got) != 4 {
		t.Errorf("%d sessions from the cache", len(got))
	}
}

func TestLockedDatabaseIsAnErrorNotAStall(t *testing.T) {
	data, a := testData(t)
	path := filepath.Join(data, "opencode", "opencode.db")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	// A rollback-journal database under an exclusive lock blocks readers
	// (OpenCode uses WAL, where readers are never blocked; this is the
	// worst case).
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(delete)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(opencodesynth.SchemaDDL); err != nil {
		t.Fatal(err)
	}
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(context.Background(), "BEGIN EXCLUSIVE"); err != nil {
		t.Fatal(err)
	}
	defer conn.ExecContext(context.Background(), "ROLLBACK")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = a.Discover(ctx)
	if err == nil || !storeio.IsSQLiteBusy(err) {
		t.Errorf("discover on a locked database: %v", err)
	}
	if ctx.Err() != nil {
		t.Error("discover waited for the lock")
	}
}

func TestGarbageAndOddStores(t *testing.T) {
	t.Parallel()
	t.Run("not a database", func(t *testing.T) {
		data, a := testData(t)
		path := filepath.Join(data, "opencode", "opencode.db")
		os.MkdirAll(filepath.Dir(path), 0o755)
		os.WriteFile(path, []byte("\x00\xffgarbage, not SQLite"), 0o644)
		if _, err := a.Discover(context.Background()); err == nil {
			t.Error("no error for a garbage database")
		}
	})
	t.Run("missing store", func(t *testing.T) {
		_, a := testData(t)
		ss, err := a.Discover(context.Background())
		if err != nil || len(ss) != 0 {
			t.Errorf("%d sessions, %v", len(ss), err)
		}
	})
	t.Run("odd rows", func(t *testing.T) {
		data, a := testData(t)
		db, err := opencodesynth.CreateDB(filepath.Join(data, "opencode", "opencode.db"))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		const id = "ses_0000000000ffOddRowsXxxxxxxx"
		insertRow(t, db, "session", map[string]any{"id": id, "project_id": "global", "slug": "x", "directory": "/d", "title": "t", "version": "1",
			"model": "not json", "time_created": "yesterday", "time_updated": int64(5), "tokens_input": "many"})
		for i, data := range []string{"not json", `{"role":["x"]}`, `[1,2]`, strings.Repeat("[", 20000), `{"role":"assistant","time":{"created":"x","completed":1},"finish":"stop","error":7}`} {
			insertRow(t, db, "message", map[string]any{"id": "msg_" + itoa(int64(i)), "session_id": id, "time_created": int64(i), "time_updated": int64(i), "data": data})
			insertRow(t, db, "part", map[string]any{"id": "prt_" + itoa(int64(i)), "message_id": "msg_" + itoa(int64(i)), "session_id": id, "time_created": int64(i), "time_updated": int64(i), "data": data})
		}
		got := discoverByID(t, a)
		s, ok := got[id]
		if !ok {
			t.Fatalf("the odd session is missing: %v", got)
		}
		if s.State != adapters.NativeFailed || s.Model != "" {
			t.Errorf("state=%q model=%q", s.State, s.Model)
		}
		if _, err := a.Transcript(context.Background(), id, 0); err != nil {
			t.Error(err)
		}
	})
}

func TestTranscript(t *testing.T) {
	t.Parallel()
	data, a := testData(t)
	loadFixture(t, data)
	installLegacy(t, data)
	ctx := context.Background()
	all, err := a.Transcript(ctx, idResumed, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range all {
		got = append(got, m.Role+":"+strings.SplitN(m.Text, "\n", 2)[0])
		if m.Time.IsZero() {
			t.Errorf("no time: %+v", m)
		}
	}
	if len(got) < 6 || got[0] != "user:please sleep 15" || got[1] != "tool:bash: sleep 15" || got[len(got)-1] != "assistant:slept 10 seconds (turn 42)" {
		t.Errorf("transcript: %q", got)
	}
	last, err := a.Transcript(ctx, idResumed, 2)
	if err != nil || len(last) != 2 || last[1].Text != "slept 10 seconds (turn 42)" {
		t.Errorf("last 2: %+v %v", last, err)
	}
	failed, err := a.Transcript(ctx, idFailed, 0)
	if err != nil || len(failed) != 2 || failed[1].Text != "[error] fake error 500" {
		t.Errorf("failed: %+v %v", failed, err)
	}
	legacy, err := a.Transcript(ctx, idLegacyDone, 0)
	if err != nil || len(legacy) != 3 || legacy[1].Role != "tool" || !strings.HasPrefix(legacy[1].Text, "bash: go test ./config/...\nok") {
		t.Errorf("legacy: %+v %v", legacy, err)
	}
	if _, err := a.Transcript(ctx, "ses_dfe0", 1); err == nil || !strings.Contains(err.Error(), "ambiguous") {
		t.Errorf("ambiguous prefix: %v", err)
	}
	if _, err := a.Transcript(ctx, "ses_nope", 1); err == nil {
		t.Error("unknown id: no error")
	}
}

func TestGenerateStoreIsReadable(t *testing.T) {
	t.Parallel()
	data, a := testData(t)
	if err := opencodesynth.GenerateStore(data, 80, 5); err != nil {
		t.Fatal(err)
	}
	ss, err := a.Discover(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(ss) != 80 {
		t.Fatalf("%d of 80 sessions", len(ss))
	}
	states := map[adapters.NativeState]int{}
	for _, s := range ss {
		states[s.State]++
		if s.FirstPrompt == "" || s.Cwd == "" || s.Model == "" || s.TokensIn == nil || s.CreatedAt.IsZero() {
			t.Errorf("incomplete: %+v", s)
		}
	}
	if states[adapters.NativeDone] == 0 || states[adapters.NativeDone] == len(ss) {
		t.Errorf("states = %v: want a mix", states)
	}
}

func TestConcurrentDiscoverAndTranscript(t *testing.T) {
	t.Parallel()
	data, a := testData(t)
	loadFixture(t, data)
	installLegacy(t, data)
	done := make(chan error, 8)
	for range 4 {
		go func() {
			_, err := a.Discover(context.Background())
			done <- err
		}()
		go func() {
			_, err := a.Transcript(context.Background(), idResumed, 2)
			done <- err
		}()
	}
	for range 8 {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}

// TestFirstReadCutShortGoesOn: a discovery whose context ends while a large
// store is first read fails, and the next one goes on from where it
// stopped instead of starting over: each session's details are read once.
func TestFirstReadCutShortGoesOn(t *testing.T) {
	data, a := testData(t)
	if err := opencodesynth.GenerateStore(data, 300, 9); err != nil {
		t.Fatal(err)
	}
	storeiotest.CheckCutShortGoesOn(t, a, 300, func() int64 {
		var n int
		for _, p := range a.dbPaths() {
			n += a.store(p).detailed
		}
		return int64(n)
	})
}

// A Discover between changes reuses the sessions the last one built; a
// change to the database is seen by the next.
func TestUnchangedDatabaseReusesSessions(t *testing.T) {
	t.Parallel()
	for name, watch := range watchers(t) {
		t.Run(name, func(t *testing.T) {
			data, a := testDataWatched(t, watch)
			db := loadFixture(t, data)
			ctx := context.Background()
			first, err := a.Discover(ctx)
			if err != nil || len(first) == 0 {
				t.Fatalf("%d sessions, %v", len(first), err)
			}
			again, err := a.Discover(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if &again[0] != &first[0] {
				t.Error("an unchanged database's sessions were built again")
			}
			if _, err := db.Exec("DELETE FROM session WHERE id = ?", idFailed); err != nil {
				t.Fatal(err)
			}
			after, err := a.Discover(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(after) != len(first)-1 {
				t.Errorf("after a delete: %d sessions, want %d", len(after), len(first)-1)
			}
		})
	}
}

// One session read alone is what Discover says of it; an id the store
// does not hold is no session.
func TestDiscoverOneAgreesWithDiscover(t *testing.T) {
	t.Parallel()
	data, a := testData(t)
	loadFixture(t, data)
	ctx := context.Background()
	all, err := a.Discover(ctx)
	if err != nil || len(all) == 0 {
		t.Fatalf("%d sessions, %v", len(all), err)
	}
	for _, ns := range all {
		got, err := a.DiscoverOne(ctx, ns.NativeID)
		if err != nil || !reflect.DeepEqual(got, ns) {
			t.Errorf("DiscoverOne(%s) = %+v, %v; Discover says %+v", ns.NativeID, got, err, ns)
		}
	}
	if _, err := a.DiscoverOne(ctx, "ses_none"); !errors.Is(err, adapters.ErrNoSession) {
		t.Errorf("an id the store does not hold: %v", err)
	}
}

// countingQuerier is a querier that keeps the statements asked of it and
// their arguments.
type countingQuerier struct {
	querier
	asked []string
	args  [][]any
}

func (c *countingQuerier) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	c.asked, c.args = append(c.asked, query), append(c.args, args)
	return c.querier.QueryContext(ctx, query, args...)
}

func (c *countingQuerier) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	c.asked, c.args = append(c.asked, query), append(c.args, args)
	return c.querier.QueryRowContext(ctx, query, args...)
}

// A session's details, on a database whose rows hold the model and the
// token counts, take two statements: its latest message and its first
// prompt. No answer's parts are read (a first read asks this of every
// session of the store).
func TestDetailsTakeTwoStatements(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		make func(t *testing.T, data string)
	}{
		{"recorded", func(t *testing.T, data string) { loadFixture(t, data) }},
		{"generated", func(t *testing.T, data string) {
			if err := opencodesynth.GenerateStore(data, 40, 29); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			data := t.TempDir()
			tt.make(t, data)
			ctx := context.Background()
			tx, cols := readOnlyTx(t, ctx, filepath.Join(data, "opencode", "opencode.db"))
			stamps, err := queryStamps(ctx, tx, cols["parent_id"], true)
			if err != nil {
				t.Fatal(err)
			}
			ids := slices.Sorted(maps.Keys(stamps))
			ss, err := querySessions(ctx, tx, cols, ids, true)
			if err != nil || len(ss) != len(ids) || len(ss) == 0 {
				t.Fatalf("%d sessions of %d: %v", len(ss), len(ids), err)
			}
			for _, s := range ss {
				q := &countingQuerier{querier: tx}
				if err := readDetails(ctx, q, s, cols); err != nil {
					t.Fatal(err)
				}
				if len(q.asked) != 2 || s.last.role == "" || s.firstPrompt == "" {
					t.Fatalf("%s: %d statements %q; latest message %+v, first prompt %q", s.id, len(q.asked), q.asked, s.last, s.firstPrompt)
				}
				if got := q.args[0]; len(got) != 2 || got[1] != 1 {
					t.Errorf("%s: the latest messages asked with %v, want the latest one alone (the row names the model)", s.id, got)
				}
			}
		})
	}
}

// readOnlyTx opens the database at path read-only, for the test's length,
// and returns a read transaction on it with the session table's columns.
func readOnlyTx(t *testing.T, ctx context.Context, path string) (*sql.Tx, map[string]bool) {
	t.Helper()
	db, err := storeio.OpenSQLiteReadOnly(ctx, path, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tx.Rollback() })
	cols, err := storeio.SQLiteColumns(ctx, tx, "session")
	if err != nil {
		t.Fatal(err)
	}
	return tx, cols
}

// A first read of many sessions reads their details on a transaction per
// core: what it found of each session is what one transaction reading
// them one by one finds.
func TestDetailsReadApartAgree(t *testing.T) {
	t.Parallel()
	data, a := testData(t)
	n := 3 * detailsApart
	if err := opencodesynth.GenerateStore(data, n, 13); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if ss, err := a.Discover(ctx); err != nil || len(ss) != n {
		t.Fatalf("%d of %d sessions: %v", len(ss), n, err)
	}
	path := filepath.Join(data, "opencode", "opencode.db")
	d := a.store(path)
	if d.detailed != n {
		t.Errorf("%d sessions detailed, want %d", d.detailed, n)
	}
	tx, cols := readOnlyTx(t, ctx, path)
	one := &preparedQuerier{tx: tx, stmts: map[string]*sql.Stmt{}}
	defer one.close()
	for id, got := range d.sessions {
		want := &session{id: id}
		if err := readDetails(ctx, one, want, cols); err != nil {
			t.Fatal(err)
		}
		if got.firstPrompt != want.firstPrompt || got.last != want.last || got.model != want.model || len(got.warnings) != 0 {
			t.Errorf("%s: read apart %q %+v %q %q, one by one %q %+v %q", id, got.firstPrompt, got.last, got.model, got.warnings, want.firstPrompt, want.last, want.model)
		}
	}
}
