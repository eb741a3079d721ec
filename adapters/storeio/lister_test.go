package storeio

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

func isJSONL(n string) bool { return filepath.Ext(n) == ".jsonl" }

func names(ls Listing) []string {
	var out []string
	for _, k := range ls.Files {
		out = append(out, filepath.Base(k.Path))
	}
	slices.Sort(out)
	return out
}

// age sets dir's modification time an hour back, as a folder nobody touched
// lately: its listing may then be cached.
func age(t *testing.T, dir string) {
	t.Helper()
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(dir, old, old); err != nil {
		t.Fatal(err)
	}
}

func TestListerListsAcceptedFilesAndFolders(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	appendFile(t, filepath.Join(dir, "a.jsonl"), "x\n")
	appendFile(t, filepath.Join(dir, "b.txt"), "y\n")
	os.Mkdir(filepath.Join(dir, "c.jsonl"), 0o755)
	os.Symlink(filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "link.jsonl"))
	os.Symlink(filepath.Join(dir, "c.jsonl"), filepath.Join(dir, "dirlink.jsonl"))
	os.Symlink(filepath.Join(dir, "nowhere"), filepath.Join(dir, "dangling.jsonl"))
	l := NewLister(nil)
	ls, err := l.List(dir, isJSONL)
	if err != nil {
		t.Fatal(err)
	}
	if got := names(ls); !slices.Equal(got, []string{"a.jsonl", "link.jsonl"}) {
		t.Errorf("files %q, want a.jsonl and the link to it", got)
	}
	if !slices.Equal(ls.Dirs, []string{filepath.Join(dir, "c.jsonl")}) {
		t.Errorf("dirs %q", ls.Dirs)
	}
	fi, err := os.Stat(filepath.Join(dir, "a.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range ls.Files {
		if k.Path == filepath.Join(dir, "a.jsonl") && !k.Same(KeyOf(k.Path, fi)) {
			t.Errorf("key %+v, stat says %+v", k, KeyOf(k.Path, fi))
		}
	}
	if _, err := l.List(filepath.Join(dir, "nope"), isJSONL); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing folder: %v", err)
	}
}

// A cached listing still stats every file on every call, and a change to
// the folder's entries is seen at once.
func TestListerSeesEveryChange(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a := filepath.Join(dir, "a.jsonl")
	appendFile(t, a, "x\n")
	appendFile(t, filepath.Join(dir, "gone.jsonl"), "x\n")
	age(t, dir)
	l := NewLister(nil)
	if _, err := l.List(dir, isJSONL); err != nil {
		t.Fatal(err)
	}
	// The folder is unchanged, so its entries come from the cache; the file
	// grew, and the key must say so.
	appendFile(t, a, "more\n")
	ls, err := l.List(dir, isJSONL)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range ls.Files {
		if k.Path == a && k.Size != int64(len("x\nmore\n")) {
			t.Errorf("a.jsonl has size %d in the listing, want the grown size", k.Size)
		}
	}
	// A removed file is left out; an added one shows up.
	os.Remove(filepath.Join(dir, "gone.jsonl"))
	appendFile(t, filepath.Join(dir, "new.jsonl"), "y\n")
	ls, err = l.List(dir, isJSONL)
	if err != nil {
		t.Fatal(err)
	}
	if got := names(ls); !slices.Equal(got, []string{"a.jsonl", "new.jsonl"}) {
		t.Errorf("after a remove and an add: %q", got)
	}
}

