package top

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The pager gets what the log command writes, real processes on both ends
// of the pipe; a pager that quits early ends the reader too.
func TestPagerCmd(t *testing.T) {
	for _, bin := range []string{"echo", "sh", "cat", "head"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("%s is not installed", bin)
		}
	}
	// endless stands for a log that never ends.
	endless := filepath.Join(t.TempDir(), "endless")
	if err := os.WriteFile(endless, []byte("#!/bin/sh\nwhile :; do echo \"$*\"; done\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		exe     string
		pager   []string
		want    string
		wantErr string
	}{
		{name: "the log reaches the pager", exe: "echo", pager: []string{"cat"}, want: "logs -n 0 01abc\n"},
		{name: "a pager that quits early ends an endless log", exe: endless, pager: []string{"head", "-n", "2"}, want: "logs -n 0 01abc\nlogs -n 0 01abc\n"},
		{name: "a missing pager is an error", exe: "echo", pager: []string{"no-such-pager-here"}, wantErr: "pager no-such-pager-here"},
		{name: "no pager at all", exe: "echo", pager: nil, wantErr: "no pager"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			p := &pagerCmd{ctx: context.Background(), exe: tc.exe, id: "01abc", pager: tc.pager}
			p.SetStdin(strings.NewReader(""))
			p.SetStdout(&out)
			p.SetStderr(&errb)
			err := p.Run()
			switch {
			case tc.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one saying %q", err, tc.wantErr)
				}
			case err != nil:
				t.Fatalf("err = %v (stderr %q)", err, errb.String())
			case out.String() != tc.want:
				t.Errorf("the pager got %q, want %q", out.String(), tc.want)
			}
		})
	}
}
