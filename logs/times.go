package logs

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"time"

	"golang.org/x/sys/unix"
)

// TimesSuffix names a log's time marks: path + TimesSuffix holds lines
// "INODE OFFSET UNIX_MILLIS", each saying that the byte at OFFSET of the
// log file with that inode was written at that time. The writer adds one
// when a write comes at least MarkEvery after the last mark, so a log
// written continuously gets one a second.
const TimesSuffix = ".times"

// MarkEvery is the granularity of a log's time marks.
const MarkEvery = time.Second

// marker appends time marks for a Writer. Its failures are ignored: the
// log itself matters more than when each byte came.
type marker struct {
	f    *os.File
	last time.Time
	ino  uint64
}

// openMarker opens the marks of the log called name in dir.
func openMarker(dir *os.File, name string) *marker {
	f, err := openAppendAt(dir, name+TimesSuffix)
	if err != nil {
		return &marker{}
	}
	return &marker{f: f}
}

// mark notes that the byte at offset of the file with inode ino is being
// written now.
func (m *marker) mark(ino uint64, offset int64, now time.Time) {
	if m.f == nil || (ino == m.ino && now.Sub(m.last) < MarkEvery) {
		return
	}
	m.last, m.ino = now, ino
	fmt.Fprintf(m.f, "%d %d %d\n", ino, offset, now.UnixMilli())
}

// trim keeps the marks of the files keep names, after a rotation; the next
// write is marked whatever the time.
func (m *marker) trim(dir *os.File, path string, keep map[uint64]bool) {
	if m.f == nil {
		return
	}
	m.ino, m.last = 0, time.Time{}
	t := LoadTimes(path)
	var b []byte
	for ino, ms := range t.byInode {
		if !keep[ino] {
			continue
		}
		for _, mk := range ms {
			b = fmt.Appendf(b, "%d %d %d\n", ino, mk.offset, mk.at.UnixMilli())
		}
	}
	name := filepath.Base(path) + TimesSuffix
	dfd := int(dir.Fd())
	tmp, err := openFileAt(dir, name+".tmp", unix.O_WRONLY|unix.O_TRUNC)
	if err != nil {
		return
	}
	_, werr := tmp.Write(b)
	if err := errors.Join(werr, tmp.Close()); err != nil {
		unix.Unlinkat(dfd, name+".tmp", 0)
		return
	}
	if err := unix.Renameat(dfd, name+".tmp", dfd, name); err != nil {
		unix.Unlinkat(dfd, name+".tmp", 0)
		return
	}
	m.f.Close()
	f, err := openAppendAt(dir, name)
	if err != nil {
		m.f = nil
		return
	}
	m.f = f
}

func (m *marker) close() {
	if m.f != nil {
		m.f.Close()
	}
}

type mark struct {
	offset int64
	at     time.Time
}

// Times are a log's time marks, by file.
type Times struct {
	path    string
	read    int64 // how much of the marks file is read
	byInode map[uint64][]mark
}

// LoadTimes reads a log's time marks (none when it has no marks file).
func LoadTimes(path string) *Times {
	t := &Times{path: path, byInode: map[uint64][]mark{}}
	t.Refresh()
	return t
}

// Refresh reads the marks added since the last read.
func (t *Times) Refresh() {
	f, err := openLog(t.path + TimesSuffix)
	if err != nil {
		return
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return
	}
	if st.Size() < t.read {
		// Rewritten by a trim: read it again from the start.
		t.read, t.byInode = 0, map[uint64][]mark{}
	}
	if _, err := f.Seek(t.read, io.SeekStart); err != nil {
		return
	}
	// A mark is a few dozen bytes; a longer line is damage, skipped
	// without being held.
	r := bufio.NewReaderSize(f, 4096)
	skip := false
	for {
		line, err := r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			t.read += int64(len(line))
			skip = true
			continue
		}
		if err != nil {
			return // a line still being written is read next time
		}
		t.read += int64(len(line))
		if skip {
			skip = false
			continue
		}
		var ino uint64
		var off, ms int64
		if _, err := fmt.Sscanf(string(line), "%d %d %d\n", &ino, &off, &ms); err != nil {
			continue
		}
		ms2 := t.byInode[ino]
		if n := len(ms2); n > 0 && ms2[n-1].offset > off {
			continue // out of order: a damaged line
		}
		t.byInode[ino] = append(ms2, mark{offset: off, at: time.UnixMilli(ms)})
	}
}

// At is when the byte at p was written, to MarkEvery: the time of the last
// mark at or before it. Zero when nothing says.
func (t *Times) At(p Position) time.Time {
	ms := t.byInode[p.Inode]
	i := sort.Search(len(ms), func(i int) bool { return ms[i].offset > p.Offset })
	if i == 0 {
		return time.Time{}
	}
	return ms[i-1].at
}

// Since is the position of the first byte written at or after since: the
// first mark that late. ok is false when all the marked output is older.
// A zero Position means the start of the oldest file.
func (t *Times) Since(path string, since time.Time) (Position, bool) {
	for _, lf := range snapshot(path) { // oldest first
		for _, mk := range t.byInode[lf.ino] {
			if !mk.at.Before(since) {
				return Position{Inode: lf.ino, Offset: mk.offset}, true
			}
		}
	}
	return Position{}, false
}
