package service

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckSystemd(t *testing.T) {
	dir := t.TempDir()
	booted := filepath.Join(dir, "run-systemd-system")
	rt := filepath.Join(dir, "runtime")
	if err := os.MkdirAll(filepath.Join(rt, "systemd"), 0o700); err != nil {
		t.Fatal(err)
	}
	emptyRT := t.TempDir()
	user := Spec{Scope: ScopeUser, User: "alice", Exe: "/usr/bin/agentctl"}
	system := Spec{Scope: ScopeSystem, User: "alice", Exe: "/usr/bin/agentctl"}
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }

	paths := systemdPaths{Booted: booted}
	for _, spec := range []Spec{user, system} {
		err := checkSystemd(spec, paths, env(map[string]string{"XDG_RUNTIME_DIR": rt}))
		if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "does not run systemd") {
			t.Fatalf("%s scope without systemd: %v", spec.Scope, err)
		}
	}

	if err := os.Mkdir(booted, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := checkSystemd(system, paths, env(nil)); err != nil {
		t.Fatalf("system scope on a systemd machine: %v", err)
	}
	err := checkSystemd(user, paths, env(nil))
	if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "XDG_RUNTIME_DIR is not set") {
		t.Fatalf("user scope without XDG_RUNTIME_DIR: %v", err)
	}
	err = checkSystemd(user, paths, env(map[string]string{"XDG_RUNTIME_DIR": emptyRT}))
	if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "user manager is not running") {
		t.Fatalf("user scope without a user manager: %v", err)
	}

	// The user manager's private socket, as systemd --user creates it.
	l, err := net.Listen("unix", filepath.Join(rt, "systemd", "private"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := checkSystemd(user, paths, env(map[string]string{"XDG_RUNTIME_DIR": rt})); err != nil {
		t.Fatalf("user scope with a user manager: %v", err)
	}
}

// This machine's own answer, whatever it runs: either systemd is there, or
// New says clearly that it is not, and never falls back to another init
// system.
func TestNewOnThisMachine(t *testing.T) {
	spec := Spec{Scope: ScopeUser, User: "alice", Exe: "/usr/bin/agentctl", Home: t.TempDir()}
	c, err := New(spec)
	if _, statErr := os.Stat("/run/systemd/system"); statErr != nil {
		if c != nil || !errors.Is(err, ErrUnsupported) {
			t.Fatalf("New on a machine without systemd = %v, %v; want ErrUnsupported", c, err)
		}
		return
	}
	if err != nil && !errors.Is(err, ErrUnsupported) {
		t.Fatalf("New on a systemd machine: %v", err)
	}
}
