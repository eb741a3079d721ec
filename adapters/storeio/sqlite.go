package storeio

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// DefaultBusyTimeout is how long a read of an agent's database waits for a
// writer's lock before giving up. Agents write in WAL mode, where readers are
// not blocked; this bound matters only for rollback-journal databases and
// WAL recovery, and keeps a locked database a warning rather than a stall.
const DefaultBusyTimeout = 250 * time.Millisecond

// OpenSQLiteReadOnly opens the agent database at path for reading only. The
// database is another program's, written while we read it: the connection
// never creates the file, never writes, waits at most busy for a lock, and
// uses a single connection so that a caller's context bounds every query.
// The caller closes the returned handle.
func OpenSQLiteReadOnly(ctx context.Context, path string, busy time.Duration) (*sql.DB, error) {
	if busy <= 0 {
		busy = DefaultBusyTimeout
	}
	q := url.Values{}
	q.Set("mode", "ro")
	q.Set("_busy_timeout", strconv.FormatInt(busy.Milliseconds(), 10))
	q.Set("_query_only", "1")
	u := url.URL{Scheme: "file", Path: path, RawQuery: q.Encode()}
	// url.URL renders "file:///abs/path?..."; SQLite accepts that form and
	// decodes %-escapes, so paths with '?', '#' or spaces stay intact.
	db, err := sql.Open("sqlite", u.String())
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("open %s read-only: %w", path, err)
	}
	return db, nil
}

// IsSQLiteBusy reports whether err means the database was locked or busy: a
// live writer held it longer than the busy timeout.
func IsSQLiteBusy(err error) bool {
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
			return true
		}
	}
	return false
}

// Querier is what SQLiteColumns reads through: a *sql.DB, *sql.Conn or
// *sql.Tx.
type Querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// SQLiteColumns returns the column names of table (none when there is no
// such table), so readers can adapt to the schema of the agent version
// that wrote the database.
func SQLiteColumns(ctx context.Context, db Querier, table string) (map[string]bool, error) {
	rows, err := db.QueryContext(ctx, "SELECT name FROM pragma_table_info(?)", table)
	if err != nil {
		return nil, fmt.Errorf("read columns of %s: %w", table, err)
	}
	defer rows.Close()
	cols := map[string]bool{}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return nil, fmt.Errorf("read columns of %s: %w", table, err)
		}
		cols[strings.ToLower(name)] = true
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read columns of %s: %w", table, err)
	}
	return cols, nil
}

// SQLiteStamp returns the keys of a database file and of its WAL (zero when
// absent): a database changed when either did.
func SQLiteStamp(db string) ([2]FileKey, error) {
	var st [2]FileKey
	for i, p := range []string{db, db + "-wal"} {
		fi, err := os.Stat(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return st, fmt.Errorf("stat %s: %w", p, err)
		}
		st[i] = KeyOf(p, fi)
	}
	return st, nil
}
