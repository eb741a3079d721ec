package opencode

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/agentctl/agentctl/adapters"
	"github.com/agentctl/agentctl/adapters/attribute"
	"github.com/agentctl/agentctl/adapters/storeio/storeiotest"
	opencodesynth "github.com/agentctl/agentctl/internal/synth/opencode"
)

// fixtureData returns the data column of every message and part row in the
// real fixture, as seeds.
func fixtureData(f *testing.F) (messages, parts []string) {
	b, err := os.ReadFile("testdata/opencode-1.18.33.json")
	if err != nil {
		f.Fatal(err)
	}
	var tables map[string][]map[string]any
	if err := json.Unmarshal(b, &tables); err != nil {
		f.Fatal(err)
	}
	for _, r := range tables["message"] {
		messages = append(messages, r["data"].(string))
	}
	for _, r := range tables["part"] {
		parts = append(parts, r["data"].(string))
	}
	return messages, parts
}

// FuzzMessageAndPart decodes a message and a part as the database and the
// legacy tree hold them, and derives everything the adapter reports.
func FuzzMessageAndPart(f *testing.F) {
	msgs, parts := fixtureData(f)
	for i := range max(len(msgs), len(parts)) {
		f.Add([]byte(msgs[i%len(msgs)]), []byte(parts[i%len(parts)]))
	}
	f.Add([]byte(`{"role":"assistant","error":{"name":"MessageAbortedError"},"tokens":{"input":-5,"output":1e308}}`), []byte(`{"type":"tool","state":{"input":"x","output":{"a":1}}}`))
	f.Add([]byte(limitMessage), []byte(`{"type":"text","text":"x"}`))
	f.Fuzz(func(t *testing.T, msg, part []byte) {
		var m messageData
		_ = decodeJSON(msg, &m)
		var p partData
		_ = decodeJSON(part, &p)
		for _, e := range entries(m, []partData{p, p}) {
			if e.Role != "user" && e.Role != "assistant" && e.Role != "tool" {
				t.Errorf("role %q", e.Role)
			}
		}
		s := &session{id: "ses_x"}
		summarize(s, []messageData{m, m}, func(string) []partData { return []partData{p} })
		s.last = lastOf(m)
		_ = s.state(true)
		ns := s.native(attribute.Attribution{})
		if utf8.RuneCountInString(ns.FirstPrompt) > promptRunes+1 {
			t.Error("a text was not shortened")
		}
		_ = modelOf(msg)
		_ = timeOf(m.Time.Created)
	})
}

// FuzzLegacyTree reads a legacy JSON tree whose session, message and part
// files have arbitrary content.
func FuzzLegacyTree(f *testing.F) {
	session, err := os.ReadFile("testdata/legacy/storage/session/4b0ea68d7af9a6031a7ffda7ad66e0cb83315750/ses_7a1b2c3d4ffeAbCdEfGhIjKlMn.json")
	if err != nil {
		f.Fatal(err)
	}
	msg, err := os.ReadFile("testdata/legacy/storage/message/ses_7a1b2c3d4ffeAbCdEfGhIjKlMn/msg_85e4c3d2c001HhIiJjKkLlMmNn.json")
	if err != nil {
		f.Fatal(err)
	}
	part, err := os.ReadFile("testdata/legacy/storage/part/msg_85e4c3d2c001HhIiJjKkLlMmNn/prt_85e4c3d2c003Part000000003.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(session, msg, part)
	f.Add([]byte(`{"id":"ses_other","time":{"created":"2025-01-01T00:00:00Z"}}`), []byte("not json"), []byte("plain text part"))
	f.Add([]byte(`[]`), []byte(`{"role":"user"}`), []byte{0xff, 0xfe})
	f.Fuzz(func(t *testing.T, session, msg, part []byte) {
		root := filepath.Join(t.TempDir(), "storage")
		files := map[string][]byte{
			"session/p/ses_7a1b2c3d4ffeAbCdEfGhIjKlMn.json":                              session,
			"message/ses_7a1b2c3d4ffeAbCdEfGhIjKlMn/msg_85e4c3d2c001HhIiJjKkLlMmNn.json": msg,
			"part/msg_85e4c3d2c001HhIiJjKkLlMmNn/prt_1.json":                             part,
		}
		for rel, b := range files {
			p := filepath.Join(root, rel)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		l := newLegacyStore()
		ss, err := l.load(context.Background(), root)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range ss {
			s.native(attribute.Attribution{})
			if _, err := l.transcript(context.Background(), root, s.id, 2); err != nil {
				t.Log(err)
			}
		}
	})
}

// FuzzDatabaseRows writes arbitrary data columns into a real database and
// reads it as Discover and Transcript do.
func FuzzDatabaseRows(f *testing.F) {
	msgs, parts := fixtureData(f)
	f.Add([]byte(msgs[0]), []byte(parts[0]), []byte(msgs[1]), []byte(`{"id":"fake","providerID":"p"}`))
	f.Add([]byte(`{"role":"assistant","time":{"created":1,"completed":2},"finish":"stop"}`), []byte(`{"type":"text","text":"x"}`), []byte(`{`), []byte(`null`))
	f.Fuzz(func(t *testing.T, msg1, part1, msg2, model []byte) {
		data := t.TempDir()
		db, err := opencodesynth.CreateDB(filepath.Join(data, "opencode", "opencode.db"))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		const id = "ses_ffff00000000ffFuzzXxxxxxxxx"
		exec := func(q string, args ...any) {
			if _, err := db.Exec(q, args...); err != nil {
				t.Fatal(err)
			}
		}
		exec(`INSERT INTO session (id, project_id, slug, directory, title, version, model, time_created, time_updated) VALUES (?, 'global', 's', '/d', 't', '1', ?, 1, 2)`, id, string(model))
		exec(`INSERT INTO message (id, session_id, time_created, time_updated, data) VALUES ('msg_1', ?, 1, 1, ?), ('msg_2', ?, 2, 2, ?)`, id, string(msg1), id, string(msg2))
		exec(`INSERT INTO part (id, message_id, session_id, time_created, time_updated, data) VALUES ('prt_1', 'msg_1', ?, 1, 1, ?), ('prt_2', 'msg_2', ?, 2, 2, ?)`, id, string(part1), id, string(part1))
		a := New(adapters.Env{Home: t.TempDir(), Getenv: func(k string) string {
			if k == "XDG_DATA_HOME" {
				return data
			}
			return ""
		}})
		ss, err := a.Discover(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if len(ss) != 1 {
			t.Fatalf("%d sessions", len(ss))
		}
		if _, err := a.Transcript(context.Background(), id, 1); err != nil {
			t.Fatal(err)
		}
	})
}

// FuzzSnapshotDiskForm: any bytes in the cache file are rejected or read to
// a snapshot that reads back to the same record (times compare as
// instants, so the bytes are compared).
func FuzzSnapshotDiskForm(f *testing.F) {
	x := session{id: "ses_1", firstPrompt: "p", warnings: []string{"w"},
		last: lastMessage{role: "assistant", errText: "limit", errStatus: 429, provider: "fake", at: time.UnixMilli(1795731020286)}}
	storeiotest.FuzzDiskForm(f, &dbSnapshot{sessions: map[string]*session{x.id: &x}, stamps: map[string]stamp{x.id: {updated: 1}}})
}
