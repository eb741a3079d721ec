package opencode

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentctl/agentctl/adapters"
	"github.com/agentctl/agentctl/adapters/storeio"
	"github.com/agentctl/agentctl/internal/text"
)

// recentTurn is how long after its last change a session whose turn is
// not over is checked on every read, whether or not events name it.
const recentTurn = time.Hour

// recentMessages is how many of a session's latest messages are read to
// find the model of its latest assistant message (when the session row
// names none).
const recentMessages = 30

// recentFirst is how many of them are read first: most often an assistant
// message is among them.
const recentFirst = 6

// dbStore reads one opencode.db. The whole result is reused while the
// database and its WAL are unchanged: by the folder's watch when it has
// one (no stat at all), else by stat. When they changed, only the sessions
// whose time_updated moved are read again.
type dbStore struct {
	path  string
	watch storeio.FolderWatch // nil: stat every time
	// saved keeps the result across restarts (nil without a cache
	// folder); seeded is set once it was looked at.
	saved  *storeio.DiskCache[*dbSnapshot]
	seeded bool

	// token is the folder's watch token the result was read under, valid
	// when watched.
	token   uint64
	watched bool

	mu       sync.Mutex
	stamp    [2]storeio.FileKey
	sessions map[string]*session // by id
	stamps   map[string]stamp    // id -> the stamp the entry was read at
	// mark is the last event (rowid) seen when marked.
	mark   int64
	marked bool
	// detailed counts the sessions whose messages were read.
	detailed int
	// gen moves whenever sessions may have changed; listed is the list
	// of them made at listedGen.
	gen       uint64
	listed    []*session
	listedGen uint64
}

// stamp says which version of a session an entry was read at: the
// session's time_updated, and its event sequence number, which OpenCode
// advances on every message and part update (the session row itself is
// not touched by all of them).
type stamp struct {
	updated int64
	seq     int64
}

func newDBStore(path string, watch storeio.FolderWatch, saved *storeio.DiskCache[*dbSnapshot]) *dbStore {
	return &dbStore{path: path, watch: watch, saved: saved, sessions: map[string]*session{}, stamps: map[string]stamp{}}
}

// load returns the store's sessions, and a generation that moves whenever
// they may have changed (equal generations: the same sessions, the same
// slice). A missing database is no sessions; a database that cannot be
// read (locked, busy, not a database) is an error, and the previous result
// is kept for next time. The slice returned must not be changed.
func (d *dbStore) load(ctx context.Context) ([]*session, uint64, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	// The token is taken before the stat: a write to the database or its
	// WAL after it moves the token, so the next load stats again.
	var token uint64
	watched := false
	if d.watch != nil {
		token, watched = d.watch.Token(filepath.Dir(d.path))
		if watched && d.watched && token == d.token {
			return d.list(), d.gen, nil
		}
	}
	st, err := storeio.SQLiteStamp(d.path)
	if err != nil {
		return nil, 0, err
	}
	if st[0] == (storeio.FileKey{}) {
		if len(d.sessions) > 0 {
			d.gen++
		}
		d.sessions, d.stamps, d.stamp = map[string]*session{}, map[string]stamp{}, st
		d.token, d.watched = token, watched
		return nil, d.gen, nil
	}
	if d.saved != nil && !d.seeded {
		d.seeded = true
		d.saved.Load()
		if e, ok := d.saved.Kept(d.path); ok && e.Value != nil {
			d.gen++
			d.seed(e.Value, st)
		}
	}
	if !st[0].Same(d.stamp[0]) || !st[1].Same(d.stamp[1]) {
		// A refresh that fails part way may have changed some sessions.
		d.gen++
		if err := d.refresh(ctx); err != nil {
			return nil, 0, err
		}
		d.stamp = st
		if d.saved != nil {
			d.saved.Put(st[0], d.snapshot())
			d.saved.Save(false)
		}
	}
	d.token, d.watched = token, watched
	return d.list(), d.gen, nil
}

// list is the sessions as a slice, made again only when they changed.
func (d *dbStore) list() []*session {
	if d.listed != nil && d.listedGen == d.gen {
		return d.listed
	}
	out := make([]*session, 0, len(d.sessions))
	for _, s := range d.sessions {
		out = append(out, s)
	}
	d.listed, d.listedGen = out, d.gen
	return out
}

