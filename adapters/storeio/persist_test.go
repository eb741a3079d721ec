package storeio

import (
	"bytes"
	"encoding/gob"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// lines is a value a cache file can keep: exported fields only.
type lines struct{ N int }

type countingFill struct {
	mu    sync.Mutex
	calls []string
}

func (c *countingFill) fill(f *os.File, key FileKey, _ *Entry[lines]) (lines, error) {
	c.mu.Lock()
	c.calls = append(c.calls, filepath.Base(key.Path))
	c.mu.Unlock()
	b, err := io.ReadAll(io.NewSectionReader(f, 0, key.Size))
	if err != nil {
		return lines{}, err
	}
	return lines{N: strings.Count(string(b), "\n")}, nil
}

type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) logf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
}

func newDisk(path string, log *logLines) *DiskCache[lines] {
	return &DiskCache[lines]{Cache: NewFileCache[lines](100), Path: path, Kind: "lines-1", Logf: log.logf}
}

// A cache saved by one process serves the next without reading an
// unchanged file again, and is revalidated by stat as the in-memory one
// is: a file that changed is read again.
func TestDiskCacheServesUnchangedFilesAfterARestart(t *testing.T) {
	dir := t.TempDir()
	var files []string
	for i := range 3 {
		p := filepath.Join(dir, fmt.Sprintf("f%d", i))
		appendFile(t, p, strings.Repeat("x\n", i+1))
		files = append(files, p)
	}
	cachePath := filepath.Join(t.TempDir(), "cache", "lines.gob")
	log := &logLines{}
	first := newDisk(cachePath, log)
	first.Load() // no file yet: nothing, and nothing logged
	var fill countingFill
	for _, p := range files {
		if _, _, err := first.Cache.Get(p, fill.fill); err != nil {
			t.Fatal(err)
		}
	}
	first.Save(false)
	if _, err := os.Stat(cachePath); err != nil {
		t.Fatalf("no cache file after the first reads: %v", err)
	}

	// Change one file (same size, new time), as an agent's write would.
	time.Sleep(10 * time.Millisecond)
	if err := os.WriteFile(files[1], []byte("y\ny\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	second := newDisk(cachePath, log)
	second.Load()
	fill = countingFill{}
	for i, p := range files {
		v, _, err := second.Cache.Get(p, fill.fill)
		if err != nil || v.N != i+1 {
			t.Fatalf("%s = %+v, %v; want %d lines", p, v, err, i+1)
		}
	}
	if strings.Join(fill.calls, ",") != "f1" {
		t.Errorf("after a restart, read %q; want only the changed f1", fill.calls)
	}
	if len(log.lines) > 0 {
		t.Errorf("logged %q", log.lines)
	}
	// f1 was read again: the next save writes; with nothing read since,
	// the one after does not.
	second.Save(true)
	written, err := os.Stat(cachePath)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond)
	second.Save(true)
	if again, _ := os.Stat(cachePath); !again.ModTime().Equal(written.ModTime()) {
		t.Errorf("a save with nothing read since wrote the file again")
	}
}

// A cache file that cannot be used is ignored with a log line: the files
// are read as without it.
func TestDiskCacheIgnoresABadFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	appendFile(t, p, "a\nb\n")
	for _, tc := range []struct {
		name  string
		write func(path string)
		log   string
	}{
		{"corrupt", func(path string) { os.WriteFile(path, []byte("not a cache file"), 0o600) }, "decode"},
		{"truncated", func(path string) {
			d := newDisk(path, &logLines{})
			d.Cache.Get(p, (&countingFill{}).fill)
			d.Save(true)
			b, _ := os.ReadFile(path)
			os.WriteFile(path, b[:len(b)/2], 0o600)
		}, "decode"},
		{"another kind", func(path string) {
			d := newDisk(path, &logLines{})
			d.Kind = "lines-0"
			d.Cache.Get(p, (&countingFill{}).fill)
			d.Save(true)
		}, "not \"lines-1\""},
		{"a kind of 1 MiB", func(path string) {
			d := newDisk(path, &logLines{})
			d.Kind = strings.Repeat("k", 1<<20)
			d.Cache.Get(p, (&countingFill{}).fill)
			d.Save(true)
		}, fmt.Sprintf("kkk…\" version %d, not \"lines-1\"", cacheFileVersion)},
		{"the layout before (one value)", func(path string) {
			var b bytes.Buffer
			gob.NewEncoder(&b).Encode(struct {
				Version int
				Kind    string
				Entries []Entry[lines]
			}{1, "lines-1", []Entry[lines]{{Key: FileKey{Path: p}, Value: lines{N: 99}}}})
			os.WriteFile(path, b.Bytes(), 0o600)
		}, "version 1, not"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "c.gob")
			tc.write(path)
			log := &logLines{}
			d := newDisk(path, log)
			d.Load()
			var fill countingFill
			v, _, err := d.Cache.Get(p, fill.fill)
			if err != nil || v.N != 2 || len(fill.calls) != 1 {
				t.Fatalf("with a %s cache file: %+v, %v, reads %q", tc.name, v, err, fill.calls)
			}
			if len(log.lines) != 1 || !strings.Contains(log.lines[0], "ignored") || !strings.Contains(log.lines[0], tc.log) || len(log.lines[0]) > 1000 {
				t.Errorf("log %.2000q, want one line saying the file was ignored (%s)", log.lines, tc.log)
			}
			// The next save replaces it with a good one.
			d.Save(true)
			again := newDisk(path, log)
			again.Load()
			fill = countingFill{}
			if _, _, err := again.Cache.Get(p, fill.fill); err != nil || len(fill.calls) != 0 {
				t.Errorf("after a save, reads %q, %v; want none", fill.calls, err)
			}
		})
	}
}

