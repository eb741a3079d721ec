package storeio

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
)

func joinLines(lines [][]byte) string {
	var s []string
	for _, l := range lines {
		s = append(s, string(l))
	}
	return strings.Join(s, "|")
}

func TestHeadLines(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		data     string
		n        int
		maxBytes int64
		want     string
	}{
		{"empty", "", 5, 100, ""},
		{"fewer lines than asked", "{}\n{\"a\":1}\n", 5, 100, `{}|{"a":1}`},
		{"stops at n", "1\n2\n3\n", 2, 100, "1|2"},
		{"half-written last line dropped", "{\"a\":1}\n{\"b\":", 5, 100, `{"a":1}`},
		{"unterminated but valid JSON kept", "{\"a\":1}\n{\"b\":2}", 5, 100, `{"a":1}|{"b":2}`},
		{"cut by the byte budget", "{\"a\":1}\n{\"bbbbbbbb\":2}\n", 5, 12, `{"a":1}`},
		{"blank lines are lines", "\n\n1\n", 5, 100, "||1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := HeadLines(strings.NewReader(tt.data), int64(len(tt.data)), tt.n, tt.maxBytes)
			if err != nil {
				t.Fatal(err)
			}
			if joinLines(got) != tt.want {
				t.Errorf("got %q, want %q", joinLines(got), tt.want)
			}
		})
	}
}

func TestTailLines(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		data      string
		n         int
		maxBytes  int64
		want      string
		wantStart int64
	}{
		{"empty", "", 3, 100, "", 0},
		{"whole small file", "1\n2\n3\n", 5, 100, "1|2|3", 0},
		{"last n", "1\n2\n3\n", 2, 100, "2|3", 2},
		{"half-written last line dropped", "{\"a\":1}\n{\"b\":2}\n{\"c\":", 1, 100, `{"b":2}`, 8},
		{"unterminated valid JSON kept", "{\"a\":1}\n{\"b\":2}", 1, 100, `{"b":2}`, 8},
		{"line cut by the budget dropped", "aaaaaaaaaa\nbb\ncc\n", 5, 8, "bb|cc", 11},
		{"single line no newline, not JSON", "abc", 1, 100, "", 3},
		{"only a newline", "\n", 1, 100, "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, start, err := TailLines(strings.NewReader(tt.data), int64(len(tt.data)), tt.n, tt.maxBytes)
			if err != nil {
				t.Fatal(err)
			}
			if joinLines(got) != tt.want || (len(got) > 0 && start != tt.wantStart) {
				t.Errorf("got %q at %d, want %q at %d", joinLines(got), start, tt.want, tt.wantStart)
			}
		})
	}
}

// TestTailLinesBlocks checks the backwards block reading across block
// boundaries against a naive split, for many line sizes.
func TestTailLinesBlocks(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	var lines []string
	for i := 0; i < 3000; i++ {
		l := fmt.Sprintf(`{"i":%d,"pad":"%s"}`, i, strings.Repeat("x", (i*37)%500))
		lines = append(lines, l)
		b.WriteString(l + "\n")
	}
	data := b.String()
	for _, n := range []int{1, 2, 10, 100, 1000, 2999, 3000, 5000} {
		got, start, err := TailLines(strings.NewReader(data), int64(len(data)), n, 1<<30)
		if err != nil {
			t.Fatal(err)
		}
		want := lines[max(len(lines)-n, 0):]
		if joinLines(got) != strings.Join(want, "|") {
			t.Fatalf("n=%d: got %d lines, want %d", n, len(got), len(want))
		}
		if !strings.HasPrefix(data[start:], want[0]+"\n") {
			t.Errorf("n=%d: start %d does not begin the first line", n, start)
		}
	}
	// A budget smaller than the lines asked for returns the last whole lines
	// within it.
	got, _, err := TailLines(strings.NewReader(data), int64(len(data)), 3000, 100<<10)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) == 0 || len(got) >= 3000 || string(got[len(got)-1]) != lines[len(lines)-1] {
		t.Errorf("budgeted tail: %d lines", len(got))
	}
}

