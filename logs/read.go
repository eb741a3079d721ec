package logs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Position is a point in a log that survives rotation: the file's inode and
// an offset into it.
type Position struct {
	Inode  uint64
	Offset int64
}

// String is the position as a cursor a client hands back: "INODE:OFFSET".
func (p Position) String() string { return fmt.Sprintf("%d:%d", p.Inode, p.Offset) }

// ParsePosition reads what String writes.
func ParsePosition(s string) (Position, error) {
	var p Position
	ino, off, ok := strings.Cut(s, ":")
	var err error
	if ok {
		if p.Inode, err = strconv.ParseUint(ino, 10, 64); err == nil {
			p.Offset, err = strconv.ParseInt(off, 10, 64)
		}
	}
	if !ok || err != nil || p.Offset < 0 {
		return Position{}, fmt.Errorf("log position %q: want INODE:OFFSET", s)
	}
	return p, nil
}

// maxRotated bounds how many rotated files are looked for.
const maxRotated = 16

// files returns the log's existing files, oldest first.
func files(path string) []string {
	var out []string
	for i := maxRotated; i >= 0; i-- {
		name := RotatedName(path, i)
		if _, err := os.Stat(name); err == nil {
			out = append(out, name)
		}
	}
	return out
}

// openLog opens a log file for reading without following a symbolic link:
// a session's log is never read from outside its folder.
func openLog(name string) (*os.File, error) {
	f, err := os.OpenFile(name, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if errors.Is(err, syscall.ELOOP) {
		return nil, fmt.Errorf("%s is a symbolic link; a session's log is read only from its own folder", name)
	}
	return f, err
}

func inode(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Ino)
	}
	return 0
}

// End is the position right after the last byte of the log now.
func End(path string) (Position, error) {
	f, err := openLog(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return Position{}, nil
		}
		return Position{}, fmt.Errorf("read log: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return Position{}, fmt.Errorf("read log: %w", err)
	}
	return Position{Inode: inode(st), Offset: st.Size()}, nil
}

// TailStart returns where the last n lines of the log begin (n <= 0: at
// the start of the oldest file kept), reading back from its end a block at
// a time: a line longer than MaxLine counts as one line for each MaxLine
// bytes of it, so the last n lines span at most n*MaxLine bytes however
// long a line is. Follow or FollowFrom from there reads them, and goes on
// without losing or repeating a byte. A trailing partial line counts as a
// line.
func TailStart(path string, n int) (Position, error) {
	if n <= 0 {
		return Position{}, nil
	}
	cur, err := openLog(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return Position{}, nil
		}
		return Position{}, fmt.Errorf("read log: %w", err)
	}
	defer cur.Close()
	st, err := cur.Stat()
	if err != nil {
		return Position{}, fmt.Errorf("read log: %w", err)
	}
	buf := make([]byte, tailBlock)
	ino := inode(st)
	start, lines, err := scanBack(cur, st.Size(), n, buf)
	if err != nil || lines >= n {
		return Position{Inode: ino, Offset: start}, err
	}
	pos := Position{Inode: ino, Offset: start}
	// Older rotated files, newest first: those listed before ours (a
	// rotation since we opened it may have moved it down the list).
	all := snapshot(path)
	ours := 0 // not listed: rotated out, so nothing older remains
	for i, lf := range all {
		if lf.ino == ino {
			ours = i
		}
	}
	for i := ours - 1; i >= 0; i-- {
		f, err := retryMoved(all[i].open)
		if err != nil || f == nil {
			continue
		}
		fst, err := f.Stat()
		if err != nil {
			f.Close()
			continue
		}
		start, got, err := scanBack(f, fst.Size(), n-lines, buf)
		f.Close()
		if err != nil {
			return pos, err
		}
		lines += got
		pos = Position{Inode: all[i].ino, Offset: start}
		if lines >= n {
			break
		}
	}
	return pos, nil
}

// tailBlock is how much of a log TailStart reads at a time.
const tailBlock = 64 << 10

// scanBack reads f backwards from end, a block at a time into buf, until
// it has passed want lines (a line ending at end without its newline
// counts; a line longer than MaxLine counts once per MaxLine bytes). It
// returns the offset where those lines begin and how many it found, fewer
// than want when the file holds fewer.
func scanBack(f *os.File, end int64, want int, buf []byte) (int64, int, error) {
	if end == 0 {
		return 0, 0, nil
	}
	got := 0
	bound := end     // where the line being measured ends
	cut := int64(-1) // where the last piece of a long line began
	first := true
	for off := end; off > 0; {
		size := min(int64(len(buf)), off)
		off -= size
		chunk := buf[:size]
		if _, err := f.ReadAt(chunk, off); err != nil && err != io.EOF {
			return 0, 0, fmt.Errorf("read log: %w", err)
		}
		for k := len(chunk) - 1; k >= 0; k-- {
			at := off + int64(k)
			if first {
				first = false
				if chunk[k] == '\n' {
					// "a\nb\n" is two lines: the last newline starts none.
					bound = at
					continue
				}
			}
			if chunk[k] == '\n' {
				if at+1 != cut { // else that line was counted as its pieces
					got++
					if got == want {
						return at + 1, got, nil
					}
				}
				bound = at
				continue
			}
			if bound-at >= MaxLine {
				// A piece of a long line, counted as a line.
				got++
				if got == want {
					return at, got, nil
				}
				bound, cut = at, at
			}
		}
	}
	if bound > 0 || cut != 0 {
		got++ // the file's first line, unless counted as pieces
	}
	return 0, got, nil
}

// FollowInterval is how often Follow looks for new bytes while it waits.
const FollowInterval = 50 * time.Millisecond

