package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/agentctl/agentctl/api"
)

// criEntry is one entry of a container's log file as the runtime writes it:
// its time, and its bytes (a line, or a piece of one longer than the
// runtime's entry size, without its end).
type criEntry struct {
	at  time.Time
	log string
}

// kubeletMarks is the layout of the kubelet's time marks (cri-client's
// RFC3339NanoFixed).
const kubeletMarks = "2006-01-02T15:04:05.000000000Z07:00"

// breakingKubelet serves a log as the kubelet's log reader does (each line
// with its first entry's time mark when asked; TailLines counts entries;
// SinceTime as the API carries it, to the second) and breaks streams off:
// open number i ends after cuts[i] bytes (-1 or none: the whole log), a
// followed one as the kubelet does when the container runtime is slow to
// answer it, a whole log only with an error.
type breakingKubelet struct {
	entries []criEntry
	cuts    []int
	opens   []corev1.PodLogOptions
	// runs says how many of running's answers are true.
	runs int
	// fail, when set, is the error a broken-off stream ends with (nil: EOF).
	fail error
}

func (k *breakingKubelet) open(_ context.Context, opts *corev1.PodLogOptions) (io.ReadCloser, error) {
	k.opens = append(k.opens, *opts)
	from := 0
	if opts.TailLines != nil {
		from = max(len(k.entries)-int(*opts.TailLines), 0)
	}
	var since time.Time
	if opts.SinceTime != nil {
		since = opts.SinceTime.Truncate(time.Second)
	}
	var b strings.Builder
	newLine := true
	for _, e := range k.entries[from:] {
		if !e.at.Before(since) {
			if opts.Timestamps && newLine {
				b.WriteString(e.at.Format(kubeletMarks) + " ")
			}
			b.WriteString(e.log)
		}
		newLine = strings.HasSuffix(e.log, "\n")
	}
	s := b.String()
	var err error
	if i := len(k.opens) - 1; (opts.Follow || k.fail != nil) && i < len(k.cuts) && k.cuts[i] >= 0 && k.cuts[i] < len(s) {
		s, err = s[:k.cuts[i]], k.fail
	}
	return io.NopCloser(&endingReader{r: strings.NewReader(s), err: err}), nil
}

// endingReader reads r in small pieces, then ends with err (EOF if nil).
type endingReader struct {
	r   *strings.Reader
	err error
}

func (e *endingReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p[:min(len(p), 7)])
	if err == io.EOF && e.err != nil {
		return n, e.err
	}
	return n, err
}

func (k *breakingKubelet) running(context.Context) (bool, error) {
	k.runs--
	return k.runs >= 0, nil
}

func (k *breakingKubelet) explain(err error) error { return fmt.Errorf("read the log: %w", err) }

// wholeLog is the container's output from entry from on.
func wholeLog(entries []criEntry, from int) string {
	var b strings.Builder
	for _, e := range entries[from:] {
		b.WriteString(e.log)
	}
	return b.String()
}

// copied runs copyLog over k and returns what it emitted: raw bytes, or
// the text view's lines each with its end.
func copied(k *breakingKubelet, o api.LogOptions) (string, error) {
	var got strings.Builder
	err := copyLog(context.Background(), k, o, time.Millisecond, func(ch api.LogChunk) error {
		got.Write(ch.Data)
		if ch.Text != "" {
			got.WriteString(ch.Text + "\n")
		}
		return nil
	})
	return got.String(), err
}

// TestCopyLogGoesOnWhereTheStreamBroke breaks the first stream off at every
// byte of it, and a second one too, and wants the container's output once:
// lines with the same time mark, a line in entries, lines across a second.
func TestCopyLogGoesOnWhereTheStreamBroke(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 10, 0, 0, 900_000_000, time.UTC)
	entries := []criEntry{
		{t0, "one\n"},
		{t0, "one again\n"},
		{t0.Add(50 * time.Millisecond), "a long line in "},
		{t0.Add(150 * time.Millisecond), "three entries, across a second "},
		{t0.Add(200 * time.Millisecond), "of its time\n"},
		{t0.Add(200 * time.Millisecond), "same mark as the entry before\n"},
		{t0.Add(2 * time.Second), "\x1b[1mlast\x1b[0m\n"},
		{t0.Add(2 * time.Second), "unfinished"},
	}
	marked, _ := (&breakingKubelet{entries: entries}).open(context.Background(), &corev1.PodLogOptions{Timestamps: true})
	whole, _ := io.ReadAll(marked)
	for _, tc := range []struct {
		name  string
		o     api.LogOptions
		from  int // the first entry shown
		fail  error
		again int // where the second stream breaks (-1: never)
	}{
		{"raw", api.LogOptions{Follow: true, Raw: true}, 0, nil, -1},
		{"raw, broken twice", api.LogOptions{Follow: true, Raw: true}, 0, nil, 5},
		{"raw, an error", api.LogOptions{Follow: true, Raw: true}, 0, io.ErrUnexpectedEOF, -1},
		{"tail", api.LogOptions{Follow: true, Raw: true, Lines: 3}, 5, nil, -1},
		{"text", api.LogOptions{Follow: true}, 0, nil, 40},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			want := wholeLog(entries, tc.from)
			for cut := 0; cut <= len(whole); cut++ {
				for _, runs := range []int{0, 1, 2} {
					k := &breakingKubelet{entries: entries, cuts: []int{cut, tc.again}, runs: runs, fail: tc.fail}
					got, err := copied(k, tc.o)
					if err != nil {
						t.Fatalf("cut at %d, running %d more: %v", cut, runs, err)
					}
					w := want
					if !tc.o.Raw {
						w = strings.ReplaceAll(strings.ReplaceAll(want, "\x1b[1m", ""), "\x1b[0m", "") + "\n"
					}
					if got != w {
						t.Fatalf("cut at %d, running %d more: %q, want %q (opens %d)", cut, runs, got, w, len(k.opens))
					}
				}
			}
		})
	}
}

