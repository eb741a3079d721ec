package opencode

import (
	"fmt"
	"maps"
	"slices"

	"github.com/agentctl/agentctl/adapters/storeio"
)

// snapshotKind names what a cache file holds; change it when the fields
// written below, their order or their meaning change.
const snapshotKind = "opencode-db-3"

// dbSnapshot is what a dbStore read from one database, kept across
// restarts: used as it is while the database and its WAL are unchanged
// (the same rule as in the process), and otherwise as the previous read
// the per-session stamps are compared with, so only the sessions that
// changed are read again.
type dbSnapshot struct {
	stamp    [2]storeio.FileKey
	sessions map[string]*session
	stamps   map[string]stamp
	mark     int64
	marked   bool
}

// snapshot is a copy of d's result (the maps are the store's to change).
// The caller holds d.mu.
func (d *dbStore) snapshot() *dbSnapshot {
	return &dbSnapshot{stamp: d.stamp, sessions: maps.Clone(d.sessions), stamps: maps.Clone(d.stamps), mark: d.mark, marked: d.marked}
}

// seed starts d from a kept snapshot read under the stamp st now on disk.
// The caller holds d.mu.
func (d *dbStore) seed(s *dbSnapshot, st [2]storeio.FileKey) {
	d.sessions, d.stamps = maps.Clone(s.sessions), maps.Clone(s.stamps)
	if s.stamp[0].Same(st[0]) && s.stamp[1].Same(st[1]) {
		// The same database: the result and the event mark hold.
		d.stamp, d.mark, d.marked = st, s.mark, s.marked
	}
}

func writeKey(w *storeio.RecordWriter, k storeio.FileKey) {
	w.String(k.Path)
	w.Int(k.Size)
	w.Time(k.ModTime)
	w.Int(int64(k.Dev))
	w.Int(int64(k.Inode))
}

func readKey(r *storeio.RecordReader) storeio.FileKey {
	return storeio.FileKey{Path: r.String(), Size: r.Int(), ModTime: r.Time(), Dev: uint64(r.Int()), Inode: uint64(r.Int())}
}

// MarshalBinary is the snapshot as the cache file keeps it
// (encoding.BinaryMarshaler, which the DiskCache's gob uses), sessions in
// id order.
func (s *dbSnapshot) MarshalBinary() ([]byte, error) {
	var w storeio.RecordWriter
	writeKey(&w, s.stamp[0])
	writeKey(&w, s.stamp[1])
	w.Int(s.mark)
	w.Bool(s.marked)
	ids := slices.Sorted(maps.Keys(s.sessions))
	w.Int(int64(len(ids)))
	for _, id := range ids {
		x, st := s.sessions[id], s.stamps[id]
		for _, v := range []string{x.id, x.parentID, x.directory, x.model, x.firstPrompt, x.path,
			x.last.role, x.last.finish, x.last.errText, x.last.errName, x.last.provider} {
			w.String(v)
		}
		w.Int(x.last.errStatus)
		w.Time(x.last.at)
		w.Time(x.created)
		w.Time(x.updated)
		w.Int(x.tokensIn)
		w.Int(x.tokensOut)
		w.Bool(x.hasTokens)
		w.Float(x.cost)
		w.Bool(x.hasCost)
		w.Bool(x.last.completed)
		w.Strings(x.warnings)
		w.Int(st.updated)
		w.Int(st.seq)
	}
	return w.Bytes(), nil
}

// UnmarshalBinary reads what MarshalBinary wrote.
func (s *dbSnapshot) UnmarshalBinary(b []byte) error {
	r := storeio.NewRecordReader(b)
	var y dbSnapshot
	y.stamp[0], y.stamp[1] = readKey(r), readKey(r)
	y.mark = r.Int()
	y.marked = r.Bool()
	n := r.Int()
	if n < 0 || n > int64(len(b)) {
		return fmt.Errorf("opencode snapshot: %d sessions", n)
	}
	y.sessions, y.stamps = make(map[string]*session, n), make(map[string]stamp, n)
	for range n {
		var x session
		for _, p := range []*string{&x.id, &x.parentID, &x.directory, &x.model, &x.firstPrompt, &x.path,
			&x.last.role, &x.last.finish, &x.last.errText, &x.last.errName, &x.last.provider} {
			*p = r.String()
		}
		x.last.errStatus = r.Int()
		x.last.at = r.Time()
		x.created = r.Time()
		x.updated = r.Time()
		x.tokensIn = r.Int()
		x.tokensOut = r.Int()
		x.hasTokens = r.Bool()
		x.cost = r.Float()
		x.hasCost = r.Bool()
		x.last.completed = r.Bool()
		x.warnings = r.Strings()
		st := stamp{updated: r.Int(), seq: r.Int()}
		if !r.OK() {
			break
		}
		if _, dup := y.sessions[x.id]; dup {
			return fmt.Errorf("opencode snapshot: session %q twice", x.id)
		}
		y.sessions[x.id], y.stamps[x.id] = &x, st
	}
	if err := r.Err(); err != nil {
		return fmt.Errorf("opencode snapshot: %w", err)
	}
	*s = y
	return nil
}