// A folder read soon after its last change is not trusted from the cache:
// an entry added within the same clock tick leaves the folder's stat as it
// was.
func TestListerRereadsARecentlyChangedFolder(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	appendFile(t, filepath.Join(dir, "a.jsonl"), "x\n")
	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	l := NewLister(nil)
	if _, err := l.List(dir, isJSONL); err != nil {
		t.Fatal(err)
	}
	// An add in the same tick: put the folder's times back as they were.
	appendFile(t, filepath.Join(dir, "b.jsonl"), "y\n")
	if err := os.Chtimes(dir, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	ls, err := l.List(dir, isJSONL)
	if err != nil {
		t.Fatal(err)
	}
	if got := names(ls); !slices.Equal(got, []string{"a.jsonl", "b.jsonl"}) {
		t.Errorf("files %q: a same-tick add was missed", got)
	}
}

func TestListerSweepForgetsUnlistedFolders(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	a, b := filepath.Join(root, "a"), filepath.Join(root, "b")
	os.Mkdir(a, 0o755)
	os.Mkdir(b, 0o755)
	l := NewLister(nil)
	l.List(a, isJSONL)
	l.List(b, isJSONL)
	l.Sweep()
	l.List(a, isJSONL)
	l.Sweep()
	if _, ok := l.folders[b]; ok {
		t.Error("b was not listed since the last sweep but is still cached")
	}
	if _, ok := l.folders[a]; !ok {
		t.Error("a was listed and is gone from the cache")
	}
}

func TestListerWalk(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	for _, p := range []string{"a.jsonl", "x.txt", "d1/b.jsonl", "d1/d2/c.jsonl", "d1/d2/d3/deep.jsonl"} {
		os.MkdirAll(filepath.Join(root, filepath.Dir(p)), 0o755)
		appendFile(t, filepath.Join(root, p), "{}\n")
	}
	notAFolder := filepath.Join(root, "x.txt")
	missing := filepath.Join(root, "missing")
	rel := func(keys []FileKey) []string {
		var out []string
		for _, k := range keys {
			r, _ := filepath.Rel(root, k.Path)
			out = append(out, r)
		}
		slices.Sort(out)
		return out
	}
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		roots   []string
		depth   int
		want    []string
		wantErr bool
	}{
		{"the roots only", []string{root}, 0, []string{"a.jsonl"}, false},
		{"two levels down", []string{root}, 2, []string{"a.jsonl", "d1/b.jsonl", "d1/d2/c.jsonl"}, false},
		{"a missing root is empty", []string{missing}, 3, nil, false},
		{"an unreadable root beside a good one", []string{notAFolder, root}, 1, []string{"a.jsonl", "d1/b.jsonl"}, false},
		{"no root readable", []string{notAFolder}, 1, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			keys, err := NewLister(nil).Walk(ctx, tc.roots, tc.depth, isJSONL)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want an error: %v", err, tc.wantErr)
			}
			if got := rel(keys); !slices.Equal(got, tc.want) {
				t.Errorf("files %q, want %q", got, tc.want)
			}
		})
	}
	ctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := NewLister(nil).Walk(ctx, []string{root}, 3, isJSONL); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled walk: %v", err)
	}
}

// The version moves exactly when a walk's answer differs from the walk
// before: with a watch and without one (every folder stat'ed).
func TestListerVersionMovesOnlyOnChange(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		change func(t *testing.T, root string)
		moves  bool
	}{
		{"nothing", func(*testing.T, string) {}, false},
		{"a file grew", func(t *testing.T, root string) { appendFile(t, filepath.Join(root, "a", "1.jsonl"), "more\n") }, true},
		{"a file added", func(t *testing.T, root string) { appendFile(t, filepath.Join(root, "b", "3.jsonl"), "x\n") }, true},
		{"a file removed", func(t *testing.T, root string) { os.Remove(filepath.Join(root, "b", "2.jsonl")) }, true},
		{"an ignored file added", func(t *testing.T, root string) { appendFile(t, filepath.Join(root, "a", "notes.txt"), "x\n") }, false},
		{"a folder added", func(t *testing.T, root string) {
			if err := os.Mkdir(filepath.Join(root, "c"), 0o755); err != nil {
				t.Fatal(err)
			}
		}, true},
		{"a folder removed", func(t *testing.T, root string) { os.RemoveAll(filepath.Join(root, "b")) }, true},
	}
	for _, watched := range []bool{false, true} {
		for _, tc := range cases {
			t.Run(fmt.Sprintf("%s/watched=%v", tc.name, watched), func(t *testing.T) {
				root := t.TempDir()
				for _, p := range []string{"a/1.jsonl", "b/2.jsonl"} {
					if err := os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755); err != nil {
						t.Fatal(err)
					}
					appendFile(t, filepath.Join(root, p), "x\n")
				}
				var watch FolderWatch
				if watched {
					w, err := NewWatcher()
					if err != nil {
						t.Skip(err)
					}
					t.Cleanup(func() { w.Close() })
					watch = w
				}
				l := NewLister(watch)
				ctx := context.Background()
				if _, err := l.Walk(ctx, []string{root}, 1, isJSONL); err != nil {
					t.Fatal(err)
				}
				before := l.Version()
				if _, err := l.Walk(ctx, []string{root}, 1, isJSONL); err != nil {
					t.Fatal(err)
				}
				if l.Version() != before {
					t.Fatalf("a second walk of an unchanged store moved the version")
				}
				tc.change(t, root)
				if _, err := l.Walk(ctx, []string{root}, 1, isJSONL); err != nil {
					t.Fatal(err)
				}
				if moved := l.Version() != before; moved != tc.moves {
					t.Errorf("version moved: %v, want %v", moved, tc.moves)
				}
			})
		}
	}
}