// TestTailLinesWholeWindow: a caller that wants every line of the window
// (n not below it) gets what the block-by-block read gives, from one read
// into one buffer: no byte of the window allocated twice.
func TestTailLinesWholeWindow(t *testing.T) {
	var b strings.Builder
	for i := 0; i < 3000; i++ {
		fmt.Fprintf(&b, `{"i":%d,"pad":"%s"}`+"\n", i, strings.Repeat("x", (i*37)%500))
	}
	data := b.String()
	for _, window := range []int64{1, 100, 100 << 10, 256 << 10, int64(len(data)), 1 << 30} {
		whole, wholeStart, err := TailLines(strings.NewReader(data), int64(len(data)), math.MaxInt, window)
		if err != nil {
			t.Fatal(err)
		}
		blocks, blocksStart, err := TailLines(strings.NewReader(data), int64(len(data)), 3000, window)
		if err != nil {
			t.Fatal(err)
		}
		if joinLines(whole) != joinLines(blocks) || wholeStart != blocksStart {
			t.Errorf("window %d: %d lines from %d, block by block %d from %d", window, len(whole), wholeStart, len(blocks), blocksStart)
		}
	}
	// Not parallel: the allocations counted are the process's.
	const window = 256 << 10
	r := strings.NewReader(data)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range 10 {
		if _, _, err := TailLines(r, int64(len(data)), math.MaxInt, window); err != nil {
			t.Fatal(err)
		}
	}
	runtime.ReadMemStats(&after)
	if per := (after.TotalAlloc - before.TotalAlloc) / 10; per > 2*window {
		t.Errorf("%d bytes allocated to read a %d-byte window", per, window)
	}
}

// shrinkingReader pretends the file lost bytes after the caller's stat.
type shrinkingReader struct{ size int64 }

func (s shrinkingReader) ReadAt(p []byte, off int64) (int, error) {
	if off+int64(len(p)) > s.size {
		return 0, errors.New("EOF-ish")
	}
	return len(p), nil
}

func TestTailLinesTruncatedUnderneath(t *testing.T) {
	t.Parallel()
	if _, _, err := TailLines(shrinkingReader{size: 10}, 1000, 5, 1000); err == nil {
		t.Error("no error for a file shorter than its stat")
	}
}

func TestScanLines(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("y", 200<<10) // longer than the reader's buffer
	tests := []struct {
		name     string
		data     string
		maxLine  int
		want     string
		consumed int64
		skipped  int
		partial  string
	}{
		{"plain", "a\nb\n", 10, "a|b", 4, 0, ""},
		{"partial tail", "a\nb\nhalf", 10, "a|b", 4, 0, "half"},
		{"too long skipped", "a\n" + "0123456789ABC\n" + "b\n", 10, "a|b", 18, 1, ""},
		{"long line within limit", "a\n" + long + "\nb\n", 300 << 10, "a|" + long + "|b", int64(len(long)) + 5, 0, ""},
		{"long line over limit", "a\n" + long + "\nb\n", 100 << 10, "a|b", int64(len(long)) + 5, 1, ""},
		{"long partial over limit", "a\n" + long, 100 << 10, "a", 2, 0, ""},
		{"long partial within limit", "a\n" + long, 300 << 10, "a", 2, 0, long},
		{"one line without a newline", "abcdefghijklmnopqrstuvwxyz", 100, "", 0, 0, "abcdefghijklmnopqrstuvwxyz"},
		{"one line with its newline", "abcdefghijklmnopqrstuvwxyz\n", 100, "abcdefghijklmnopqrstuvwxyz", 27, 0, ""},
		{"tiny", "a", 10, "", 0, 0, "a"},
		{"empty", "", 10, "", 0, 0, ""},
	}
	// One LineBuffers for every case: a buffer that served a scan (a long
	// line, a partial one) must leave nothing behind for the next.
	var lines LineBuffers
	for _, tt := range tests {
		// A reader that says its size gets a buffer of that size: the
		// lines must come out the same.
		readers := map[string]func() io.Reader{
			"unsized": func() io.Reader { return strings.NewReader(tt.data) },
			"sized":   func() io.Reader { return io.NewSectionReader(strings.NewReader(tt.data), 0, int64(len(tt.data))) },
		}
		scanners := map[string]func(io.Reader, int, func([]byte) error) (ScanResult, error){
			"": ScanLines, "/lent": lines.ScanLines, "/nil": (*LineBuffers)(nil).ScanLines,
		}
		for kind, r := range readers {
			for how, scan := range scanners {
				t.Run(tt.name+"/"+kind+how, func(t *testing.T) {
					var got []string
					res, err := scan(r(), tt.maxLine, func(l []byte) error {
						got = append(got, string(l))
						return nil
					})
					if err != nil {
						t.Fatal(err)
					}
					if strings.Join(got, "|") != tt.want || res.Consumed != tt.consumed || res.Skipped != tt.skipped || string(res.Partial) != tt.partial {
						t.Errorf("got %.40q consumed %d skipped %d partial %.20q", strings.Join(got, "|"), res.Consumed, res.Skipped, res.Partial)
					}
				})
			}
		}
	}
	stop := errors.New("stop")
	for _, scan := range []func(io.Reader, int, func([]byte) error) (ScanResult, error){ScanLines, lines.ScanLines} {
		_, err := scan(strings.NewReader("a\nb\n"), 10, func([]byte) error { return stop })
		if !errors.Is(err, stop) {
			t.Errorf("callback error not returned: %v", err)
		}
	}
}