// TestCopyLogTailInsideALine: a tail that begins inside a line of three
// entries. Broken off after that line's end, the log goes on as ever;
// broken off in it, the reopened stream shows the line whole under its
// first entry's time and goes past the position: an error, never a line
// told twice.
func TestCopyLogTailInsideALine(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 10, 0, 0, 900_000_000, time.UTC)
	entries := []criEntry{
		{t0, "first\n"},
		{t0.Add(10 * time.Millisecond), "a long line in "},
		{t0.Add(20 * time.Millisecond), "three entries, "},
		{t0.Add(30 * time.Millisecond), "its end\n"},
		{t0.Add(30 * time.Millisecond), "next\n"},
		{t0.Add(2 * time.Second), "last\n"},
	}
	o := api.LogOptions{Follow: true, Raw: true, Lines: 4}
	tail, _ := (&breakingKubelet{entries: entries}).open(context.Background(), &corev1.PodLogOptions{Timestamps: true, TailLines: &[]int64{4}[0]})
	marked, _ := io.ReadAll(tail)
	contentAt := bytes.IndexByte(marked, ' ') + 1
	firstEnd := bytes.IndexByte(marked, '\n') + 1
	want := wholeLog(entries, 2)
	for cut := 0; cut <= len(marked); cut++ {
		for _, runs := range []int{0, 1} {
			k := &breakingKubelet{entries: entries, cuts: []int{cut}, runs: runs}
			got, err := copied(k, o)
			if cut > contentAt && cut < firstEnd {
				if err == nil || !strings.Contains(err.Error(), "began before the shown tail") || !strings.HasPrefix(want, got) {
					t.Fatalf("cut at %d in the tail's first line, running %d more: %q, %v; want a start of %q and an error", cut, runs, got, err, want)
				}
				continue
			}
			if err != nil || got != want {
				t.Fatalf("cut at %d, running %d more: %q, %v; want %q", cut, runs, got, err, want)
			}
		}
	}
}

// A stream that ends with the container is read once more from its end,
// and that read finds nothing: the output once, and no stream left open.
func TestCopyLogEndsWithTheContainer(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	k := &breakingKubelet{entries: []criEntry{{t0, "a\n"}, {t0.Add(time.Second), "b\n"}}}
	got, err := copied(k, api.LogOptions{Follow: true, Raw: true})
	if err != nil || got != "a\nb\n" || len(k.opens) != 2 || k.opens[1].Follow || k.opens[1].SinceTime == nil {
		t.Fatalf("%q, %v after %d opens (%+v); want each line once, and a last read from the position", got, err, len(k.opens), k.opens)
	}
	// Not following: one read, without marks.
	k = &breakingKubelet{entries: k.entries}
	if got, err := copied(k, api.LogOptions{Raw: true}); err != nil || len(k.opens) != 1 || k.opens[0].Timestamps || got != "a\nb\n" {
		t.Fatalf("a whole log: %q, %v after %d opens (%+v); want it in one read without marks", got, err, len(k.opens), k.opens)
	}
	// A tail that began inside a long line, the line unfinished when the
	// container ended: the last read shows the line under its first
	// entry's time and nothing after it, so nothing followed.
	k = &breakingKubelet{entries: []criEntry{{t0, "a long "}, {t0.Add(time.Millisecond), "line, "}, {t0.Add(2 * time.Millisecond), "unfinished"}}}
	if got, err := copied(k, api.LogOptions{Follow: true, Raw: true, Lines: 2}); err != nil || got != "line, unfinished" {
		t.Fatalf("a tail inside a line: %q, %v; want the tail", got, err)
	}
	// Not following, an error: said.
	k = &breakingKubelet{entries: k.entries, cuts: []int{3}, fail: io.ErrUnexpectedEOF}
	if _, err := copied(k, api.LogOptions{Raw: true}); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("a whole log broken off: %v; want the error", err)
	}
}

// TestMarkedLogWithoutMarks: a line start that is no mark is content, and
// a position in such a line cannot be gone on from.
func TestMarkedLogWithoutMarks(t *testing.T) {
	m := newMarkedLog()
	long := strings.Repeat("x", maxMark+5)
	got := m.Append(nil, []byte("continued\n"+long+" y\n"))
	if string(got) != "continued\n"+long+" y\n" {
		t.Fatalf("%q", got)
	}
	if _, _, err := m.Resume(); err == nil {
		t.Fatal("a position without a mark: resumed")
	}
	m = newMarkedLog()
	if _, placed, err := m.Resume(); placed || err != nil {
		t.Fatalf("nothing passed on: placed %v, %v; want to begin again", placed, err)
	}
}
