//go:build linux

package storeio

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Watcher watches folders with inotify, added as they are first asked
// about. Its events are read both by a goroutine (so the kernel's queue
// does not fill between queries) and by every Token call, which first
// reads what the kernel queued so far: the kernel queues a file's event
// before the write that caused it returns, so a change completed before a
// query is always seen by it. That is why it reads the inotify descriptor
// itself rather than through a library that delivers events on a channel,
// where a query cannot tell whether an event is still on its way.
//
// When the queue overflows, events were lost: every folder's token moves,
// so each is read again by stat once. A folder that cannot be watched (the
// watch limit, permissions) is read by stat on every query and named in
// Report. It is safe for concurrent use.
type Watcher struct {
	fd   int // the inotify instance, non-blocking
	stop int // an eventfd that ends the reading goroutine
	done chan struct{}

	mu     sync.Mutex
	closed bool
	buf    []byte
	// next is the last token handed out; every change takes a new one, so
	// a folder watched again after its watch ended never repeats a token.
	next   uint64
	byPath map[string]*watchedFolder
	byWD   map[int32]*watchedFolder
	failed map[string]watchFailure
	report WatchReport
	limit  int
	// addWatch sets a watch on a folder (inotify_add_watch); a test of the
	// limit puts a failing one in its place, since the real limit cannot be
	// reached without changing the machine's settings.
	addWatch func(dir string) (int, error)
}

// watchedFolder is one inotify watch; paths are the names it was asked
// under (two paths of one folder share a watch).
type watchedFolder struct {
	wd    int32
	token uint64
	paths []string
}

type watchFailure struct {
	reason string
	at     time.Time
}

// watchMask is what changes a folder's listing or the stat of a file in
// it. Reads and opens are left out: agentctl's own reads must not count.
const watchMask = unix.IN_MODIFY | unix.IN_ATTRIB | unix.IN_CREATE | unix.IN_DELETE |
	unix.IN_MOVED_FROM | unix.IN_MOVED_TO | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF |
	unix.IN_ONLYDIR

// NewWatcher starts an inotify instance and the goroutine that reads it;
// Close ends both.
func NewWatcher() (*Watcher, error) { return newWatcher(true) }

// newWatcher is NewWatcher; background false leaves the events to Token
// alone (a test lets the queue overflow).
func newWatcher(background bool) (*Watcher, error) {
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("start a folder watch: %w", err)
	}
	stop, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("start a folder watch: %w", err)
	}
	w := &Watcher{
		fd: fd, stop: stop, done: make(chan struct{}),
		buf:    make([]byte, 64<<10),
		byPath: map[string]*watchedFolder{},
		byWD:   map[int32]*watchedFolder{},
		failed: map[string]watchFailure{},
		limit:  readLimit("/proc/sys/fs/inotify/max_user_watches"),
	}
	w.addWatch = func(dir string) (int, error) { return unix.InotifyAddWatch(fd, dir, watchMask) }
	if background {
		go w.readLoop()
	} else {
		close(w.done)
	}
	return w, nil
}

// readLimit reads a number from a /proc/sys file, 0 when it cannot.
func readLimit(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return n
}

// readLoop drains the queue whenever the kernel has events, until Close.
func (w *Watcher) readLoop() {
	defer close(w.done)
	fds := []unix.PollFd{{Fd: int32(w.fd), Events: unix.POLLIN}, {Fd: int32(w.stop), Events: unix.POLLIN}}
	for {
		fds[0].Revents, fds[1].Revents = 0, 0
		if _, err := unix.Poll(fds, -1); err != nil && !errors.Is(err, unix.EINTR) {
			return
		}
		if fds[1].Revents != 0 {
			return
		}
		w.mu.Lock()
		w.drainLocked()
		w.mu.Unlock()
	}
}

