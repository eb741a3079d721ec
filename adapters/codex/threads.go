package codex

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"time"

	"github.com/agentctl/agentctl/adapters/storeio"
	"github.com/agentctl/agentctl/internal/text"
)

// stateDBName is Codex's SQLite index of its threads, beside the rollouts.
const stateDBName = "state_5.sqlite"

// thread is one row of the threads table: what Codex's own index says of a
// session. It is used for the facts of a rollout's head, which never change
// once written, so a row read a moment ago is as good as one read now.
type thread struct {
	id               string
	rolloutPath      string
	cwd              string
	model            string
	firstUserMessage string
	created          time.Time
	updated          time.Time
	archived         bool
}

// threadIndex caches the threads table, re-read only when the database or
// its WAL changed (by stat).
type threadIndex struct {
	mu    sync.Mutex
	stamp [2]storeio.FileKey
	rows  map[string]*thread
	gen   uint64
}

// load returns the rows by id, reading the database only when it changed.
// A missing database is an empty index. On error the last rows read are
// kept and returned with it: head facts do not go stale.
//
// gen names the rows returned: it moves whenever they are read again, so
// what was derived from rows of the same gen still holds.
func (ix *threadIndex) load(ctx context.Context, path string) (rows map[string]*thread, gen uint64, err error) {
	st, err := storeio.SQLiteStamp(path)
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if err != nil {
		return ix.rows, ix.gen, err
	}
	if st[0] == (storeio.FileKey{}) {
		if ix.rows != nil {
			ix.gen++
		}
		ix.rows, ix.stamp = nil, st
		return nil, ix.gen, nil
	}
	if ix.rows != nil && st[0].Same(ix.stamp[0]) && st[1].Same(ix.stamp[1]) {
		return ix.rows, ix.gen, nil
	}
	rows, err = readThreads(ctx, path)
	if err != nil {
		return ix.rows, ix.gen, err
	}
	ix.rows, ix.stamp = rows, st
	ix.gen++
	return rows, ix.gen, nil
}

// readThreads reads the threads table, using the columns this Codex
// version has.
func readThreads(ctx context.Context, path string) (map[string]*thread, error) {
	db, err := storeio.OpenSQLiteReadOnly(ctx, path, 0)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	cols, err := storeio.SQLiteColumns(ctx, db, "threads")
	if err != nil {
		return nil, err
	}
	if !cols["id"] || !cols["rollout_path"] {
		return nil, fmt.Errorf("read %s: no threads table with id and rollout_path", path)
	}
	col := func(name, fallback string) string {
		if cols[name] {
			return name
		}
		return fallback
	}
	created := col("created_at", "0")
	if cols["created_at_ms"] {
		created = "COALESCE(created_at_ms, " + created + "*1000)"
	} else {
		created += "*1000"
	}
	updated := col("updated_at", "0")
	if cols["updated_at_ms"] {
		updated = "COALESCE(updated_at_ms, " + updated + "*1000)"
	} else {
		updated += "*1000"
	}
	q := "SELECT id, rollout_path, " +
		"COALESCE(" + col("cwd", "''") + ", ''), " +
		"COALESCE(" + col("model", "''") + ", ''), " +
		"COALESCE(" + col("first_user_message", "''") + ", ''), " +
		created + ", " + updated + ", " +
		"COALESCE(" + col("archived", "0") + ", 0) FROM threads"
	rs, err := db.QueryContext(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("read threads of %s: %w", path, err)
	}
	defer rs.Close()
	out := map[string]*thread{}
	for rs.Next() {
		var t thread
		var createdMs, updatedMs sql.NullInt64
		var archived sql.NullInt64
		if err := rs.Scan(&t.id, &t.rolloutPath, &t.cwd, &t.model, &t.firstUserMessage, &createdMs, &updatedMs, &archived); err != nil {
			// A row with an odd type is skipped, not the index.
			continue
		}
		if createdMs.Valid && createdMs.Int64 > 0 {
			t.created = time.UnixMilli(createdMs.Int64)
		}
		if updatedMs.Valid && updatedMs.Int64 > 0 {
			t.updated = time.UnixMilli(updatedMs.Int64)
		}
		t.archived = archived.Int64 != 0
		t.firstUserMessage = text.Ellipsis(t.firstUserMessage, promptRunes)
		out[t.id] = &t
	}
	if err := rs.Err(); err != nil {
		return nil, fmt.Errorf("read threads of %s: %w", path, err)
	}
	return out, nil
}
