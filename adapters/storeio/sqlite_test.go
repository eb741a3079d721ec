package storeio

import (
	"context"
	"database/sql"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	_ "modernc.org/sqlite"
)

func createDB(t *testing.T, path, journal string) *sql.DB {
	t.Helper()
	u := url.URL{Scheme: "file", Path: path, RawQuery: "_pragma=journal_mode(" + journal + ")"}
	w, err := sql.Open("sqlite", u.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	w.SetMaxOpenConns(1)
	if _, err := w.Exec("CREATE TABLE t (id TEXT PRIMARY KEY, n INTEGER)"); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Exec("INSERT INTO t VALUES ('a', 1)"); err != nil {
		t.Fatal(err)
	}
	return w
}

func TestOpenSQLiteReadOnlyNextToWALWriter(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "odd ?#% dir")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "x.db")
	w := createDB(t, path, "wal")
	// The writer holds an open write transaction while we read.
	tx, err := w.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec("INSERT INTO t VALUES ('b', 2)"); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	db, err := OpenSQLiteReadOnly(ctx, path, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM t").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Errorf("read %d rows next to an open write transaction, want the committed 1", n)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, "INSERT INTO t VALUES ('c', 3)"); err == nil {
		t.Error("a write through the read-only handle succeeded")
	}
	cols, err := SQLiteColumns(ctx, db, "t")
	if err != nil {
		t.Fatal(err)
	}
	if !cols["id"] || !cols["n"] || len(cols) != 2 {
		t.Errorf("columns = %v", cols)
	}
}

func TestOpenSQLiteReadOnlyLockedDatabase(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.db")
	w := createDB(t, path, "delete")
	// An exclusive lock in rollback-journal mode blocks every reader.
	conn, err := w.Conn(context.Background())
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
	db, err := OpenSQLiteReadOnly(ctx, path, 50*time.Millisecond)
	if err == nil {
		defer db.Close()
		var n int
		err = db.QueryRowContext(ctx, "SELECT count(*) FROM t").Scan(&n)
	}
	if err == nil {
		t.Fatal("read a database under an exclusive lock")
	}
	if !IsSQLiteBusy(err) {
		t.Errorf("error %v is not reported as busy", err)
	}
	if ctx.Err() != nil {
		t.Error("the read waited for the lock instead of giving up")
	}
}

func TestOpenSQLiteReadOnlyMissingFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "missing.db")
	db, err := OpenSQLiteReadOnly(context.Background(), path, 0)
	if err == nil {
		db.Close()
		t.Fatal("opened a missing database")
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("opening created the file: %v", err)
	}
}

func TestOpenSQLiteReadOnlyGarbage(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "garbage.db")
	if err := os.WriteFile(path, []byte("this is not a database, just text\x00\xff"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	db, err := OpenSQLiteReadOnly(ctx, path, 0)
	if err == nil {
		defer db.Close()
		_, err = SQLiteColumns(ctx, db, "session")
	}
	if err == nil {
		t.Fatal("read a garbage file as a database")
	}
}
