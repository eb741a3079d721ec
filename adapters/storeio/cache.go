package storeio

import (
	"container/list"
	"fmt"
	"io/fs"
	"os"
	"sync"
	"time"
)

// FileKey identifies one version of a file: the same key means the same
// bytes, as far as a stat can tell (agents append to their files and never
// rewrite them in place within the same nanosecond and size).
type FileKey struct {
	Path    string
	Size    int64
	ModTime time.Time
	Dev     uint64
	Inode   uint64
}

// KeyOf builds path's key from its stat.
func KeyOf(path string, fi fs.FileInfo) FileKey {
	k := FileKey{Path: path, Size: fi.Size(), ModTime: fi.ModTime()}
	k.Dev, k.Inode = fileID(fi)
	return k
}

// Same reports whether k and o are the same version of the same file.
func (k FileKey) Same(o FileKey) bool {
	return k.Path == o.Path && k.Size == o.Size && k.ModTime.Equal(o.ModTime) && k.Dev == o.Dev && k.Inode == o.Inode
}

// Grown reports whether k can be the file of prev after appends: the same
// file (device and inode), no smaller. Whether the first prev.Size bytes are
// really unchanged is for the reader to confirm (see Fingerprint).
func (k FileKey) Grown(prev FileKey) bool {
	return k.Path == prev.Path && k.Dev == prev.Dev && k.Inode == prev.Inode && k.Size >= prev.Size
}

// Entry is a cached value with the key of the file version it was read from.
type Entry[V any] struct {
	Key   FileKey
	Value V
}

// FillFunc computes a file's value from f, open at the version key; it
// must read no more than key.Size bytes. prev is the last value cached for
// the same path (nil when none), which lets a reader continue from where it
// stopped when the file only grew.
type FillFunc[V any] func(f *os.File, key FileKey, prev *Entry[V]) (V, error)

// FileCache caches a value derived from each file, keyed by path, size,
// modification time and inode. Every Get revalidates with a stat: a value is
// never returned for a file version other than the one it was read from.
// It holds at most a fixed number of entries, dropping the least recently
// used. It is safe for concurrent use. A miss on a file version that another
// caller is already reading waits for that read rather than repeating it: a
// list arriving while a service that just started reads a large store
// shares the reads instead of doubling them.
type FileCache[V any] struct {
	mu       sync.Mutex
	max      int
	entries  map[string]*list.Element // of *Entry[V]
	lru      *list.List               // front: most recently used
	inflight map[string]*pendingFill[V]
	hits     int64
	misses   int64
}

// pendingFill is a read of one file version in progress.
type pendingFill[V any] struct {
	key  FileKey // the version asked for
	done chan struct{}
	// Set before done is closed.
	value V
	got   FileKey
	err   error
}

// NewFileCache returns a cache of at most maxEntries files (at least 1).
func NewFileCache[V any](maxEntries int) *FileCache[V] {
	return &FileCache[V]{
		max:      max(maxEntries, 1),
		entries:  make(map[string]*list.Element),
		lru:      list.New(),
		inflight: make(map[string]*pendingFill[V]),
	}
}

// Get returns the value for path's current version: the cached one when a
// stat shows the file unchanged, else the result of fill on the opened file
// (the key then comes from the open file's own stat, so a file replaced
// between stat and open is read consistently). A file that is gone is
// forgotten and its error (fs.ErrNotExist) returned. Errors from fill are
// returned and not cached.
func (c *FileCache[V]) Get(path string, fill FillFunc[V]) (V, FileKey, error) {
	fi, err := os.Stat(path)
	if err != nil {
		c.Forget(path)
		var zero V
		return zero, FileKey{}, fmt.Errorf("stat %s: %w", path, err)
	}
	return c.GetKey(KeyOf(path, fi), fill)
}

// GetKey is Get with the stat already made by the caller (for instance by
// Lister.List, which stats a folder's files cheaply): key must come from a
// stat made for this query.
func (c *FileCache[V]) GetKey(key FileKey, fill FillFunc[V]) (V, FileKey, error) {
	path := key.Path
	c.mu.Lock()
	var prev Entry[V]
	el, cached := c.entries[path]
	if cached {
		c.lru.MoveToFront(el)
		prev = *el.Value.(*Entry[V])
		if prev.Key.Same(key) {
			c.hits++
			c.mu.Unlock()
			return prev.Value, key, nil
		}
	}
	c.misses++
	if p, ok := c.inflight[path]; ok && p.key.Same(key) {
		c.mu.Unlock()
		<-p.done
		return p.value, p.got, p.err
	}
	p := &pendingFill[V]{key: key, done: make(chan struct{})}
	c.inflight[path] = p
	c.mu.Unlock()

	var prevp *Entry[V]
	if cached {
		prevp = &prev
	}
	p.value, p.got, p.err = c.fill(key, prevp, fill)
	c.mu.Lock()
	if c.inflight[path] == p {
		delete(c.inflight, path)
	}
	c.mu.Unlock()
	close(p.done)
	return p.value, p.got, p.err
}

// Refresh reads key's file again whatever the cache holds, handing fill
// the entry cached for its path (of any version) as prev, and caches the
// result: a value a first read left unfinished (totals counted in the
// background) is completed in place.
func (c *FileCache[V]) Refresh(key FileKey, fill FillFunc[V]) (V, FileKey, error) {
	c.mu.Lock()
	var prev *Entry[V]
	if el, ok := c.entries[key.Path]; ok {
		e := *el.Value.(*Entry[V])
		prev = &e
	}
	c.misses++
	c.mu.Unlock()
	return c.fill(key, prev, fill)
}

// fill reads the file at key and caches the result.
func (c *FileCache[V]) fill(key FileKey, prev *Entry[V], fill FillFunc[V]) (V, FileKey, error) {
	var zero V
	path := key.Path
	f, err := os.Open(path)
	if err != nil {
		c.Forget(path)
		return zero, FileKey{}, fmt.Errorf("open %s: %w", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return zero, FileKey{}, fmt.Errorf("stat %s: %w", path, err)
	}
	key = KeyOf(path, fi)
	v, err := fill(f, key, prev)
	if err != nil {
		return zero, FileKey{}, err
	}
	c.store(Entry[V]{Key: key, Value: v})
	return v, key, nil
}

func (c *FileCache[V]) store(e Entry[V]) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.entries[e.Key.Path]; ok {
		*el.Value.(*Entry[V]) = e
		c.lru.MoveToFront(el)
		return
	}
	c.entries[e.Key.Path] = c.lru.PushFront(&e)
	for c.lru.Len() > c.max {
		last := c.lru.Back()
		c.lru.Remove(last)
		delete(c.entries, last.Value.(*Entry[V]).Key.Path)
	}
}

// Forget drops path's entry.
func (c *FileCache[V]) Forget(path string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.entries[path]; ok {
		c.lru.Remove(el)
		delete(c.entries, path)
	}
}

// Retain drops every entry whose path keep rejects: after a full listing,
// the files that are gone.
func (c *FileCache[V]) Retain(keep func(path string) bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for p, el := range c.entries {
		if !keep(p) {
			c.lru.Remove(el)
			delete(c.entries, p)
		}
	}
}

// CacheStats counts lookups since the cache was made.
type CacheStats struct {
	Entries      int
	Hits, Misses int64
}

// Stats returns the cache's counters.
func (c *FileCache[V]) Stats() CacheStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return CacheStats{Entries: c.lru.Len(), Hits: c.hits, Misses: c.misses}
}
