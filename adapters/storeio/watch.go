package storeio

import (
	"errors"
	"time"
)

// FolderWatch tells whether a folder changed: two equal tokens from Token
// mean nothing in dir (its entries, and the files directly in it) changed
// in between. ok is false when dir is not watched: read it by stat.
// A change that completed before Token was called moves the token that
// call returns.
type FolderWatch interface {
	Token(dir string) (token uint64, ok bool)
}

// ErrWatchUnsupported means this system has no folder watch agentctl uses:
// every folder is read by stat.
var ErrWatchUnsupported = errors.New("folder watches are not supported on this system")

// WatchReport says how a Watcher is doing, for `agentctl daemon status`.
type WatchReport struct {
	// Folders is how many folders are watched.
	Folders int
	// Unwatched is how many folders could not be watched and are read by
	// stat instead; Failures names some of them and why.
	Unwatched int
	Failures  []WatchFailure
	// Overflows counts the times the kernel's event queue overflowed: the
	// events lost, every folder was read again by stat once.
	Overflows    int
	LastOverflow time.Time
	// Limit is the system's limit on watches per user
	// (fs.inotify.max_user_watches), 0 when unknown.
	Limit int
}

// WatchFailure is one folder that could not be watched.
type WatchFailure struct {
	Folder string
	Reason string
}

// maxReportedFailures bounds the failures a report names.
const maxReportedFailures = 10

// retryFailedAfter is how long a folder that could not be watched is read
// by stat before a watch on it is tried again (a limit may have been
// raised, watches freed).
const retryFailedAfter = time.Minute
