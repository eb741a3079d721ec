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

// Lister lists the folders of a native store. With a FolderWatch, a
// watched folder in which nothing changed since the last call is answered
// from that call: no open, no stat. Otherwise a folder's entries are read
// again only when the folder's own stat changed, and its files are stat'ed
// on every call, so a file's key is never older than the call. One Lister
// serves one kind of listing: the accept function must not change between
// calls for the same folder.
type Lister struct {
	watch   FolderWatch
	mu      sync.Mutex
	folders map[string]*folder
	// sweep counts Sweep calls; a folder not listed since the last one is
	// forgotten by the next.
	sweep uint64
	// stats counts the stats of files made, for tests and benchmarks.
	stats uint64
	// version moves whenever a listing differs from the folder's last one
	// (see Version).
	version uint64
}

// folder is the cached reading of one folder.
type folder struct {
	key    FileKey   // the folder's own stat when it was read
	readAt time.Time // when it was read
	names  []string  // accepted entries that may be regular files
	paths  []string  // their full paths
	dirs   []string  // sub-folders' full paths
	seen   uint64    // the sweep it was last listed in
	// links says an accepted entry is a symbolic link: a change to the file
	// it leads to is not a change in this folder, so the folder is always
	// stat'ed.
	links bool

	// files is the last listing's files (listed says there was one); a
	// watched folder's are valid while its watch token is still token.
	files   []FileKey
	listed  bool
	token   uint64
	watched bool
}

// fresh is how long after a folder's modification time its entries are
// re-read every time: an entry added within the same clock tick as the
// last change leaves the modification time as it was.
const fresh = time.Second

// NewLister returns an empty Lister; watch, when not nil, tells it which
// folders changed.
func NewLister(watch FolderWatch) *Lister {
	return &Lister{watch: watch, folders: map[string]*folder{}}
}

// List returns dir's accepted files and its sub-folders: freshly stat'ed,
// or as the last call found them when dir is watched and nothing in it
// changed since. A file removed between the listing and its stat is left
// out. A missing dir is an error wrapping fs.ErrNotExist.
func (l *Lister) List(dir string, accept func(name string) bool) (Listing, error) {
	var token uint64
	watched := false
	if l.watch != nil {
		// The token is taken before the folder is read: a change after it
		// moves the token, so the next call reads again.
		token, watched = l.watch.Token(dir)
		l.mu.Lock()
		if f := l.folders[dir]; watched && f != nil && f.watched && f.token == token && !f.links {
			f.seen = l.sweep
			out := Listing{Files: slices.Clip(f.files), Dirs: slices.Clip(f.dirs)}
			l.mu.Unlock()
			return out, nil
		}
		l.mu.Unlock()
	}
	out, err := l.read(dir, accept)
	if err != nil {
		l.forget(dir)
		return Listing{}, err
	}
	if watched {
		l.mu.Lock()
		if f := l.folders[dir]; f != nil {
			f.token, f.watched = token, true
		}
		l.mu.Unlock()
	}
	return out, nil
}

// read lists dir from its entries (cached while the folder's own stat is
// unchanged) and a fresh stat of each file, keeps the files as the
// folder's last listing, and moves the version when they differ from the
// one before.
func (l *Lister) read(dir string, accept func(name string) bool) (Listing, error) {
	l.mu.Lock()
	var prevFiles []FileKey
	var prevDirs []string
	prevListed := false
	if p := l.folders[dir]; p != nil {
		prevFiles, prevDirs, prevListed = p.files, p.dirs, p.listed
	}
	l.mu.Unlock()
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
	l.mu.Lock()
	l.stats += uint64(len(f.names))
	l.mu.Unlock()
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
	out.Files = slices.Clip(out.Files)
	l.mu.Lock()
	if !prevListed || !sameKeys(prevFiles, out.Files) || !slices.Equal(prevDirs, out.Dirs) {
		l.version++
	}
	f.files, f.listed = out.Files, true
	l.mu.Unlock()
	return out, nil
}

// forget drops dir's cached listing after it could not be listed: what
// it held is no longer what a walk finds.
func (l *Lister) forget(dir string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if f, ok := l.folders[dir]; ok {
		delete(l.folders, dir)
		if f.listed {
			l.version++
		}
	}
}

// Version is a number that moves whenever a listing differs from the one
// before it of the same folder (a file added, removed or changed, a
// sub-folder added or removed), a folder is listed for the first time,
// or one listed before is forgotten. While it stays the same, every
// folder listed since answered as it did before: a caller that keeps
// what it derived from the listings at one version may reuse it while
// the version holds, if it alone lists with this Lister (a second caller's
// listings would move the version under it).
func (l *Lister) Version() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.version
}

// sameKeys reports whether two listings' files are the same versions of
// the same files, in the same order.
func sameKeys(a, b []FileKey) bool {
	return slices.EqualFunc(a, b, FileKey.Same)
}

// Stats is how many file stats the Lister has made.
func (l *Lister) Stats() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.stats
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
			f.links = f.links || t&os.ModeSymlink != 0
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
			if f.listed {
				l.version++
			}
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