// refresh reads what changed since the last read, in one read
// transaction so every query sees the same state.
func (d *dbStore) refresh(ctx context.Context) error {
	db, err := storeio.OpenSQLiteReadOnly(ctx, d.path, 0)
	if err != nil {
		return err
	}
	defer db.Close()
	tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return fmt.Errorf("read %s: %w", d.path, err)
	}
	defer tx.Rollback()
	cols, err := storeio.SQLiteColumns(ctx, tx, "session")
	if err != nil {
		return err
	}
	if len(cols) == 0 {
		// A database without a session table yet: OpenCode creates its
		// tables when it first starts. No sessions.
		d.sessions, d.stamps, d.marked = map[string]*session{}, map[string]stamp{}, false
		return nil
	}
	if !cols["id"] || !cols["time_updated"] {
		return fmt.Errorf("read %s: the session table has no id or time_updated column", d.path)
	}
	seqCols, err := storeio.SQLiteColumns(ctx, tx, "event_sequence")
	if err != nil {
		return err
	}
	eventCols, err := storeio.SQLiteColumns(ctx, tx, "event")
	if err != nil {
		return err
	}
	hasSeq := seqCols["aggregate_id"] && seqCols["seq"]
	hasEvents := hasSeq && eventCols["aggregate_id"]
	var mark int64
	if hasEvents {
		if err := tx.QueryRowContext(ctx, "SELECT COALESCE(max(rowid), 0) FROM event").Scan(&mark); err != nil {
			return fmt.Errorf("read events of %s: %w", d.path, err)
		}
	}
	var stamps map[string]stamp
	var changed []string
	ok := false
	if hasEvents && d.marked && mark >= d.mark {
		stamps, changed, ok, err = d.changedSince(ctx, tx, cols["parent_id"])
		if err != nil {
			return err
		}
	}
	if !ok {
		if stamps, err = queryStamps(ctx, tx, cols["parent_id"], hasSeq); err != nil {
			return err
		}
		changed = changed[:0]
		for id, st := range stamps {
			old, ok := d.stamps[id]
			// Without event sequence numbers, a session whose turn is not
			// over may have changed without its row showing it.
			if !ok || old != st || (st.seq == 0 && d.sessions[id] != nil && !d.sessions[id].settled()) {
				changed = append(changed, id)
			}
		}
	}
	rows, err := querySessions(ctx, tx, cols, changed, len(changed) > len(stamps)/4)
	if err != nil {
		return err
	}
	next := make(map[string]*session, len(stamps))
	nextStamps := make(map[string]stamp, len(stamps))
	for id, st := range stamps {
		if s, ok := d.sessions[id]; ok && d.stamps[id] == st {
			next[id], nextStamps[id] = s, st
		}
	}
	var work []*session
	for _, s := range rows {
		if _, ok := stamps[s.id]; !ok {
			continue // a child session
		}
		s.path = d.path
		if prev, ok := d.sessions[s.id]; ok {
			s.firstPrompt = prev.firstPrompt // the first prompt never changes
		}
		work = append(work, s)
	}
	progress := adapters.ProgressFrom(ctx)
	progress.Found(len(rows))
	progress.Read(len(rows) - len(work))
	read, err := d.readAllDetails(ctx, tx, work, cols, progress)
	for i, s := range work {
		if read[i] {
			next[s.id], nextStamps[s.id] = s, stamps[s.id]
		}
	}
	if err != nil {
		d.keepPartial(next, nextStamps)
		return err
	}
	for _, id := range changed {
		if _, ok := next[id]; !ok {
			// The row could not be scanned: report it, and read it again
			// only when it changes.
			next[id] = &session{id: id, path: d.path, warnings: []string{"unreadable session row in " + d.path}}
			nextStamps[id] = stamps[id]
		}
	}
	d.sessions, d.stamps = next, nextStamps
	d.mark, d.marked = mark, hasEvents
	return nil
}

// detailsApart is how many changed sessions make the details worth
// reading on more than one connection: opening one costs about as much as
// reading a few sessions.
const detailsApart = 64