// A cache file holds at most the cache's bound of entries, and loading one
// never grows the cache past it.
func TestDiskCacheIsBounded(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cachePath := filepath.Join(t.TempDir(), "c.gob")
	big := &DiskCache[lines]{Cache: NewFileCache[lines](10), Path: cachePath, Kind: "lines-1"}
	for i := range 20 {
		p := filepath.Join(dir, fmt.Sprintf("f%02d", i))
		appendFile(t, p, "x\n")
		big.Cache.Get(p, (&countingFill{}).fill)
	}
	big.Save(true)
	small := &DiskCache[lines]{Cache: NewFileCache[lines](4), Path: cachePath, Kind: "lines-1"}
	small.Load()
	if n := small.Cache.Stats().Entries; n != 4 {
		t.Errorf("loaded %d entries into a cache of 4", n)
	}
	if n := big.Cache.Stats().Entries; n != 10 {
		t.Errorf("the cache of 10 holds %d", n)
	}
}

// Whatever the cache file holds, loading it neither panics nor grows the
// cache past its bound, and the cache serves afterwards.
func FuzzDiskCacheLoad(f *testing.F) {
	dir := f.TempDir()
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, []byte("a\nb\n"), 0o644); err != nil {
		f.Fatal(err)
	}
	good := filepath.Join(dir, "good.gob")
	d := &DiskCache[lines]{Cache: NewFileCache[lines](8), Path: good, Kind: "lines-1"}
	d.Cache.Get(file, (&countingFill{}).fill)
	d.Save(true)
	seed, err := os.ReadFile(good)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	f.Add([]byte{})
	f.Add([]byte("garbage"))
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "c.gob")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		d := &DiskCache[lines]{Cache: NewFileCache[lines](8), Path: path, Kind: "lines-1", Logf: func(string, ...any) {}}
		d.Load()
		if n := d.Cache.Stats().Entries; n > 8 {
			t.Fatalf("%d entries loaded into a cache of 8", n)
		}
		if _, _, err := d.Cache.Get(file, (&countingFill{}).fill); err != nil {
			t.Fatalf("the cache does not serve after loading a bad file: %v", err)
		}
	})
}

