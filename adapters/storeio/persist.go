package storeio

import (
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/agentctl/agentctl/internal/atomicfile"
	"github.com/agentctl/agentctl/internal/text"
)

// cacheFileVersion changes whenever the file's layout, or the meaning of a
// cached value, changes: a file of another version is ignored.
const cacheFileVersion = 2

// maxCacheFile bounds the cache file read at start (and written): a
// file's entries cost the service about three times their size once
// decoded. An entry is a few hundred bytes, so this holds far more than
// the 50,000 sessions a service is meant to know; a cache that would be
// larger is not written, which costs only speed.
const maxCacheFile = 64 << 20

// loadWait bounds how long the first discovery waits for the cache file
// to be read; one not read by then is read on in the background, and no
// later discovery waits for it.
const loadWait = 5 * time.Second

// cacheHeader begins a persisted cache; its Count entries follow, each a
// gob value of its own, so that neither writing nor reading the file
// holds all of its encoding in memory at once (gob encodes and decodes a
// value whole).
type cacheHeader struct {
	Version int
	// Kind names what the values are (an adapter's summary type and its
	// version), so a file written for another value is ignored.
	Kind  string
	Count int
}

// DiskCache keeps a FileCache's entries in a file across restarts of the
// service, so that the first answer after a restart reads no unchanged
// file again. It is a cache, never the truth: a loaded entry is
// revalidated by stat on every Get exactly as an in-memory one is (path,
// size, modification time, device and inode), deleting the file changes
// nothing but speed, and a file that cannot be read is ignored. It is
// written atomically, at most once per saveEvery while files change, and
// holds at most the cache's bound of entries.
type DiskCache[V any] struct {
	Cache *FileCache[V]
	Path  string
	// Kind names the values; a file of another kind is ignored.
	Kind string
	// Persist turns a value into the one to write (for instance without
	// what only an incremental read in this process may use); nil keeps it.
	Persist func(V) V
	// Logf, when set, hears a file that was ignored or not written.
	Logf func(format string, args ...any)

	loadOnce sync.Once
	// wait, when set, replaces loadWait; opened, when set, is called
	// once the file is open (tests: a read that hangs).
	wait   time.Duration
	opened func()

	mu     sync.Mutex
	saved  time.Time
	misses int64 // the cache's misses at the last save
}

// saveEvery is the least time between two writes of a cache file.
const saveEvery = 30 * time.Second

// Load fills the cache from the file, once, waiting for it at most
// loadWait; later calls do nothing and never wait.
func (d *DiskCache[V]) Load() {
	d.loadOnce.Do(func() {
		done := make(chan struct{})
		go func() {
			defer close(done)
			if err := d.load(); err != nil && !errors.Is(err, os.ErrNotExist) {
				d.logf("discovery cache %s ignored: %v", d.Path, err)
			}
		}()
		wait := loadWait
		if d.wait > 0 {
			wait = d.wait
		}
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-done:
		case <-t.C:
			d.logf("discovery cache %s: not read within %s; discovering without it", d.Path, wait)
		}
	})
}

func (d *DiskCache[V]) load() error {
	f, err := openRegular(d.Path, maxCacheFile)
	if err != nil {
		return err
	}
	defer f.Close()
	if d.opened != nil {
		d.opened()
	}
	dec := gob.NewDecoder(io.LimitReader(f, maxCacheFile))
	var h cacheHeader
	if err := dec.Decode(&h); err != nil {
		return fmt.Errorf("decode: %w", err)
	}
	if h.Version != cacheFileVersion || h.Kind != d.Kind {
		return fmt.Errorf("written for %q version %d, not %q version %d", text.Ellipsis(h.Kind, 100), h.Version, d.Kind, cacheFileVersion)
	}
	for i := 0; i < h.Count; i++ {
		var e Entry[V]
		if err := dec.Decode(&e); err != nil {
			return fmt.Errorf("decode entry %d of %d: %w", i+1, h.Count, err)
		}
		d.Cache.mu.Lock()
		if _, ok := d.Cache.entries[e.Key.Path]; !ok && d.Cache.lru.Len() < d.Cache.max {
			d.Cache.entries[e.Key.Path] = d.Cache.lru.PushBack(&e)
		} // else read in this process already: newer
		d.Cache.mu.Unlock()
	}
	return nil
}

// Save writes the cache's entries to the file when files were read since
// the last write and saveEvery has passed (or force).
func (d *DiskCache[V]) Save(force bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	st := d.Cache.Stats()
	if st.Misses == d.misses || (!force && !d.saved.IsZero() && time.Since(d.saved) < saveEvery) {
		return
	}
	if err := d.write(); err != nil {
		d.logf("discovery cache %s not written: %v", d.Path, err)
		return
	}
	d.saved, d.misses = time.Now(), st.Misses
}

func (d *DiskCache[V]) write() error {
	d.Cache.mu.Lock()
	entries := make([]Entry[V], 0, d.Cache.lru.Len())
	for el := d.Cache.lru.Front(); el != nil; el = el.Next() {
		e := *el.Value.(*Entry[V])
		if d.Persist != nil {
			e.Value = d.Persist(e.Value)
		}
		entries = append(entries, e)
	}
	d.Cache.mu.Unlock()
	if err := os.MkdirAll(filepath.Dir(d.Path), 0o700); err != nil {
		return err
	}
	return atomicfile.WriteFrom(d.Path, 0o600, func(w io.Writer) error {
		enc := gob.NewEncoder(&boundedWriter{w: w, left: maxCacheFile})
		if err := enc.Encode(cacheHeader{Version: cacheFileVersion, Kind: d.Kind, Count: len(entries)}); err != nil {
			return fmt.Errorf("encode: %w", err)
		}
		for i := range entries {
			if err := enc.Encode(&entries[i]); err != nil {
				return fmt.Errorf("encode: %w", err)
			}
		}
		return nil
	})
}

// boundedWriter fails a write past left bytes.
type boundedWriter struct {
	w    io.Writer
	left int
}

func (b *boundedWriter) Write(p []byte) (int, error) {
	if len(p) > b.left {
		return 0, fmt.Errorf("over the bound of %d bytes", maxCacheFile)
	}
	b.left -= len(p)
	return b.w.Write(p)
}

func (d *DiskCache[V]) logf(format string, args ...any) {
	if d.Logf != nil {
		d.Logf(format, args...)
	}
}

// Kept returns the entry the cache holds for path, whatever the file's
// version now: for a value whose reader revalidates it itself (a
// database, whose rows carry their own stamps), where an entry read from
// an older version still spares most of the work. Load first.
func (d *DiskCache[V]) Kept(path string) (Entry[V], bool) {
	d.Cache.mu.Lock()
	defer d.Cache.mu.Unlock()
	if el, ok := d.Cache.entries[path]; ok {
		return *el.Value.(*Entry[V]), true
	}
	return Entry[V]{}, false
}

// Put keeps v, read by the caller from the file version key, for the next
// Save (which it counts as a read).
func (d *DiskCache[V]) Put(key FileKey, v V) {
	d.Cache.store(Entry[V]{Key: key, Value: v})
	d.Cache.mu.Lock()
	d.Cache.misses++
	d.Cache.mu.Unlock()
}
