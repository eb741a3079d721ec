package main

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/agentctl/agentctl/api"
)

// fakeReading answers DaemonStatus with reading, and says when it was
// asked.
type fakeReading struct {
	reading *api.ReadingStatus
	asked   chan struct{}
	once    sync.Once
}

func (f *fakeReading) DaemonStatus(context.Context) (api.DaemonStatus, error) {
	f.once.Do(func() { close(f.asked) })
	return api.DaemonStatus{Reading: f.reading}, nil
}

// progressWriter is a buffer written by the progress goroutine and read by the
// test; drawn closes at the first write.
type progressWriter struct {
	mu    sync.Mutex
	b     bytes.Buffer
	drawn chan struct{}
	once  sync.Once
}

func (w *progressWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.once.Do(func() { close(w.drawn) })
	return w.b.Write(p)
}

// A wait for a service reading its stores shows how far it got, and the
// line is gone when the wait ends; with nothing being read, nothing shows.
func TestReadingProgress(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		reading *api.ReadingStatus
		want    string
	}{
		{"reading", &api.ReadingStatus{Found: 7000, Read: 3200}, "\r\x1b[Kreading 7,000 sessions… 3,200"},
		{"nothing read", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			src := &fakeReading{reading: tc.reading, asked: make(chan struct{})}
			w := &progressWriter{drawn: make(chan struct{})}
			p := readingProgress{w: w, src: src, after: 0, every: 1}
			err := p.run(context.Background(), func() error {
				<-src.asked
				if tc.reading != nil {
					<-w.drawn
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			got := w.b.String()
			if tc.want == "" {
				if got != "" {
					t.Fatalf("wrote %q with nothing being read", got)
				}
				return
			}
			if !strings.HasPrefix(got, tc.want) || !strings.HasSuffix(got, "\r\x1b[K") {
				t.Fatalf("wrote %q, want %q redrawn and then erased", got, tc.want)
			}
		})
	}
}
