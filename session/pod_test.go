package session

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/agentctl/agentctl/adapters"
	"github.com/agentctl/agentctl/adapters/claude"
	"github.com/agentctl/agentctl/adapters/pi"
	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/home"
	"github.com/agentctl/agentctl/spawn"
)

// In a pod, an agent's command line is built from the spec by the agent's
// adapter, as the service builds a local one; a resume continues the
// native id the spec carries; a plain command is left as it is.
func TestPodLaunch(t *testing.T) {
	h := home.Home(t.TempDir())
	if err := h.Ensure(); err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	for _, name := range []string{"pi", "claude"} {
		if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	env := adapters.Env{Home: t.TempDir()}
	c := New(context.Background(), Options{Home: h, Exe: os.Args[0], Adapters: adapters.NewSet(claude.New(env), pi.New(env))})
	cwd := t.TempDir()
	for _, tc := range []struct {
		name     string
		rec      spawn.Record
		wantArgv bool // built here
		nativeID string
	}{
		{"pi headless", spawn.Record{ID: "01a", Adapter: "pi", Prompt: "say hi", Model: "fake/m", Cwd: cwd}, true, ""},
		{"claude resumed", spawn.Record{ID: "01b", Adapter: "claude", Prompt: "again", Cwd: cwd, ResumeOf: "01a", NativeID: "0f8e2b1c-5a4d-4e6f-9b8a-0c1d2e3f4a5b"}, true, "0f8e2b1c-5a4d-4e6f-9b8a-0c1d2e3f4a5b"},
		{"claude", spawn.Record{ID: "01c", Adapter: "claude", Prompt: "say hi", Cwd: cwd}, true, ""},
		{"plain command", spawn.Record{ID: "01d", Adapter: api.ExecAdapter, Argv: []string{"true"}, Cwd: cwd}, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := spawn.Spec{Record: tc.rec, Env: []string{"PATH=" + bin, "HOME=" + t.TempDir()}}
			dir := h.SessionDir(tc.rec.ID)
			if _, err := c.PodLaunch(&spec, dir); err != nil {
				t.Fatal(err)
			}
			argv := spec.Record.Argv
			if !tc.wantArgv {
				if !slices.Equal(argv, tc.rec.Argv) {
					t.Fatalf("a plain command's argv became %q", argv)
				}
				return
			}
			if len(argv) == 0 || filepath.Dir(spec.Path) != bin && !slices.Contains(argv, filepath.Join(bin, tc.rec.Adapter)) {
				t.Fatalf("argv %q path %q: want the adapter's command line with %s from PATH", argv, spec.Path, tc.rec.Adapter)
			}
			if tc.nativeID != "" && spec.Record.NativeID != tc.nativeID {
				t.Errorf("native id %q, want the resumed %q", spec.Record.NativeID, tc.nativeID)
			}
			if tc.nativeID != "" && !slices.Contains(argv, tc.nativeID) {
				t.Errorf("resume argv %q does not name native session %s", argv, tc.nativeID)
			}
		})
	}
	spec := spawn.Spec{Record: spawn.Record{ID: "01e", Adapter: "pi", Cwd: cwd, ResumeOf: "01a"}, Env: []string{"PATH=" + bin}}
	if _, err := c.PodLaunch(&spec, h.SessionDir("01e")); err == nil {
		t.Error("a resume with no native id to continue was not refused")
	}
}
