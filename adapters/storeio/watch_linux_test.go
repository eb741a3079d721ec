//go:build linux

package storeio

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"golang.org/x/sys/unix"
)

func newTestWatcher(t *testing.T, background bool) *Watcher {
	t.Helper()
	w, err := newWatcher(background)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := w.Close(); err != nil {
			t.Error(err)
		}
	})
	return w
}

// listNames lists dir through l and returns the files' names, with the
// sizes the listing says they have.
func listNames(t *testing.T, l *Lister, dir string) []string {
	t.Helper()
	ls, err := l.List(dir, isJSONL)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, k := range ls.Files {
		out = append(out, fmt.Sprintf("%s:%d", filepath.Base(k.Path), k.Size))
	}
	slices.Sort(out)
	return out
}

func TestWatchedListerSeesEveryChangeAndNothingElse(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a := filepath.Join(dir, "a.jsonl")
	appendFile(t, a, "x\n")
	age(t, dir)
	l := NewLister(newTestWatcher(t, true))
	steps := []struct {
		name   string
		change func()
		want   []string
		stats  bool // whether the listing had to stat the files
	}{
		{"first listing", func() {}, []string{"a.jsonl:2"}, true},
		{"nothing changed", func() {}, []string{"a.jsonl:2"}, false},
		{"a new session file", func() { appendFile(t, filepath.Join(dir, "b.jsonl"), "y\n") }, []string{"a.jsonl:2", "b.jsonl:2"}, true},
		{"nothing changed again", func() {}, []string{"a.jsonl:2", "b.jsonl:2"}, false},
		{"a file grew", func() { appendFile(t, a, "more\n") }, []string{"a.jsonl:7", "b.jsonl:2"}, true},
		{"a file is removed", func() { os.Remove(a) }, []string{"b.jsonl:2"}, true},
		{"a file is renamed in", func() {
			tmp := filepath.Join(t.TempDir(), "c.tmp")
			appendFile(t, tmp, "zz\n")
			if err := os.Rename(tmp, filepath.Join(dir, "c.jsonl")); err != nil && !os.IsExist(err) {
				// Another file system: copy instead.
				appendFile(t, filepath.Join(dir, "c.jsonl"), "zz\n")
			}
		}, []string{"b.jsonl:2", "c.jsonl:3"}, true},
		{"an unaccepted file changes", func() { appendFile(t, filepath.Join(dir, "notes.txt"), "n\n") }, []string{"b.jsonl:2", "c.jsonl:3"}, true},
		{"read by a reader", func() { os.ReadFile(filepath.Join(dir, "b.jsonl")) }, []string{"b.jsonl:2", "c.jsonl:3"}, false},
	}
	for _, s := range steps {
		s.change()
		before := l.Stats()
		if got := listNames(t, l, dir); !slices.Equal(got, s.want) {
			t.Errorf("%s: listed %v, want %v", s.name, got, s.want)
		}
		if stated := l.Stats() != before; stated != s.stats {
			t.Errorf("%s: stat'ed the files: %v, want %v", s.name, stated, s.stats)
		}
	}
}

