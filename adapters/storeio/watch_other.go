//go:build !linux

package storeio

// Watcher is not available on this system: NewWatcher fails with
// ErrWatchUnsupported and every folder is read by stat.
type Watcher struct{}

// NewWatcher fails with ErrWatchUnsupported.
func NewWatcher() (*Watcher, error) { return nil, ErrWatchUnsupported }

// Token is never ok.
func (w *Watcher) Token(string) (uint64, bool) { return 0, false }

// Report is empty.
func (w *Watcher) Report() WatchReport { return WatchReport{} }

// Close does nothing.
func (w *Watcher) Close() error { return nil }