// Follow sends every byte written to the log after pos to emit, in order,
// across rotations, until ctx ends or until ended returns true and the log
// has been read to its end. ended is checked before the final read, so
// bytes written before the end is noticed are never cut off.
func Follow(ctx context.Context, path string, pos Position, ended func() bool, emit func([]byte) error) error {
	return FollowFrom(ctx, path, pos, ended, func(b []byte, _ Position) error { return emit(b) })
}

// FollowFrom is Follow that also tells emit the position right after the
// bytes it hands over: where a later FollowFrom continues without losing or
// repeating a byte.
func FollowFrom(ctx context.Context, path string, pos Position, ended func() bool, emit func([]byte, Position) error) error {
	return FollowIdle(ctx, path, pos, ended, emit, nil)
}

// FollowIdle is FollowFrom that calls idle, when not nil, each time it
// has read the log to its end and waits for more (every FollowInterval
// while nothing comes): where a reader shows what it holds back.
func FollowIdle(ctx context.Context, path string, pos Position, ended func() bool, emit func([]byte, Position) error, idle func() error) error {
	f, err := openAt(path, pos)
	if err != nil {
		return err
	}
	// at is the position after the last byte read from f.
	var at Position
	locate := func() {
		at = Position{}
		if f == nil {
			return
		}
		if st, err := f.Stat(); err == nil {
			at.Inode = inode(st)
		}
		at.Offset, _ = f.Seek(0, io.SeekCurrent)
	}
	locate()
	defer func() {
		if f != nil {
			f.Close()
		}
	}()
	buf := make([]byte, 64<<10)
	tick := time.NewTicker(FollowInterval)
	defer tick.Stop()
	for {
		finished := ended()
		// Drain what is there, moving to newer files on rotation.
		for {
			if f == nil {
				if f, err = openAt(path, Position{}); err != nil {
					return err
				}
				if f == nil {
					break
				}
				locate()
			}
			n, rerr := f.Read(buf)
			if n > 0 {
				at.Offset += int64(n)
				if err := emit(buf[:n], at); err != nil {
					return err
				}
				continue
			}
			if rerr != nil && rerr != io.EOF {
				return fmt.Errorf("follow log: %w", rerr)
			}
			next, err := nextFile(path, f)
			if err != nil {
				return err
			}
			if next == nil {
				break
			}
			// The writer may have added to f between our EOF and its
			// rotation; f is closed for writing now, so read what is left.
			for {
				n, rerr := f.Read(buf)
				if n > 0 {
					at.Offset += int64(n)
					if err := emit(buf[:n], at); err != nil {
						next.Close()
						return err
					}
				}
				if n == 0 || rerr != nil {
					break
				}
			}
			f.Close()
			f = next
			locate()
		}
		if finished {
			return nil
		}
		if idle != nil {
			if err := idle(); err != nil {
				return err
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// logFile is one file of a log as a listing saw it.
type logFile struct {
	name string
	ino  uint64
}

// snapshot lists the log's files, oldest first, with their inodes. A
// rotation renames every file, so a listing taken while one runs may mix
// the states before and after it: listings are repeated until two agree.
func snapshot(path string) []logFile {
	list := func() []logFile {
		var out []logFile
		for _, name := range files(path) {
			if st, err := os.Stat(name); err == nil {
				out = append(out, logFile{name, inode(st)})
			}
		}
		return out
	}
	prev := list()
	for i := 0; i < 100; i++ {
		cur := list()
		if slices.Equal(prev, cur) {
			return cur
		}
		prev = cur
	}
	return prev
}

// errMoved means a file was renamed between listing and opening it.
var errMoved = errors.New("log file moved while being opened")

// open opens lf by name and checks it is still the file the listing saw.
func (lf logFile) open() (*os.File, error) {
	f, err := openLog(lf.name)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, errMoved
		}
		return nil, fmt.Errorf("follow log: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("follow log: %w", err)
	}
	if inode(st) != lf.ino {
		f.Close()
		return nil, errMoved
	}
	return f, nil
}

// retryMoved runs open again while a rotation moves files under it.
func retryMoved(open func() (*os.File, error)) (*os.File, error) {
	for i := 0; ; i++ {
		f, err := open()
		if !errors.Is(err, errMoved) || i == 100 {
			return f, err
		}
	}
}

// openAt opens the file holding pos (by inode) at its offset; with a zero
// or rotated-away position it opens the oldest file at its start. It returns
// nil, nil when the log does not exist yet.
func openAt(path string, pos Position) (*os.File, error) {
	return retryMoved(func() (*os.File, error) {
		all := snapshot(path)
		if len(all) == 0 {
			return nil, nil
		}
		for _, lf := range all {
			if pos.Inode == 0 || lf.ino != pos.Inode {
				continue
			}
			f, err := lf.open()
			if err != nil {
				return nil, err
			}
			if _, err := f.Seek(pos.Offset, io.SeekStart); err != nil {
				f.Close()
				return nil, fmt.Errorf("follow log: %w", err)
			}
			return f, nil
		}
		// Our file is gone (rotated out): start from the oldest that remains.
		return all[0].open()
	})
}

// nextFile returns the file written after cur, or nil when cur is the live one.
func nextFile(path string, cur *os.File) (*os.File, error) {
	st, err := cur.Stat()
	if err != nil {
		return nil, fmt.Errorf("follow log: %w", err)
	}
	ino := inode(st)
	return retryMoved(func() (*os.File, error) {
		all := snapshot(path)
		for i, lf := range all {
			if lf.ino != ino {
				continue
			}
			if i == len(all)-1 {
				return nil, nil
			}
			return all[i+1].open()
		}
		// cur was rotated out while we read it: continue with the oldest left.
		if len(all) == 0 {
			return nil, nil
		}
		return all[0].open()
	})
}
