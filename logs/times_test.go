package logs

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// The writer marks when bytes were written, at most once per MarkEvery, and
// keeps only the marks of files a rotation left.
func TestTimeMarks(t *testing.T) {
	p := filepath.Join(t.TempDir(), "output.log")
	w, err := OpenWriter(p, 64, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	// Marks are written by Write with the real clock; here they are made
	// directly, as Write makes them, at chosen times.
	write := func(s string, at time.Time) {
		w.mu.Lock()
		w.marks.mark(w.ino, w.size, at)
		w.f.Write([]byte(s))
		w.size += int64(len(s))
		w.mu.Unlock()
	}
	write("one\n", t0)
	write("two\n", t0.Add(100*time.Millisecond)) // within a second: no mark
	write("three\n", t0.Add(2*time.Second))
	st, _ := os.Stat(p)
	ino := inode(st)
	tm := LoadTimes(p)
	for _, tc := range []struct {
		off  int64
		want time.Time
	}{
		{0, t0}, {4, t0}, {7, t0}, {8, t0.Add(2 * time.Second)}, {13, t0.Add(2 * time.Second)},
	} {
		if got := tm.At(Position{Inode: ino, Offset: tc.off}); !got.Equal(tc.want) {
			t.Errorf("At(%d) = %v, want %v", tc.off, got, tc.want)
		}
	}
	if pos, ok := tm.Since(p, t0.Add(time.Second)); !ok || pos != (Position{Inode: ino, Offset: 8}) {
		t.Errorf("Since(+1s) = %v, %v: want offset 8", pos, ok)
	}
	if _, ok := tm.Since(p, t0.Add(time.Hour)); ok {
		t.Error("Since(+1h) found output")
	}
	// Rotations drop the marks of files that are gone.
	for i := 0; i < 4; i++ {
		if _, err := w.Write(make([]byte, 60)); err != nil {
			t.Fatal(err)
		}
	}
	after := LoadTimes(p)
	st, _ = os.Stat(p)
	cur := inode(st)
	// (A new file may get the inode a removed one had.)
	for _, ms := range after.byInode {
		for _, mk := range ms {
			if mk.at.Before(t0.Add(time.Hour)) {
				t.Errorf("marks of a rotated-out file are kept: %v", after.byInode)
			}
		}
	}
	if ms := after.byInode[cur]; len(ms) != 1 || ms[0].offset != 0 {
		t.Errorf("the current file's marks are %v, want one at its start", ms)
	}
}
