package spawn

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
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

func TestMergeEnv(t *testing.T) {
	got := MergeEnv([]string{"A=1", "B=2", "A=3"}, "B=x", "C=y=z")
	want := []string{"A=3", "B=x", "C=y=z"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("MergeEnv = %q, want %q", got, want)
	}
	if v := EnvValue(got, "C"); v != "y=z" {
		t.Errorf("EnvValue(C) = %q", v)
	}
	if k := EnvKeys(got); !reflect.DeepEqual(k, []string{"A", "B", "C"}) {
		t.Errorf("EnvKeys = %q", k)
	}
}

func TestFrames(t *testing.T) {
	r, w, _ := os.Pipe()
	go func() {
		WriteFrame(w, FrameInput, []byte("hi"))
		WriteFrame(w, FrameResize, ResizePayload(50, 200))
		w.Close()
	}()
	typ, p, err := ReadFrame(r)
	if err != nil || typ != FrameInput || string(p) != "hi" {
		t.Fatalf("frame 1 = %c %q %v", typ, p, err)
	}
	typ, p, err = ReadFrame(r)
	if err != nil || typ != FrameResize || !reflect.DeepEqual(p, []byte{0, 50, 0, 200}) {
		t.Fatalf("frame 2 = %c %v %v", typ, p, err)
	}
	if _, _, err := ReadFrame(r); err == nil {
		t.Fatal("read past the end succeeded")
	}
}

func TestWithoutSecrets(t *testing.T) {
	got := WithoutSecrets([]string{"PATH=/bin", "ANTHROPIC_API_KEY=x", "OPENCLAW_GATEWAY_TOKEN=y", "GH_TOKEN=z", "DB_PASSWORD=p", "HOME=/h", "OPENCLAW_AGENT_ID=a"})
	want := []string{"PATH=/bin", "HOME=/h", "OPENCLAW_AGENT_ID=a"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("WithoutSecrets = %q, want %q", got, want)
	}
}
