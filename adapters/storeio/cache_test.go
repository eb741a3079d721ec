package storeio

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// lineCount is an incremental value: the number of complete lines, read
// from where the previous version stopped.
type lineCount struct {
	lines       int
	offset      int64
	fingerprint []byte
	readFrom    int64 // where this fill started reading, for the test
}

func countLines(f *os.File, key FileKey, prev *Entry[lineCount]) (lineCount, error) {
	var v lineCount
	if prev != nil {
		if off := ResumeOffset(f, key, prev.Key, prev.Value.offset, prev.Value.fingerprint); off > 0 {
			v = prev.Value
		}
	}
	v.readFrom = v.offset
	res, err := ScanLines(io.NewSectionReader(f, v.offset, key.Size-v.offset), 1<<20, func([]byte) error {
		v.lines++
		return nil
	})
	if err != nil {
		return lineCount{}, err
	}
	v.offset += res.Consumed
	if v.fingerprint, err = Fingerprint(f, v.offset); err != nil {
		return lineCount{}, err
	}
	return v, nil
}

func appendFile(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

func TestFileCacheRevalidates(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "a.jsonl")
	appendFile(t, path, "1\n2\n")
	c := NewFileCache[lineCount](10)

	steps := []struct {
		name     string
		change   func()
		lines    int
		readFrom int64
		hit      bool
	}{
		{"first read", func() {}, 2, 0, false},
		{"unchanged: cached", func() {}, 2, 0, true},
		{"appended: read only the new bytes", func() { appendFile(t, path, "3\n") }, 3, 4, false},
		{"half-written line waits", func() { appendFile(t, path, "4") }, 3, 6, false},
		{"line completed", func() { appendFile(t, path, "\n") }, 4, 6, false},
		{"replaced by another file", func() {
			tmp := filepath.Join(dir, "tmp")
			os.WriteFile(tmp, []byte("x\n"), 0o644)
			os.Rename(tmp, path)
		}, 1, 0, false},
		{"rewritten in place, same inode, grown", func() {
			os.WriteFile(path, []byte("a\nb\nc\n"), 0o644)
		}, 3, 0, false},
	}
	for _, s := range steps {
		s.change()
		before := c.Stats()
		v, key, err := c.Get(path, countLines)
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		hit := c.Stats().Hits > before.Hits
		if v.lines != s.lines || v.readFrom != s.readFrom || hit != s.hit {
			t.Errorf("%s: lines %d from %d hit %v; want %d from %d hit %v", s.name, v.lines, v.readFrom, hit, s.lines, s.readFrom, s.hit)
		}
		if key.Path != path || key.Inode == 0 {
			t.Errorf("%s: key %+v", s.name, key)
		}
	}

	os.Remove(path)
	if _, _, err := c.Get(path, countLines); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("vanished file: %v", err)
	}
	if c.Stats().Entries != 0 {
		t.Errorf("vanished file still cached")
	}
}

func TestFileCacheBoundedAndConcurrent(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var paths []string
	for i := 0; i < 20; i++ {
		p := filepath.Join(dir, fmt.Sprintf("%d.jsonl", i))
		appendFile(t, p, "x\n")
		paths = append(paths, p)
	}
	c := NewFileCache[lineCount](5)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				p := paths[(i*7+g)%len(paths)]
				if i%50 == 0 {
					appendFile(t, p, "y\n")
				}
				if _, _, err := c.Get(p, countLines); err != nil {
					t.Error(err)
					return
				}
			}
		}(g)
	}
	wg.Wait()
	if n := c.Stats().Entries; n > 5 {
		t.Errorf("%d entries, bound is 5", n)
	}
	// Whatever the interleaving, a Get after the writes sees every line.
	for _, p := range paths {
		v, _, err := c.Get(p, countLines)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(p)
		want := 0
		for _, ch := range b {
			if ch == '\n' {
				want++
			}
		}
		if v.lines != want {
			t.Errorf("%s: %d lines, file has %d", p, v.lines, want)
		}
	}
	c.Retain(func(p string) bool { return p == paths[len(paths)-1] })
	if n := c.Stats().Entries; n != 1 {
		t.Errorf("after Retain: %d entries", n)
	}
}

func TestFileCacheFillErrorNotCached(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "a")
	appendFile(t, path, "x\n")
	c := NewFileCache[int](2)
	boom := errors.New("boom")
	if _, _, err := c.Get(path, func(*os.File, FileKey, *Entry[int]) (int, error) { return 0, boom }); !errors.Is(err, boom) {
		t.Fatalf("fill error: %v", err)
	}
	v, _, err := c.Get(path, func(*os.File, FileKey, *Entry[int]) (int, error) { return 7, nil })
	if err != nil || v != 7 {
		t.Errorf("after a failed fill: %d %v", v, err)
	}
}

// Concurrent misses on one file version share one read; a newer version is
// read on its own.
func TestFileCacheSharesAReadInProgress(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.jsonl")
	appendFile(t, path, "one\n")
	c := NewFileCache[int](10)
	var fills atomic.Int32
	release := make(chan struct{})
	slowFill := func(f *os.File, key FileKey, _ *Entry[int]) (int, error) {
		fills.Add(1)
		<-release
		return int(key.Size), nil
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	key := KeyOf(path, fi)
	const callers = 5
	got := make(chan int, callers)
	for range callers {
		go func() {
			v, _, err := c.GetKey(key, slowFill)
			if err != nil {
				t.Error(err)
			}
			got <- v
		}()
	}
	// Let every caller reach the cache before the first read ends.
	for deadline := time.Now().Add(5 * time.Second); c.Stats().Misses < callers && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	close(release)
	for range callers {
		if v := <-got; v != 4 {
			t.Errorf("a caller got %d, want 4", v)
		}
	}
	if n := fills.Load(); n != 1 {
		t.Errorf("%d reads for %d concurrent callers of one version, want 1", n, callers)
	}
	appendFile(t, path, "two\n")
	if v, _, err := c.Get(path, slowFill); err != nil || v != 8 || fills.Load() != 2 {
		t.Errorf("after a change: %d, %v, %d reads; want 8 from a second read", v, err, fills.Load())
	}
}