// readAllDetails reads the details of every session of work (readDetails)
// and says which were read: on tx, and, when there are many, on as many
// more read transactions as there are cores, each session on one of them.
// The others begin after tx, so what they read is as new as what tx read
// or newer (a session changed meanwhile is read again next time, when its
// stamp moves). It stops at a busy database or ctx's end, returning that
// error; another error of a session is its warning.
func (d *dbStore) readAllDetails(ctx context.Context, tx *sql.Tx, work []*session, cols map[string]bool, progress *adapters.Progress) ([]bool, error) {
	read := make([]bool, len(work))
	rctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	var next atomic.Int64
	// each reads sessions on q until none is left or the read stops.
	each := func(q *preparedQuerier) {
		for {
			i := int(next.Add(1) - 1)
			if i >= len(work) || rctx.Err() != nil {
				return
			}
			s := work[i]
			progress.Read(1)
			err := readDetails(rctx, q, s, cols)
			if err != nil && (storeio.IsSQLiteBusy(err) || rctx.Err() != nil) {
				stop(err)
				return
			}
			if err != nil {
				s.warnings = append(s.warnings, err.Error())
			}
			read[i] = true
		}
	}
	// The others open their connections while tx reads: a read cut short
	// by ctx still gets on (the next read goes on from it).
	var wg sync.WaitGroup
	if len(work) >= detailsApart {
		for range runtime.GOMAXPROCS(0) - 1 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				q, closeQ, err := d.openQuerier(rctx)
				if err != nil {
					return // tx reads them
				}
				defer closeQ()
				each(q)
			}()
		}
	}
	// The details ask the same few queries of every changed session.
	first := &preparedQuerier{tx: tx, stmts: map[string]*sql.Stmt{}}
	defer first.close()
	each(first)
	wg.Wait()
	n := 0
	for _, ok := range read {
		if ok {
			n++
		}
	}
	d.detailed += n
	if err := ctx.Err(); err != nil {
		return read, fmt.Errorf("read %s: %w", d.path, err)
	}
	if err := context.Cause(rctx); err != nil {
		return read, err
	}
	return read, nil
}

// openQuerier opens another read transaction on the database, for
// readAllDetails.
func (d *dbStore) openQuerier(ctx context.Context) (*preparedQuerier, func(), error) {
	db, err := storeio.OpenSQLiteReadOnly(ctx, d.path, 0)
	if err != nil {
		return nil, nil, err
	}
	tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		db.Close()
		return nil, nil, fmt.Errorf("read %s: %w", d.path, err)
	}
	q := &preparedQuerier{tx: tx, stmts: map[string]*sql.Stmt{}}
	return q, func() {
		q.close()
		tx.Rollback()
		db.Close()
	}, nil
}

// keepPartial keeps the sessions a refresh cut short had read, so the next
// refresh goes on from there: a first read of a large store may take longer
// than one discovery may wait. The next refresh compares every stamp.
func (d *dbStore) keepPartial(next map[string]*session, nextStamps map[string]stamp) {
	for id, s := range next {
		d.sessions[id], d.stamps[id] = s, nextStamps[id]
	}
	d.marked = false
}

