package opencode

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	_ "modernc.org/sqlite" // the "sqlite" database/sql driver
)

// TestFirstPrompt: the first message's text parts, in part order, when the
// user wrote it; nothing when the assistant did, or nothing was written.
func TestFirstPrompt(t *testing.T) {
	t.Parallel()
	db, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "opencode.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	for _, q := range []string{
		`CREATE TABLE message (id TEXT PRIMARY KEY, session_id TEXT, time_created INTEGER, data TEXT)`,
		`CREATE TABLE part (id TEXT PRIMARY KEY, message_id TEXT, session_id TEXT, data TEXT)`,
		// ses_a: the user's first message, its parts written out of order,
		// a tool part and a synthetic one among them; a later message.
		`INSERT INTO message VALUES ('msg_a1','ses_a',1,'{"role":"user"}'), ('msg_a2','ses_a',2,'{"role":"assistant"}')`,
		`INSERT INTO part VALUES ('prt_a3','msg_a1','ses_a','{"type":"text","text":"second line"}'),
			('prt_a1','msg_a1','ses_a','{"type":"text","text":"fix the parser"}'),
			('prt_a2','msg_a1','ses_a','{"type":"tool","tool":"read"}'),
			('prt_a4','msg_a1','ses_a','{"type":"text","text":"noted","synthetic":true}'),
			('prt_a5','msg_a2','ses_a','{"type":"text","text":"an answer"}')`,
		// ses_b: the assistant's message first.
		`INSERT INTO message VALUES ('msg_b1','ses_b',1,'{"role":"assistant"}'), ('msg_b2','ses_b',2,'{"role":"user"}')`,
		`INSERT INTO part VALUES ('prt_b1','msg_b1','ses_b','{"type":"text","text":"hello"}'), ('prt_b2','msg_b2','ses_b','{"type":"text","text":"later"}')`,
		// ses_c: a user message without parts yet; ses_d: no messages.
		`INSERT INTO message VALUES ('msg_c1','ses_c',1,'{"role":"user"}')`,
		// ses_e: a part that is not JSON beside one that is.
		`INSERT INTO message VALUES ('msg_e1','ses_e',1,'{"role":"user"}')`,
		`INSERT INTO part VALUES ('prt_e1','msg_e1','ses_e','not json'), ('prt_e2','msg_e1','ses_e','{"type":"text","text":"kept"}')`,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	for _, tt := range []struct{ session, want string }{
		{"ses_a", "fix the parser\nsecond line"},
		{"ses_b", ""},
		{"ses_c", ""},
		{"ses_d", ""},
		{"ses_e", "kept"},
	} {
		got, err := firstPrompt(ctx, db, tt.session)
		if err != nil || got != tt.want {
			t.Errorf("%s: first prompt %q, %v; want %q", tt.session, got, err, tt.want)
		}
	}
}
