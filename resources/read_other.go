//go:build !linux

package resources

import "context"

// reader keeps nothing open where the process table gives no figures.
type reader struct{}

func newReader() *reader      { return &reader{} }
func (*reader) forget(string) {}
func (*reader) close()        {}

// read knows no figures where the process table gives none: every
// session's are unknown.
func (s *Sampler) read(_ context.Context, targets []Target, _ Options) []*figures {
	return make([]*figures, len(targets))
}