// changedSince finds the sessions changed since the last read from the
// event log OpenCode appends to on every change: the sessions of the
// events after the last one seen. The cost grows with what changed, not
// with the number of sessions. ok is false when the log cannot be trusted
// for this (the session count does not add up), and the caller reads
// every session's stamp instead.
func (d *dbStore) changedSince(ctx context.Context, tx *sql.Tx, hasParent bool) (stamps map[string]stamp, changed []string, ok bool, err error) {
	// Not DISTINCT: SQLite would answer that from an index over the
	// whole log; the range of new rows is what is wanted.
	rs, err := tx.QueryContext(ctx, "SELECT aggregate_id FROM event WHERE rowid > ?", d.mark)
	if err != nil {
		return nil, nil, false, fmt.Errorf("read events of %s: %w", d.path, err)
	}
	var ids []string
	seen := map[string]bool{}
	for rs.Next() {
		var v any
		if rs.Scan(&v) == nil {
			if id := asString(v); id != "" && !seen[id] {
				seen[id] = true
				ids = append(ids, id)
			}
		}
	}
	rs.Close()
	if err := rs.Err(); err != nil {
		return nil, nil, false, fmt.Errorf("read events of %s: %w", d.path, err)
	}
	stamps = make(map[string]stamp, len(d.stamps)+len(ids))
	for id, st := range d.stamps {
		stamps[id] = st
	}
	// Sessions in the middle of a turn lately are checked as well,
	// events or not: they are few, and they are the ones that change.
	recent := time.Now().Add(-recentTurn)
	for id, s := range d.sessions {
		if !seen[id] && !s.settled() && s.updated.After(recent) {
			ids = append(ids, id)
		}
	}
	q := "SELECT s.time_updated, COALESCE(e.seq, 0) FROM session s LEFT JOIN event_sequence e ON e.aggregate_id = s.id WHERE s.id = ?"
	if hasParent {
		q += " AND (s.parent_id IS NULL OR s.parent_id = '')"
	}
	for _, id := range ids {
		var up, seq any
		err := tx.QueryRowContext(ctx, q, id).Scan(&up, &seq)
		if errors.Is(err, sql.ErrNoRows) {
			delete(stamps, id) // deleted, a child session, or not a session
			continue
		}
		if err != nil {
			return nil, nil, false, fmt.Errorf("read session %s: %w", id, err)
		}
		st := stamp{}
		st.updated, _ = asInt(up)
		st.seq, _ = asInt(seq)
		if old, ok := d.stamps[id]; !ok || old != st {
			changed = append(changed, id)
		}
		stamps[id] = st
	}
	count := "SELECT count(*) FROM session"
	if hasParent {
		count += " WHERE parent_id IS NULL OR parent_id = ''"
	}
	var n int
	if err := tx.QueryRowContext(ctx, count).Scan(&n); err != nil {
		return nil, nil, false, fmt.Errorf("count sessions of %s: %w", d.path, err)
	}
	return stamps, changed, n == len(stamps), nil
}

// queryStamps returns every top-level session's stamp. Child sessions (a
// sub-agent's, started by the task tool) belong to their parent's work and
// are left out, as OpenCode's own session list does.
func queryStamps(ctx context.Context, db querier, hasParent, hasSeq bool) (map[string]stamp, error) {
	q := "SELECT s.id, s.time_updated, 0 FROM session s"
	if hasSeq {
		q = "SELECT s.id, s.time_updated, COALESCE(e.seq, 0) FROM session s LEFT JOIN event_sequence e ON e.aggregate_id = s.id"
	}
	if hasParent {
		q += " WHERE s.parent_id IS NULL OR s.parent_id = ''"
	}
	rs, err := db.QueryContext(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("read sessions: %w", err)
	}
	defer rs.Close()
	out := map[string]stamp{}
	for rs.Next() {
		var id, up, seq any
		if err := rs.Scan(&id, &up, &seq); err != nil || asString(id) == "" {
			continue // an odd row hides only itself
		}
		st := stamp{}
		st.updated, _ = asInt(up)
		st.seq, _ = asInt(seq)
		out[asString(id)] = st
	}
	if err := rs.Err(); err != nil {
		return nil, fmt.Errorf("read sessions: %w", err)
	}
	return out, nil
}