func TestWatcherTokens(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	dir := filepath.Join(root, "d")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	w := newTestWatcher(t, false)
	tok, ok := w.Token(dir)
	if !ok {
		t.Fatal("a folder that exists is not watched")
	}
	if again, _ := w.Token(dir); again != tok {
		t.Errorf("token moved with no change: %d then %d", tok, again)
	}
	appendFile(t, filepath.Join(dir, "f"), "x")
	moved, _ := w.Token(dir)
	if moved == tok {
		t.Error("a new file did not move the token")
	}
	// The folder is removed and made again: its watch ended, so a new one
	// is set, with a token never handed out before.
	os.RemoveAll(dir)
	if _, ok := w.Token(dir); ok {
		t.Error("a removed folder is still watched")
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	renewed, ok := w.Token(dir)
	if !ok || renewed == tok || renewed == moved {
		t.Errorf("made again: token %d (watched %v), earlier %d and %d", renewed, ok, tok, moved)
	}
	if _, ok := w.Token(filepath.Join(root, "missing")); ok {
		t.Error("a missing folder is watched")
	}
	if r := w.Report(); r.Folders != 1 || r.Unwatched != 0 {
		t.Errorf("report %+v, want one folder watched and none failed", r)
	}
}

func TestWatcherOverflowRereadsEveryFolder(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	quiet, busy := filepath.Join(root, "quiet"), filepath.Join(root, "busy")
	for _, d := range []string{quiet, busy} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	appendFile(t, filepath.Join(quiet, "q.jsonl"), "q\n")
	age(t, quiet)
	// No reading goroutine: the events stay queued until the next Token,
	// so more of them than the kernel queues overflow it.
	w := newTestWatcher(t, false)
	l := NewLister(w)
	listNames(t, l, quiet)
	listNames(t, l, busy)
	queued := readLimit("/proc/sys/fs/inotify/max_queued_events")
	if queued <= 0 || queued > 1<<17 {
		t.Skipf("max_queued_events is %d: too many events to make in a test", queued)
	}
	for i := 0; i <= queued; i++ {
		f, err := os.Create(filepath.Join(busy, fmt.Sprintf("%d.tmp", i)))
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	// The quiet folder's own change is among the lost events: only the
	// overflow says it may have changed.
	appendFile(t, filepath.Join(quiet, "q.jsonl"), "more\n")
	before := l.Stats()
	if got := listNames(t, l, quiet); !slices.Equal(got, []string{"q.jsonl:7"}) {
		t.Errorf("after an overflow the quiet folder lists %v, want the grown file", got)
	}
	if l.Stats() == before {
		t.Error("after an overflow the quiet folder was answered without a stat")
	}
	if r := w.Report(); r.Overflows == 0 || r.LastOverflow.IsZero() {
		t.Errorf("report %+v, want the overflow counted", r)
	}
}

func TestUnwatchableFolderIsReadByStatAndReported(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	ok, full := filepath.Join(root, "ok"), filepath.Join(root, "full")
	for _, d := range []string{ok, full} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		appendFile(t, filepath.Join(d, "s.jsonl"), "x\n")
		age(t, d)
	}
	w := newTestWatcher(t, true)
	real := w.addWatch
	w.addWatch = func(dir string) (int, error) {
		if dir == full {
			return 0, unix.ENOSPC
		}
		return real(dir)
	}
	l := NewLister(w)
	for range 2 {
		listNames(t, l, ok)
		listNames(t, l, full)
	}
	appendFile(t, filepath.Join(full, "s.jsonl"), "y\n")
	before := l.Stats()
	if got := listNames(t, l, full); !slices.Equal(got, []string{"s.jsonl:4"}) {
		t.Errorf("the unwatched folder lists %v, want the grown file", got)
	}
	if l.Stats() == before {
		t.Error("the unwatched folder was answered without a stat")
	}
	r := w.Report()
	if r.Folders != 1 || r.Unwatched != 1 || len(r.Failures) != 1 || r.Failures[0].Folder != full {
		t.Fatalf("report %+v, want one folder watched and %s failed", r, full)
	}
	if r.Failures[0].Reason == "" {
		t.Error("the failure gives no reason")
	}
}

func TestWatcherSymlinkedFileIsStatted(t *testing.T) {
	t.Parallel()
	dir, elsewhere := t.TempDir(), t.TempDir()
	target := filepath.Join(elsewhere, "t.jsonl")
	appendFile(t, target, "x\n")
	if err := os.Symlink(target, filepath.Join(dir, "link.jsonl")); err != nil {
		t.Fatal(err)
	}
	age(t, dir)
	l := NewLister(newTestWatcher(t, true))
	listNames(t, l, dir)
	// The target changes in a folder that is not watched.
	appendFile(t, target, "grown\n")
	if got := listNames(t, l, dir); !slices.Equal(got, []string{"link.jsonl:8"}) {
		t.Errorf("listed %v, want the link's target as it is now", got)
	}
}
