package storeiotest

import (
	"context"
	"errors"
	"os"
	"reflect"
	"testing"

	"github.com/agentctl/agentctl/adapters"
	"github.com/agentctl/agentctl/adapters/storeio"
)

// MemoStore is an adapter's store, generated with a few sessions, for
// CheckMemo.
type MemoStore struct {
	// New returns a new adapter over the store, told of changed folders by
	// watch (nil: it stats them), and a count of the session files it has
	// read (parsed) so far.
	New func(watch adapters.FolderWatch) (adapters.Adapter, func() int64)
	// Grow appends to a session file what the agent would: a record that
	// changes what Discover says of the session.
	Grow func(t *testing.T, path string)
	// Stats, when set, counts the files a's listings of its folders have
	// stat'ed (see storeio.Lister.Stats): a session read alone lists none.
	Stats func(a adapters.Adapter) uint64
}

// CheckMemo checks that a Discover of an unchanged store reads no session
// file and answers with the sessions it built before, and that a change to one file completed
// before a Discover is in its answer, at the cost of that file alone:
// with a folder watch and without one.
func CheckMemo(t *testing.T, s MemoStore) {
	cases := []struct {
		name string
		// change changes the store and returns the path it changed.
		change func(t *testing.T, ss []adapters.NativeSession) string
		// reads is how many files the next Discover reads; delta how
		// many sessions it finds more than before.
		reads, delta int
	}{
		{"unchanged", func(*testing.T, []adapters.NativeSession) string { return "" }, 0, 0},
		{"one file grew", func(t *testing.T, ss []adapters.NativeSession) string {
			s.Grow(t, ss[0].Path)
			return ss[0].Path
		}, 1, 0},
		{"one file removed", func(t *testing.T, ss []adapters.NativeSession) string {
			if err := os.Remove(ss[0].Path); err != nil {
				t.Fatal(err)
			}
			return ss[0].Path
		}, 0, -1},
	}
	for _, watched := range []bool{false, true} {
		for _, tc := range cases {
			name := tc.name + "/stat"
			if watched {
				name = tc.name + "/watched"
			}
			t.Run(name, func(t *testing.T) {
				var watch adapters.FolderWatch
				if watched {
					w, err := storeio.NewWatcher()
					if err != nil {
						t.Skip(err)
					}
					t.Cleanup(func() { w.Close() })
					watch = w
				}
				a, reads := s.New(watch)
				ctx := context.Background()
				before, err := a.Discover(ctx)
				if err != nil || len(before) == 0 {
					t.Fatalf("first Discover: %d sessions, %v", len(before), err)
				}
				// A second look at the unchanged store, so the change below
				// is measured against a warm adapter (a first read of an
				// index may leave it changed: SQLite's side files).
				warm, err := a.Discover(ctx)
				if err != nil {
					t.Fatal(err)
				}
				read := reads()
				changed := tc.change(t, before)
				after, err := a.Discover(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if got := reads() - read; got != int64(tc.reads) {
					t.Errorf("read %d session files, want %d", got, tc.reads)
				}
				// The unchanged store's sessions are those built before,
				// not built again.
				if same := len(after) > 0 && len(warm) > 0 && &after[0] == &warm[0]; same != (tc.name == "unchanged") {
					t.Errorf("the sessions built before reused: %v", same)
				}
				if got := len(after) - len(before); got != tc.delta {
					t.Errorf("%d sessions more than before, want %d", got, tc.delta)
				}
				old, now := byPath(before), byPath(after)
				for p, ns := range old {
					n, ok := now[p]
					switch {
					case p == changed && tc.delta < 0 && ok:
						t.Errorf("%s was removed and is still listed", p)
					case p == changed && tc.delta == 0 && reflect.DeepEqual(ns, n):
						t.Errorf("%s changed and Discover says the same of it", p)
					case p != changed && !reflect.DeepEqual(ns, n):
						t.Errorf("%s did not change and Discover says something else of it:\n%+v\n%+v", p, ns, n)
					}
				}
			})
		}
	}
}

func byPath(ss []adapters.NativeSession) map[string]adapters.NativeSession {
	out := make(map[string]adapters.NativeSession, len(ss))
	for _, ns := range ss {
		out[ns.Path] = ns
	}
	return out
}

// AppendLine appends line and a newline to the file at path, as an agent
// adds a record.
func AppendLine(t *testing.T, path, line string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(line + "\n"); err != nil {
		t.Fatal(err)
	}
}

// CheckDiscoverOne checks that an adapter's DiscoverOne says of each
// session what Discover says of it, sees a change to its file made since,
// and finds no session under an id the store does not hold.
func CheckDiscoverOne(t *testing.T, s MemoStore) {
	a, _ := s.New(nil)
	one, ok := a.(adapters.OneReader)
	if !ok {
		t.Fatalf("%s does not read one session", a.Name())
	}
	ctx := context.Background()
	all, err := a.Discover(ctx)
	if err != nil || len(all) == 0 {
		t.Fatalf("Discover: %d sessions, %v", len(all), err)
	}
	var stats uint64
	if s.Stats != nil {
		stats = s.Stats(a)
	}
	for _, ns := range all {
		got, err := one.DiscoverOne(ctx, ns.NativeID)
		if err != nil || !reflect.DeepEqual(got, ns) {
			t.Errorf("DiscoverOne(%s) = %+v, %v; Discover says %+v", ns.NativeID, got, err, ns)
		}
	}
	s.Grow(t, all[0].Path)
	got, err := one.DiscoverOne(ctx, all[0].NativeID)
	if err != nil || reflect.DeepEqual(got, all[0]) {
		t.Errorf("after its file grew, DiscoverOne(%s) = %+v, %v: as before", all[0].NativeID, got, err)
	}
	if s.Stats != nil && s.Stats(a) != stats {
		t.Errorf("reading one session at a time listed the store's folders")
	}
	again, err := a.Discover(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range again {
		if ns.NativeID == all[0].NativeID && !reflect.DeepEqual(ns, got) {
			t.Errorf("after its file grew, DiscoverOne(%s) = %+v; Discover says %+v", ns.NativeID, got, ns)
		}
	}
	if _, err := one.DiscoverOne(ctx, "00000000-0000-0000-0000-000000000000"); !errors.Is(err, adapters.ErrNoSession) {
		t.Errorf("DiscoverOne of an id the store does not hold: %v, want ErrNoSession", err)
	}
}