// A value put by its reader (not read through the cache) is saved, and
// after a restart Kept returns it whatever the file's version now, which
// Get would not.
func TestDiskCachePutAndKept(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	appendFile(t, p, "a\n")
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	cachePath := filepath.Join(t.TempDir(), "lines.gob")
	log := &logLines{}
	first := newDisk(cachePath, log)
	first.Load()
	first.Put(KeyOf(p, fi), lines{N: 7})
	first.Save(false)

	appendFile(t, p, "b\n") // the file changed since
	second := newDisk(cachePath, log)
	second.Load()
	if e, ok := second.Kept(p); !ok || e.Value.N != 7 || e.Key.Size != fi.Size() {
		t.Errorf("Kept = %+v, %v; want the value put, at its key", e, ok)
	}
	if _, ok := second.Kept(filepath.Join(dir, "other")); ok {
		t.Error("Kept returned a value for a path never put")
	}
	var fill countingFill
	if v, _, err := second.Cache.Get(p, fill.fill); err != nil || v.N != 2 || len(fill.calls) != 1 {
		t.Errorf("Get of the changed file = %+v, %v after %q; want it read again", v, err, fill.calls)
	}
	if len(log.lines) > 0 {
		t.Errorf("logged %q", log.lines)
	}
}

// A cache file that is not a regular file of agentctl's (a FIFO, whose
// open would block for ever; a symbolic link; a file over the bound) is
// refused at once, with a log line, without reading it: the discovery
// goes on without it, and the next save replaces it.
func TestDiskCacheRefusesWhatIsNoCacheFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	appendFile(t, p, "a\nb\n")
	for _, tc := range []struct {
		name string
		make func(t *testing.T, path string)
		log  string
	}{
		{"fifo", func(t *testing.T, path string) {
			if err := syscall.Mkfifo(path, 0o600); err != nil {
				t.Fatal(err)
			}
		}, "not a regular file"},
		{"symlink", func(t *testing.T, path string) {
			good := filepath.Join(t.TempDir(), "good.gob")
			d := newDisk(good, &logLines{})
			d.Cache.Get(p, (&countingFill{}).fill)
			d.Save(true)
			if err := os.Symlink(good, path); err != nil {
				t.Fatal(err)
			}
		}, "symbolic link"},
		{"huge", func(t *testing.T, path string) {
			// Sparse: the bound is checked before a byte is read.
			f, err := os.Create(path)
			if err != nil {
				t.Fatal(err)
			}
			f.Truncate(maxCacheFile + 1)
			f.Close()
		}, "over the bound"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "c.gob")
			tc.make(t, path)
			log := &logLines{}
			d := newDisk(path, log)
			d.wait = time.Minute // what is refused is refused at once
			loaded := make(chan struct{})
			go func() { d.Load(); close(loaded) }()
			select {
			case <-loaded:
			case <-time.After(20 * time.Second):
				// Unblock a FIFO's open so the test can end.
				if f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
					f.Close()
				}
				t.Fatalf("Load of a %s still waits", tc.name)
			}
			log.mu.Lock()
			said := strings.Join(log.lines, "\n")
			log.mu.Unlock()
			if !strings.Contains(said, "ignored") || !strings.Contains(said, tc.log) {
				t.Errorf("log %q, want the file ignored (%s)", said, tc.log)
			}
			var fill countingFill
			if v, _, err := d.Cache.Get(p, fill.fill); err != nil || v.N != 2 || len(fill.calls) != 1 {
				t.Fatalf("with a %s cache file: %+v, %v, reads %q", tc.name, v, err, fill.calls)
			}
			d.Save(true)
			if fi, err := os.Lstat(path); err != nil || !fi.Mode().IsRegular() {
				t.Errorf("after a save: %v, %v; want a regular file", fi, err)
			}
		})
	}
}

