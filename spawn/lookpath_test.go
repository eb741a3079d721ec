package spawn

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestLookPathUsesTheSessionsPATH(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "tool")
	os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755)
	noexec := filepath.Join(dir, "data")
	os.WriteFile(noexec, []byte("x"), 0o644)
	tests := []struct {
		name    string
		cmd     string
		env     []string
		want    string
		wantErr error
	}{
		{"found on the session's PATH", "tool", []string{"PATH=/nonexistent:" + dir}, bin, nil},
		{"not on PATH", "tool", []string{"PATH=/nonexistent"}, "", ErrNotFound},
		{"relative to cwd", "./tool", nil, bin, nil},
		{"absolute", bin, nil, bin, nil},
		{"not executable", noexec, nil, "", os.ErrPermission},
		{"missing", filepath.Join(dir, "nope"), nil, "", os.ErrNotExist},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := LookPath(tc.cmd, tc.env, dir)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("LookPath(%q) error = %v, want %v", tc.cmd, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("LookPath(%q) = %q, %v; want %q", tc.cmd, got, err, tc.want)
			}
		})
	}
}