// querySessions reads the session rows of ids, child sessions excluded.
// With all set it scans the table once and keeps the rows of ids, which is
// cheaper than many lookups.
func querySessions(ctx context.Context, db querier, cols map[string]bool, ids []string, all bool) ([]*session, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	col := func(name, fallback string) string {
		if cols[name] {
			return name
		}
		return fallback
	}
	q := "SELECT id, COALESCE(" + col("parent_id", "''") + ", ''), COALESCE(" + col("directory", "''") + ", ''), " +
		"COALESCE(" + col("model", "''") + ", ''), " + col("time_created", "0") + ", time_updated, " +
		col("tokens_input", "NULL") + ", " + col("tokens_output", "NULL") + ", " + col("cost", "NULL") + " FROM session"
	want := make(map[string]bool, len(ids))
	for _, id := range ids {
		want[id] = true
	}
	var out []*session
	scan := func(rs *sql.Rows) error {
		defer rs.Close()
		for rs.Next() {
			var s session
			// Scanned loosely: a wrong type in one column leaves only that
			// fact unknown.
			var id, parent, dir, model, created, updated, in, outTok, cost any
			if err := rs.Scan(&id, &parent, &dir, &model, &created, &updated, &in, &outTok, &cost); err != nil {
				continue
			}
			s.id, s.parentID, s.directory = asString(id), asString(parent), asString(dir)
			if s.id == "" || s.parentID != "" || !want[s.id] {
				continue
			}
			s.model = modelOf(json.RawMessage(asString(model)))
			if ms, ok := asInt(created); ok && ms > 0 {
				s.created = time.UnixMilli(ms)
			}
			if ms, ok := asInt(updated); ok && ms > 0 {
				s.updated = time.UnixMilli(ms)
			}
			i, okIn := asInt(in)
			o, okOut := asInt(outTok)
			if okIn && okOut {
				s.tokensIn, s.tokensOut, s.hasTokens = i, o, true
			}
			if c, ok := asFloat(cost); ok {
				s.cost, s.hasCost = c, true
			}
			out = append(out, &s)
		}
		return rs.Err()
	}
	if all {
		rs, err := db.QueryContext(ctx, q)
		if err != nil {
			return nil, fmt.Errorf("read sessions: %w", err)
		}
		if err := scan(rs); err != nil {
			return nil, fmt.Errorf("read sessions: %w", err)
		}
		return out, nil
	}
	for _, id := range ids {
		rs, err := db.QueryContext(ctx, q+" WHERE id = ?", id)
		if err != nil {
			return nil, fmt.Errorf("read session %s: %w", id, err)
		}
		if err := scan(rs); err != nil {
			return nil, fmt.Errorf("read session %s: %w", id, err)
		}
	}
	return out, nil
}

// querier is a database or a transaction.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// preparedQuerier is a transaction whose queries are each prepared once: a
// first read asks the same few of thousands of sessions, and SQLite
// compiling each query again was a good part of it.
type preparedQuerier struct {
	tx    *sql.Tx
	stmts map[string]*sql.Stmt
}

func (p *preparedQuerier) stmt(ctx context.Context, query string) (*sql.Stmt, error) {
	if st, ok := p.stmts[query]; ok {
		return st, nil
	}
	st, err := p.tx.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	p.stmts[query] = st
	return st, nil
}

func (p *preparedQuerier) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	st, err := p.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(ctx, args...)
}

func (p *preparedQuerier) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	st, err := p.stmt(ctx, query)
	if err != nil {
		// The error reaches the caller through the row, as the
		// transaction's own QueryRowContext would hand it.
		return p.tx.QueryRowContext(ctx, query, args...)
	}
	return st.QueryRowContext(ctx, args...)
}

func (p *preparedQuerier) close() {
	for _, st := range p.stmts {
		st.Close()
	}
}

// dbMessage is one message row with its decoded data.
type dbMessage struct {
	id   string
	data messageData
}

// readDetails reads what the session row does not say: the first prompt,
// the latest message's state, the model, and (for schemas without token
// columns) the token sums.
func readDetails(ctx context.Context, db querier, s *session, cols map[string]bool) error {
	// The latest few messages most often hold an assistant message: the
	// recentMessages are read only when they do not and the model is still
	// unknown. When the row names the model, the latest message is all.
	limits := []int{recentFirst, recentMessages}
	if s.model != "" {
		limits = []int{1}
	}
	for _, limit := range limits {
		n, err := latestMessages(ctx, db, s, limit)
		if err != nil {
			return err
		}
		if s.model != "" || n < limit {
			break
		}
	}
	if s.firstPrompt == "" {
		prompt, err := firstPrompt(ctx, db, s.id)
		if err != nil {
			return err
		}
		s.firstPrompt = prompt
	}
	if !cols["tokens_input"] || !cols["tokens_output"] {
		var in, out sql.NullFloat64
		var cost sql.NullFloat64
		err := db.QueryRowContext(ctx, `SELECT sum(json_extract(data, '$.tokens.input')), sum(json_extract(data, '$.tokens.output')), sum(json_extract(data, '$.cost'))
			FROM message WHERE session_id = ? AND json_valid(data) AND json_extract(data, '$.role') = 'assistant'`, s.id).Scan(&in, &out, &cost)
		if err != nil {
			return fmt.Errorf("sum tokens of %s: %w", s.id, err)
		}
		if in.Valid && out.Valid {
			s.tokensIn, s.tokensOut, s.hasTokens = int64(in.Float64), int64(out.Float64), true
		}
		if cost.Valid && !cols["cost"] {
			s.cost, s.hasCost = cost.Float64, true
		}
	}
	return nil
}

