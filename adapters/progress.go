package adapters

import (
	"context"
	"sync/atomic"
)

// Progress counts what a discovery under way found and has read so far: a
// first read of a large store takes seconds, and a person waiting for it
// is told how far it got. An adapter adds what it found to read
// (Found) and each one read (Read); a nil Progress counts nothing.
type Progress struct {
	found, read atomic.Int64
}

// Found adds n sessions (or files) to read.
func (p *Progress) Found(n int) {
	if p != nil {
		p.found.Add(int64(n))
	}
}

// Read counts n of them read.
func (p *Progress) Read(n int) {
	if p != nil {
		p.read.Add(int64(n))
	}
}

// Counts returns how many were read of how many found.
func (p *Progress) Counts() (read, found int64) {
	if p == nil {
		return 0, 0
	}
	return p.read.Load(), p.found.Load()
}

type progressKey struct{}

// WithProgress returns ctx carrying p, for the discovery it bounds.
func WithProgress(ctx context.Context, p *Progress) context.Context {
	return context.WithValue(ctx, progressKey{}, p)
}

// ProgressFrom returns the Progress ctx carries, nil when none.
func ProgressFrom(ctx context.Context) *Progress {
	p, _ := ctx.Value(progressKey{}).(*Progress)
	return p
}
