package main

import (
	"bufio"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/api"
)

// A partial line is rewritten in place on a terminal; in a pipe or file it
// is continued where it stopped, and shown again on a line of its own when
// a carriage return rewrote it.
func TestLogViewPartialLines(t *testing.T) {
	t.Parallel()
	part := func(s string) api.LogChunk { return api.LogChunk{Text: s, Partial: true} }
	line := func(s string) api.LogChunk { return api.LogChunk{Text: s} }
	tests := []struct {
		name    string
		inPlace bool
		chunks  []api.LogChunk
		want    string
	}{
		{"pipe: grows then ends", false, []api.LogChunk{part("still"), part("still typ"), line("still typing\nnext")}, "still typing\nnext\n"},
		{"pipe: rewritten", false, []api.LogChunk{part("10%"), part("20%"), line("100%")}, "10%\n20%\n100%\n"},
		{"pipe: cleared", false, []api.LogChunk{part("abc"), part(""), line("x")}, "abc\nx\n"},
		{"pipe: ends at the end", false, []api.LogChunk{line("a"), part("b"), line("b"), {End: true}}, "a\nb\n"},
		{"terminal: in place", true, []api.LogChunk{part("still"), line("still typing")}, "still\r\x1b[Kstill typing\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var b strings.Builder
			w := bufio.NewWriter(&b)
			v := logView{inPlace: tc.inPlace}
			for _, ch := range tc.chunks {
				if err := v.write(w, ch, false); err != nil {
					t.Fatal(err)
				}
			}
			w.Flush()
			if b.String() != tc.want {
				t.Errorf("printed %q, want %q", b.String(), tc.want)
			}
		})
	}
}