// latestMessages reads the session's latest limit messages: the latest
// one's state, and the model of the latest assistant message when the
// session has none yet. It returns how many messages were read.
func latestMessages(ctx context.Context, db querier, s *session, limit int) (int, error) {
	recent, err := queryMessages(ctx, db, "SELECT id, data FROM message WHERE session_id = ? ORDER BY time_created DESC, id DESC LIMIT ?", s.id, limit)
	if err != nil {
		return 0, err
	}
	if len(recent) > 0 {
		s.last = lastOf(recent[0].data)
	}
	for _, m := range recent {
		if m.data.Role == "assistant" && s.model == "" {
			s.model = joinModel(m.data.ProviderID, m.data.ModelID)
		}
	}
	return len(recent), nil
}

// firstPrompt returns the text of the session's first message when the
// user wrote it: the message and its parts in one query (a first read asks
// it of every session).
func firstPrompt(ctx context.Context, db querier, sessionID string) (string, error) {
	rs, err := db.QueryContext(ctx, `SELECT m.data, p.data FROM
		(SELECT id, data FROM message WHERE session_id = ? ORDER BY time_created, id LIMIT 1) AS m
		LEFT JOIN part p ON p.message_id = m.id ORDER BY p.id`, sessionID)
	if err != nil {
		return "", fmt.Errorf("read the first message: %w", err)
	}
	defer rs.Close()
	var parts []partData
	first, user := true, false
	for rs.Next() {
		var msg, part []byte
		if err := rs.Scan(&msg, &part); err != nil {
			continue
		}
		if first {
			var m messageData
			_ = decodeJSON(msg, &m)
			first, user = false, m.Role == "user"
		}
		var p partData
		if user && part != nil && decodeJSON(part, &p) == nil {
			parts = append(parts, p)
		}
	}
	if err := rs.Err(); err != nil {
		return "", fmt.Errorf("read the first message: %w", err)
	}
	return text.Ellipsis(textParts(parts), promptRunes), nil
}

func queryMessages(ctx context.Context, db querier, q string, args ...any) ([]dbMessage, error) {
	rs, err := db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("read messages: %w", err)
	}
	defer rs.Close()
	var out []dbMessage
	for rs.Next() {
		var m dbMessage
		var data []byte
		if err := rs.Scan(&m.id, &data); err != nil {
			continue
		}
		// A message whose data is not an object keeps its place (it may
		// be the latest) with nothing known about it.
		_ = decodeJSON(data, &m.data)
		out = append(out, m)
	}
	if err := rs.Err(); err != nil {
		return nil, fmt.Errorf("read messages: %w", err)
	}
	return out, nil
}

// queryParts returns the parts of the given messages, by message id, in
// order.
func queryParts(ctx context.Context, db querier, messageIDs []string) (map[string][]partData, error) {
	args := make([]any, len(messageIDs))
	for i, id := range messageIDs {
		args[i] = id
	}
	q := "SELECT message_id, data FROM part WHERE message_id IN (?" + strings.Repeat(",?", len(messageIDs)-1) + ") ORDER BY message_id, id"
	rs, err := db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("read parts: %w", err)
	}
	defer rs.Close()
	out := map[string][]partData{}
	for rs.Next() {
		var mid string
		var data []byte
		if err := rs.Scan(&mid, &data); err != nil {
			continue
		}
		var p partData
		if decodeJSON(data, &p) != nil {
			continue
		}
		out[mid] = append(out[mid], p)
	}
	if err := rs.Err(); err != nil {
		return nil, fmt.Errorf("read parts: %w", err)
	}
	return out, nil
}

// asString returns a text column's value; "" for NULL or other types.
func asString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case []byte:
		return string(x)
	}
	return ""
}

// asInt returns an integer column's value; ok is false for NULL or text.
func asInt(v any) (int64, bool) {
	switch x := v.(type) {
	case int64:
		return x, true
	case float64:
		return int64(x), true
	}
	return 0, false
}

// asFloat returns a numeric column's value; ok is false for NULL or text.
func asFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case int64:
		return float64(x), true
	case float64:
		return x, true
	}
	return 0, false
}