// TestLineBuffersLendAgain: scans through one LineBuffers reuse its read
// buffers, where ScanLines allocates one for each (a first read scans
// thousands of files). Not parallel: it reads the process's allocation
// count. The pool may drop a buffer (the race detector drops some on
// purpose, a collection empties it), so the bound is half of one each.
func TestLineBuffersLendAgain(t *testing.T) {
	data := strings.Repeat(`{"type":"message","role":"assistant"}`+"\n", 4000) // over one buffer
	r := strings.NewReader(data)
	var lines LineBuffers
	const scans = 100
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	n := 0
	for range scans {
		if _, err := lines.ScanLines(io.NewSectionReader(r, 0, int64(len(data))), 1<<20, func([]byte) error { n++; return nil }); err != nil {
			t.Fatal(err)
		}
	}
	runtime.ReadMemStats(&after)
	if n != scans*4000 {
		t.Fatalf("%d lines, want %d", n, scans*4000)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > scans*scanBuffer/2 {
		t.Errorf("%d scans allocated %d bytes, a %d-byte buffer each is %d", scans, got, scanBuffer, scans*scanBuffer)
	}
}

// TestScanLinesSmallSection holds the read buffer to what a small input
// holds: a first read scans thousands of small files, and a 64 KB buffer
// zeroed for each was a tenth of its CPU. Not parallel: it reads the
// process's allocation count.
func TestScanLinesSmallSection(t *testing.T) {
	data := strings.Repeat(`{"type":"message","role":"assistant"}`+"\n", 20)
	r := strings.NewReader(data)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	n := 0
	for range 10 {
		if _, err := ScanLines(io.NewSectionReader(r, 0, int64(len(data))), 1<<20, func([]byte) error { n++; return nil }); err != nil {
			t.Fatal(err)
		}
	}
	runtime.ReadMemStats(&after)
	if n != 200 {
		t.Fatalf("%d lines, want 200", n)
	}
	if per := (after.TotalAlloc - before.TotalAlloc) / 10; per > 8<<10 {
		t.Errorf("a scan of %d bytes allocated %d bytes", len(data), per)
	}
}

func TestResumeOffset(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "s.jsonl")
	write := func(s string, flag int) FileKey {
		t.Helper()
		f, err := os.OpenFile(path, flag|os.O_WRONLY|os.O_CREATE, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteString(s); err != nil {
			t.Fatal(err)
		}
		f.Close()
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return KeyOf(path, fi)
	}
	k1 := write("{\"a\":1}\n", os.O_TRUNC)
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	fp, err := Fingerprint(f, k1.Size)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	read := func() *os.File {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}

	k2 := write("{\"b\":2}\n", os.O_APPEND)
	if got := ResumeOffset(read(), k2, k1, k1.Size, fp); got != k1.Size {
		t.Errorf("appended: resume at %d, want %d", got, k1.Size)
	}
	k3 := write("{\"X\":9}\n{\"c\":3}\n{\"d\":4}\n", os.O_TRUNC)
	if got := ResumeOffset(read(), k3, k1, k1.Size, fp); got != 0 {
		t.Errorf("rewritten in place: resume at %d, want 0", got)
	}
	k4 := write("{}\n", os.O_TRUNC)
	if got := ResumeOffset(read(), k4, k3, k3.Size, fp); got != 0 {
		t.Errorf("truncated: resume at %d, want 0", got)
	}
	if !bytes.Equal(fp, []byte("{\"a\":1}\n")) {
		t.Errorf("fingerprint %q", fp)
	}
}

// chunksOf runs TailChunks to the end and returns the lines it handed over
// in file order, and how many chunks it took.
func chunksOf(t *testing.T, data string, window, maxBytes int64) ([]string, int) {
	t.Helper()
	var chunks [][]string
	err := TailChunks(context.Background(), strings.NewReader(data), int64(len(data)), window, maxBytes, func(lines [][]byte) bool {
		var c []string
		for _, l := range lines {
			c = append(c, string(l))
		}
		chunks = append(chunks, c)
		return false
	})
	if err != nil {
		t.Fatal(err)
	}
	var all []string
	for i := len(chunks) - 1; i >= 0; i-- {
		all = append(all, chunks[i]...)
	}
	return all, len(chunks)
}

func TestTailChunksHandsEachLineOnce(t *testing.T) {
	t.Parallel()
	var lines []string
	for i := range 500 {
		// Varied lengths, some longer than the first window.
		lines = append(lines, fmt.Sprintf(`{"i":%d,"pad":%q}`, i, strings.Repeat("x", (i*37)%300)))
	}
	data := strings.Join(lines, "\n") + "\n"
	for _, window := range []int64{64, 100, 1000, 1 << 20} {
		got, chunks := chunksOf(t, data, window, 1<<30)
		if strings.Join(got, "\n") != strings.Join(lines, "\n") {
			t.Fatalf("window %d: %d lines back, want the %d lines once each, in order", window, len(got), len(lines))
		}
		if window < 1000 && chunks < 2 {
			t.Errorf("window %d: %d chunks, want the file read in several", window, chunks)
		}
	}
}

func TestTailChunks(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name             string
		data             string
		window, maxBytes int64
		want             string
	}{
		{"empty", "", 8, 100, ""},
		{"half-written last line left out", "{\"a\":1}\n{\"b\":", 4, 100, `{"a":1}`},
		{"unterminated valid JSON left out too", "{\"a\":1}\n{\"b\":2}", 4, 100, `{"a":1}`},
		{"a line longer than the window", "{\"a\":1}\n{\"bbbbbbbbbbbbbbbbbbbbbb\":2}\n{}\n", 4, 100, `{"a":1}|{"bbbbbbbbbbbbbbbbbbbbbb":2}|{}`},
		{"only the last maxBytes", "{\"a\":1}\n{\"b\":2}\n{\"c\":3}\n", 4, 16, `{"b":2}|{"c":3}`},
		{"a first line longer than what is left", strings.Repeat("z", 50) + "\n{}\n", 4, 20, `{}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _ := chunksOf(t, tt.data, tt.window, tt.maxBytes)
			if s := strings.Join(got, "|"); s != tt.want {
				t.Errorf("lines %q, want %q", s, tt.want)
			}
		})
	}
}

func TestTailChunksStops(t *testing.T) {
	t.Parallel()
	data := strings.Repeat("{\"line\":true}\n", 10000)
	calls := 0
	err := TailChunks(context.Background(), strings.NewReader(data), int64(len(data)), 256, 1<<30, func([][]byte) bool {
		calls++
		return calls == 2
	})
	if err != nil || calls != 2 {
		t.Errorf("%d calls, %v; want a stop after the second chunk", calls, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err = TailChunks(ctx, strings.NewReader(data), int64(len(data)), 256, 1<<30, func([][]byte) bool { return false })
	if !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

// countingReaderAt records the largest read asked of it.
type countingReaderAt struct {
	r       io.ReaderAt
	largest int
}

func (c *countingReaderAt) ReadAt(p []byte, off int64) (int, error) {
	c.largest = max(c.largest, len(p))
	return c.r.ReadAt(p, off)
}

// TestLineBuffersOfASize: a head reader's smaller buffers ask the file for
// no more than their size at a time, and still hand over a line longer
// than a buffer whole.
func TestLineBuffersOfASize(t *testing.T) {
	t.Parallel()
	long := `{"text":"` + strings.Repeat("x", 20<<10) + `"}`
	data := `{"type":"user"}` + "\n" + long + "\n" + strings.Repeat(`{"type":"assistant"}`+"\n", 3000)
	lines := LineBuffers{Size: 4 << 10}
	for range 3 { // a fresh buffer, then lent ones
		r := &countingReaderAt{r: strings.NewReader(data)}
		var got []string
		_, err := lines.ScanLines(io.NewSectionReader(r, 0, int64(len(data))), 1<<20, func(line []byte) error {
			got = append(got, string(line))
			if len(got) == 2 {
				return io.EOF // a head read stops early
			}
			return nil
		})
		if !errors.Is(err, io.EOF) || len(got) != 2 || got[0] != `{"type":"user"}` || got[1] != long {
			t.Fatalf("lines %d (%v), want the first two whole", len(got), err)
		}
		if r.largest > 4<<10 {
			t.Fatalf("a read asked for %d bytes, more than the buffers' 4 KB", r.largest)
		}
	}
}

// FuzzBytesReadsAsAFile: HeadLines, TailLines and ScanLines cut their
// lines from Bytes in memory; what they return is what they return over
// the same bytes read from a reader.
func FuzzBytesReadsAsAFile(f *testing.F) {
	f.Add([]byte("{\"a\":1}\n{\"b\":2}\n{\"c\":3}"), 2, 10, 8)
	f.Add([]byte("one\ntwo\n\nthree\n"), 1, 100, 3)
	f.Add([]byte(strings.Repeat("x", 70000)+"\nshort\n"+strings.Repeat("y\n", 40000)), 5, 200000, 1000)
	f.Add([]byte(""), 3, 5, 5)
	f.Add([]byte("\n\n\n"), 9, 2, 0)
	f.Fuzz(func(t *testing.T, data []byte, n, maxBytes, maxLine int) {
		// The callers' arguments: counts and bounds are not negative.
		n, maxBytes, maxLine = abs(n)%2000, abs(maxBytes)%(1<<20), abs(maxLine)%(1<<20)
		file := bytes.NewReader(data) // an io.ReaderAt that is not Bytes
		mem := Bytes(data)
		size := int64(len(data))
		wantH, wantErr := HeadLines(file, size, n, int64(maxBytes))
		gotH, gotErr := HeadLines(mem, size, n, int64(maxBytes))
		if !equalLines(gotH, wantH) || (gotErr == nil) != (wantErr == nil) {
			t.Fatalf("HeadLines: %q, %v; from a reader %q, %v", gotH, gotErr, wantH, wantErr)
		}
		wantT, wantStart, wantErr := TailLines(file, size, n, int64(maxBytes))
		gotT, gotStart, gotErr := TailLines(mem, size, n, int64(maxBytes))
		if !equalLines(gotT, wantT) || gotStart != wantStart || (gotErr == nil) != (wantErr == nil) {
			t.Fatalf("TailLines: %q from %d, %v; from a reader %q from %d, %v", gotT, gotStart, gotErr, wantT, wantStart, wantErr)
		}
		from := min(int64(max(n, 0)), size)
		scan := func(r io.ReaderAt) (ScanResult, []string, error) {
			var lines []string
			res, err := ScanLines(io.NewSectionReader(r, from, size-from), maxLine, func(l []byte) error {
				lines = append(lines, string(l))
				if len(lines) == 1000 {
					return io.EOF
				}
				return nil
			})
			return res, lines, err
		}
		wantRes, wantLines, wantErr := scan(file)
		gotRes, gotLines, gotErr := scan(mem)
		if !reflect.DeepEqual(gotRes, wantRes) || !slices.Equal(gotLines, wantLines) || !errors.Is(gotErr, wantErr) {
			t.Fatalf("ScanLines: %+v %q %v; from a reader %+v %q %v", gotRes, gotLines, gotErr, wantRes, wantLines, wantErr)
		}
	})
}

func abs(i int) int {
	if i < 0 {
		return -(i + 1)
	}
	return i
}

func equalLines(a, b [][]byte) bool {
	return slices.EqualFunc(a, b, bytes.Equal)
}
