package storeio

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// naiveLines is the reference: the complete lines of data, plus an
// unterminated last line when it is valid JSON.
func naiveLines(data []byte) [][]byte {
	parts := bytes.Split(data, []byte{'\n'})
	last := parts[len(parts)-1]
	parts = parts[:len(parts)-1]
	if len(bytes.TrimSpace(last)) > 0 && json.Valid(last) {
		parts = append(parts, last)
	}
	return parts
}

func FuzzJSONLReaders(f *testing.F) {
	f.Add([]byte("{\"a\":1}\n{\"b\":2}\n"), 1, 100)
	f.Add([]byte("{\"a\":1}\n{\"b\":"), 3, 5)
	f.Add([]byte("\n\n\n"), 2, 1)
	f.Add([]byte(strings.Repeat("{\"pad\":\"xxxxxxxx\"}\n", 5000)), 40, 1<<20)
	f.Add([]byte("\x00\xff\n{}"), 1, 2)
	f.Fuzz(func(t *testing.T, data []byte, n int, maxLine int) {
		n = n%100 + 1
		if n < 1 {
			n += 100
		}
		maxLine = maxLine%4096 + 1
		if maxLine < 1 {
			maxLine += 4096
		}
		ref := naiveLines(data)
		size := int64(len(data))

		head, err := HeadLines(bytes.NewReader(data), size, n, size+1)
		if err != nil {
			t.Fatal(err)
		}
		if want := ref[:min(n, len(ref))]; joinLines(head) != joinLines(want) || len(head) != len(want) {
			t.Fatalf("HeadLines(%d) = %q, want %q", n, head, want)
		}

		tail, start, err := TailLines(bytes.NewReader(data), size, n, size+1)
		if err != nil {
			t.Fatal(err)
		}
		want := ref[max(len(ref)-n, 0):]
		if joinLines(tail) != joinLines(want) || len(tail) != len(want) {
			t.Fatalf("TailLines(%d) = %q, want %q", n, tail, want)
		}
		if len(tail) > 0 && (!bytes.HasPrefix(data[start:], tail[0]) || (start > 0 && data[start-1] != '\n')) {
			t.Fatalf("TailLines start %d is not a line start", start)
		}
		// With a byte budget, whatever comes back is still the file's last lines.
		budget := int64(maxLine)
		small, _, err := TailLines(bytes.NewReader(data), size, n, budget)
		if err != nil {
			t.Fatal(err)
		}
		if len(small) > len(want) || joinLines(small) != joinLines(want[len(want)-len(small):]) {
			t.Fatalf("budgeted TailLines = %q, not a suffix of %q", small, want)
		}

		var scanned [][]byte
		res, err := ScanLines(bytes.NewReader(data), maxLine, func(l []byte) error {
			scanned = append(scanned, append([]byte(nil), l...))
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		complete := bytes.Split(data, []byte{'\n'})
		complete = complete[:len(complete)-1]
		var wantScan [][]byte
		skipped := 0
		for _, l := range complete {
			if len(l) > maxLine {
				skipped++
				continue
			}
			wantScan = append(wantScan, l)
		}
		if joinLines(scanned) != joinLines(wantScan) || len(scanned) != len(wantScan) || res.Skipped != skipped {
			t.Fatalf("ScanLines = %q (skipped %d), want %q (skipped %d)", scanned, res.Skipped, wantScan, skipped)
		}
		if wantConsumed := int64(bytes.LastIndexByte(data, '\n') + 1); res.Consumed != wantConsumed {
			t.Fatalf("Consumed %d, want %d", res.Consumed, wantConsumed)
		}
		rest := data[res.Consumed:]
		if len(rest) <= maxLine && !bytes.Equal(res.Partial, rest) {
			t.Fatalf("Partial %q, want %q", res.Partial, rest)
		}
	})
}
