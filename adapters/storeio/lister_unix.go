//go:build unix

package storeio

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Listing is one folder's content as of the call that returned it.
type Listing struct {
	// Files are the accepted regular files, each from a stat made for this
	// call, in the folder's order.
	Files []FileKey
	// Dirs are the sub-folders' paths.
	Dirs []string
}

// Lister lists the folders of a native store. A folder's entries are read
// again only when the folder's own stat changed; its files are stat'ed on
// every call, so a file's key is never older than the call. One Lister
// serves one kind of listing: the accept function must not change between
// calls for the same folder.
type Lister struct {
	mu      sync.Mutex
	folders map[string]*folder
	// sweep counts Sweep calls; a folder not listed since the last one is
	// forgotten by the next.
	sweep uint64
}

// folder is the cached reading of one folder.
type folder struct {
	key    FileKey   // the folder's own stat when it was read
	readAt time.Time // when it was read
	names  []string  // accepted entries that may be regular files
	paths  []string  // their full paths
	dirs   []string  // sub-folders' full paths
	seen   uint64    // the sweep it was last listed in
}

// fresh is how long after a folder's modification time its entries are
// re-read every time: an entry added within the same clock tick as the
// last change leaves the modification time as it was.
const fresh = time.Second

// NewLister returns an empty Lister.
func NewLister() *Lister { return &Lister{folders: map[string]*folder{}} }

// List returns dir's accepted files (freshly stat'ed) and its sub-folders.
// A file removed between the listing and its stat is left out. A missing
// dir is an error wrapping fs.ErrNotExist.
func (l *Lister) List(dir string, accept func(name string) bool) (Listing, error) {
	d, err := os.Open(dir)
	if err != nil {
		return Listing{}, fmt.Errorf("list %s: %w", dir, err)
	}
	defer d.Close()
	fd := int(d.Fd())
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return Listing{}, fmt.Errorf("list %s: %w", dir, err)
	}
	key := keyOfStat(dir, &st)
	f, err := l.folder(d, key, accept)
	if err != nil {
		return Listing{}, err
	}
	// Clipped: a caller's append must not write into the cached listing.
	out := Listing{Files: make([]FileKey, 0, len(f.names)), Dirs: slices.Clip(f.dirs)}
	for i, n := range f.names {
		if err := unix.Fstatat(fd, n, &st, 0); err != nil {
			if errors.Is(err, unix.ENOENT) {
				continue
			}
			return Listing{}, fmt.Errorf("stat %s: %w", f.paths[i], err)
		}
		if st.Mode&unix.S_IFMT != unix.S_IFREG {
			continue
		}
		out.Files = append(out.Files, keyOfStat(f.paths[i], &st))
	}
	return out, nil
}

// folder returns d's entries, from the cache when the folder is unchanged
// and was read long enough after its last change for its modification time
// to show any later one.
func (l *Lister) folder(d *os.File, key FileKey, accept func(string) bool) (*folder, error) {
	l.mu.Lock()
	f := l.folders[key.Path]
	sweep := l.sweep
	if f != nil && f.key.Same(key) && f.readAt.Sub(key.ModTime) > fresh {
		f.seen = sweep
		l.mu.Unlock()
		return f, nil
	}
	l.mu.Unlock()
	readAt := time.Now()
	entries, err := d.ReadDir(-1)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", key.Path, err)
	}
	f = &folder{key: key, readAt: readAt, seen: sweep}
	for _, e := range entries {
		name := e.Name()
		p := filepath.Join(key.Path, name)
		switch t := e.Type(); {
		case t.IsDir():
			f.dirs = append(f.dirs, p)
		case (t.IsRegular() || t&os.ModeSymlink != 0) && accept(name):
			// A symlink counts when it leads to a regular file; the stat
			// in List follows it.
			f.names = append(f.names, name)
			f.paths = append(f.paths, p)
		}
	}
	l.mu.Lock()
	l.folders[key.Path] = f
	l.mu.Unlock()
	return f, nil
}

// Walk lists roots and the folders below them, down to depth levels under
// each root, a level at a time with the folders of a level in parallel, and
// returns every accepted file, freshly stat'ed. A missing root is an empty
// one and an unreadable sub-folder hides only its own files; Walk fails
// only when no root could be read, or when ctx ends. It ends with a Sweep.
func (l *Lister) Walk(ctx context.Context, roots []string, depth int, accept func(name string) bool) ([]FileKey, error) {
	var files []FileKey
	level := roots
	for d := 0; d <= depth && len(level) > 0; d++ {
		listings := make([]Listing, len(level))
		errs := make([]error, len(level))
		if err := Parallel(ctx, len(level), func(i int) {
			listings[i], errs[i] = l.List(level[i], accept)
		}); err != nil {
			return nil, err
		}
		if d == 0 {
			var failed []error
			for _, err := range errs {
				if err != nil && !errors.Is(err, fs.ErrNotExist) {
					failed = append(failed, err)
				}
			}
			if len(failed) > 0 && len(failed) == len(roots) {
				return nil, errors.Join(failed...)
			}
		}
		level = nil
		for _, ls := range listings {
			files = append(files, ls.Files...)
			if d < depth {
				level = append(level, ls.Dirs...)
			}
		}
	}
	l.Sweep()
	return files, nil
}

// Sweep forgets the folders not listed since the previous Sweep: a scan of
// the whole store calls it at its end, so folders that are gone do not
// stay cached.
func (l *Lister) Sweep() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for p, f := range l.folders {
		if f.seen != l.sweep {
			delete(l.folders, p)
		}
	}
	l.sweep++
}

// keyOfStat is a file's key from a raw stat.
func keyOfStat(path string, st *unix.Stat_t) FileKey {
	return FileKey{
		Path:    path,
		Size:    st.Size,
		ModTime: time.Unix(int64(st.Mtim.Sec), int64(st.Mtim.Nsec)), //nolint:unconvert // int32 fields on some platforms
		Dev:     uint64(st.Dev),                                     //nolint:unconvert
		Inode:   uint64(st.Ino),                                     //nolint:unconvert
	}
}