// Token implements FolderWatch: dir's token after every event queued so
// far, watching dir first when it is not yet. The watch is set before the
// caller reads dir, so a change during the read moves the token.
func (w *Watcher) Token(dir string) (uint64, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return 0, false
	}
	w.drainLocked()
	if f, ok := w.byPath[dir]; ok {
		return f.token, true
	}
	if f, ok := w.failed[dir]; ok && time.Since(f.at) < retryFailedAfter {
		return 0, false
	}
	wd, err := w.addWatch(dir)
	if err != nil {
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
			// Nothing to watch: the caller's read says the folder is
			// missing.
			delete(w.failed, dir)
			return 0, false
		}
		reason := err.Error()
		if errors.Is(err, unix.ENOSPC) {
			reason = fmt.Sprintf("the limit on inotify watches is reached (fs.inotify.max_user_watches = %d)", w.limit)
		}
		w.failed[dir] = watchFailure{reason: reason, at: time.Now()}
		return 0, false
	}
	delete(w.failed, dir)
	w.next++
	f, ok := w.byWD[int32(wd)]
	if !ok {
		f = &watchedFolder{wd: int32(wd)}
		w.byWD[f.wd] = f
	}
	// A new watch, or a new name for a watched folder: either way the
	// token is new, so a listing cached under an old one is read again.
	f.token = w.next
	f.paths = append(f.paths, dir)
	w.byPath[dir] = f
	return f.token, true
}

// drainLocked reads every queued event and moves the tokens of the
// folders they name.
func (w *Watcher) drainLocked() {
	for {
		n, err := unix.Read(w.fd, w.buf)
		if n <= 0 || err != nil {
			return
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&w.buf[off]))
			off += unix.SizeofInotifyEvent + int(ev.Len)
			w.event(ev.Wd, ev.Mask)
		}
	}
}

// event applies one inotify event.
func (w *Watcher) event(wd int32, mask uint32) {
	if mask&unix.IN_Q_OVERFLOW != 0 {
		w.report.Overflows++
		w.report.LastOverflow = time.Now()
		for _, f := range w.byWD {
			w.next++
			f.token = w.next
		}
		return
	}
	f, ok := w.byWD[wd]
	if !ok {
		return
	}
	w.next++
	f.token = w.next
	switch {
	case mask&unix.IN_IGNORED != 0:
		// The watch ended (the folder is gone, or was removed below).
		w.forgetLocked(f)
	case mask&(unix.IN_DELETE_SELF|unix.IN_MOVE_SELF) != 0:
		// A moved folder's watch would follow it to its new name: end it,
		// so its old name is watched again afresh when asked about.
		_, _ = unix.InotifyRmWatch(w.fd, uint32(f.wd))
		w.forgetLocked(f)
	}
}

func (w *Watcher) forgetLocked(f *watchedFolder) {
	delete(w.byWD, f.wd)
	for _, p := range f.paths {
		if w.byPath[p] == f {
			delete(w.byPath, p)
		}
	}
}

// Report says what is watched, what is not and why, and the overflows.
func (w *Watcher) Report() WatchReport {
	w.mu.Lock()
	defer w.mu.Unlock()
	r := w.report
	r.Folders = len(w.byPath)
	r.Unwatched = len(w.failed)
	r.Limit = w.limit
	for dir, f := range w.failed {
		r.Failures = append(r.Failures, WatchFailure{Folder: dir, Reason: f.reason})
	}
	sort.Slice(r.Failures, func(i, j int) bool { return r.Failures[i].Folder < r.Failures[j].Folder })
	if len(r.Failures) > maxReportedFailures {
		r.Failures = r.Failures[:maxReportedFailures]
	}
	return r
}

// Close ends the watches and the reading goroutine. Tokens are never ok
// afterwards.
func (w *Watcher) Close() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil
	}
	w.closed = true
	w.mu.Unlock()
	one := []byte{1, 0, 0, 0, 0, 0, 0, 0}
	if _, err := unix.Write(w.stop, one); err != nil {
		return fmt.Errorf("stop the folder watch: %w", err)
	}
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	unix.Close(w.stop)
	return unix.Close(w.fd)
}
