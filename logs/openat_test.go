package logs

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// plant puts something that is not a regular file at path.
type plant func(t *testing.T, path, target string)

var plants = []struct {
	name string
	put  plant
}{
	{"symlink to a file", func(t *testing.T, path, target string) {
		if err := os.WriteFile(target, []byte("keep\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, path); err != nil {
			t.Fatal(err)
		}
	}},
	{"dangling symlink", func(t *testing.T, path, target string) {
		if err := os.Symlink(target, path); err != nil {
			t.Fatal(err)
		}
	}},
	{"fifo", func(t *testing.T, path, _ string) {
		if err := syscall.Mkfifo(path, 0o600); err != nil {
			t.Fatal(err)
		}
	}},
}

// noneThrough checks that nothing was written to target: it holds what the
// plant put there, or does not exist.
func noneThrough(t *testing.T, target string) {
	t.Helper()
	b, err := os.ReadFile(target)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	if len(b) > 0 && string(b) != "keep\n" {
		t.Fatalf("%d bytes were written through a link planted in the folder: %.40q", len(b), b)
	}
}

// withBound fails the test when fn has not returned in a while: an open of
// a FIFO with no reader blocks forever.
func withBound(t *testing.T, what string, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); fn() }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatalf("%s blocked", what)
	}
}

// OpenAppend and OpenWriter never write through a link, nor block on a
// FIFO, planted at the file's name: they put a regular file in its place.
func TestOpenNeverFollowsAPlantedEntry(t *testing.T) {
	t.Parallel()
	opens := []struct {
		name  string
		write func(path string) error
	}{
		{"OpenAppend", func(path string) error {
			f, err := OpenAppend(path)
			if err != nil {
				return err
			}
			defer f.Close()
			_, err = f.WriteString("line\n")
			return err
		}},
		{"OpenWriter", func(path string) error {
			w, err := OpenWriter(path, 0, 0)
			if err != nil {
				return err
			}
			defer w.Close()
			_, err = w.Write([]byte("line\n"))
			return err
		}},
	}
	for _, o := range opens {
		for _, p := range plants {
			t.Run(o.name+"/"+p.name, func(t *testing.T) {
				t.Parallel()
				dir, outside := t.TempDir(), t.TempDir()
				path := filepath.Join(dir, "output.log")
				target := filepath.Join(outside, "target")
				p.put(t, path, target)
				var err error
				withBound(t, o.name, func() { err = o.write(path) })
				if err != nil {
					t.Fatal(err)
				}
				noneThrough(t, target)
				st, err := os.Lstat(path)
				if err != nil || !st.Mode().IsRegular() {
					t.Fatalf("%s is %v, %v: want a regular file in place of the planted one", path, st.Mode(), err)
				}
				if b, _ := os.ReadFile(path); string(b) != "line\n" {
					t.Fatalf("%s holds %q, want the line written", path, b)
				}
			})
		}
	}
}

// An agent that keeps planting a link at output.log while its log rotates
// (between the rename and the reopen, as an adversary would) gets nothing
// written through it, and the log goes on once it stops.
func TestRotationNeverFollowsAPlantedLink(t *testing.T) {
	t.Parallel()
	dir, outside := t.TempDir(), t.TempDir()
	path := filepath.Join(dir, "output.log")
	target := filepath.Join(outside, "target")
	w, err := OpenWriter(path, 4096, 3)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !stop.Load() {
			os.Symlink(target, path) // fails while the real file is there
		}
	}()
	line := []byte(fmt.Sprintf("%0500d\n", 0))
	for range 4000 { // about 500 rotations
		w.Write(line) // may fail while the planter wins every try
	}
	stop.Store(true)
	wg.Wait()
	noneThrough(t, target)
	for range 20 {
		if _, err := w.Write(line); err != nil {
			t.Fatalf("the log does not go on after the planting stopped: %v", err)
		}
	}
	st, err := os.Lstat(path)
	if err != nil || !st.Mode().IsRegular() {
		t.Fatalf("%s is %v, %v: want the log", path, st.Mode(), err)
	}
}