// A cache file whose read hangs (a stuck file system) holds up the first
// discovery at most the load's wait, and no later one: the cache fills
// when the read ends.
func TestDiskCacheLoadNeverHoldsDiscoveriesUp(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	appendFile(t, p, "a\n")
	path := filepath.Join(t.TempDir(), "c.gob")
	saved := newDisk(path, &logLines{})
	saved.Cache.Get(p, (&countingFill{}).fill)
	saved.Save(true)

	log := &logLines{}
	d := newDisk(path, log)
	d.wait = 100 * time.Millisecond
	release := make(chan struct{})
	d.opened = func() { <-release }
	d.Load() // returns after its wait, the read hanging
	d.Load() // returns at once
	log.mu.Lock()
	said := strings.Join(log.lines, "\n")
	log.mu.Unlock()
	if !strings.Contains(said, "not read within 100ms") {
		t.Errorf("log %q, want the wait named", said)
	}
	if n := d.Cache.Stats().Entries; n != 0 {
		t.Fatalf("%d entries before the read ended", n)
	}
	close(release)
	for i := 0; d.Cache.Stats().Entries != 1; i++ {
		if i == 1000 {
			t.Fatal("the cache did not fill once the read ended")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestBoundedWriter: the cache's encoding stops at the bound, before the
// bytes past it are written.
func TestBoundedWriter(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	w := &boundedWriter{w: &out, left: 10}
	if n, err := w.Write([]byte("12345678")); n != 8 || err != nil {
		t.Fatalf("first write: %d, %v", n, err)
	}
	if _, err := w.Write([]byte("901")); err == nil || !strings.Contains(err.Error(), "over the bound") {
		t.Fatalf("a write past the bound: %v", err)
	}
	if out.String() != "12345678" {
		t.Fatalf("wrote %q", out.String())
	}
}

// benchValue is the size and shape of an adapter's summary: a few ids,
// a folder, a prompt, times and counts.
type benchValue struct {
	ID, Cwd, Model, Prompt string
	Created, Updated       time.Time
	In, Out                int64
	Cost                   float64
}

// BenchmarkDiskCache: writing and reading back a cache of 12,500 entries
// (an adapter's share of a 50,000-session store), what a first read's
// end and a restart cost.
func BenchmarkDiskCache(b *testing.B) {
	dir := b.TempDir()
	path := filepath.Join(dir, "c.gob")
	const n = 12500
	newCache := func() *DiskCache[benchValue] {
		return &DiskCache[benchValue]{Cache: NewFileCache[benchValue](n), Path: path, Kind: "bench-1"}
	}
	full := newCache()
	now := time.Now()
	for i := range n {
		full.Put(FileKey{Path: fmt.Sprintf("/home/u/.store/project-%03d/%08d.jsonl", i%300, i), Size: int64(i), ModTime: now},
			benchValue{ID: fmt.Sprintf("%032x", i), Cwd: fmt.Sprintf("/home/u/src/project-%03d", i%300), Model: "model-x",
				Prompt: strings.Repeat("fix the parser ", 10), Created: now, Updated: now, In: int64(i) * 100, Out: int64(i), Cost: 0.25})
	}
	b.Run("save", func(b *testing.B) {
		for b.Loop() {
			full.misses = -1 // a read since the last save
			full.Save(true)
		}
		if fi, err := os.Stat(path); err == nil {
			b.ReportMetric(float64(fi.Size())/(1<<20), "MB")
		}
	})
	b.Run("load", func(b *testing.B) {
		for b.Loop() {
			c := newCache()
			c.Load()
			if c.Cache.lru.Len() != n {
				b.Fatalf("%d entries loaded, want %d", c.Cache.lru.Len(), n)
			}
		}
	})
}
