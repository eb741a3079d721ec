package service

import (
	"os"
	"path/filepath"
	"testing"
)

func TestNewPicksLaunchd(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	spec := Spec{Scope: ScopeUser, User: "alice", Exe: "/usr/local/bin/agentctl", Home: filepath.Join(home, ".agentctl")}
	c, err := New(spec)
	if err != nil {
		t.Fatal(err)
	}
	l, ok := c.(*launchdController)
	if !ok {
		t.Fatalf("New returned %T, want the launchd controller", c)
	}
	if want := filepath.Join(home, "Library", "LaunchAgents", "com.agentctl.daemon.plist"); l.plistPath != want {
		t.Errorf("plist path %s, want %s", l.plistPath, want)
	}
	if l.uid != os.Getuid() {
		t.Errorf("uid %d, want %d", l.uid, os.Getuid())
	}
}
