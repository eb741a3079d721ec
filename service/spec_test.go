package service

import (
	"errors"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"testing"
)

func TestResolve(t *testing.T) {
	users := map[string]*user.User{
		"alice": {Username: "alice", Uid: "1000", Gid: "1000", HomeDir: "/home/alice"},
		"bob":   {Username: "bob", Uid: "1001", Gid: "1001", HomeDir: "/srv/bob"},
	}
	envWith := func(vars map[string]string) Environment {
		return Environment{
			Getenv:     func(k string) string { return vars[k] },
			Executable: func() (string, error) { return "/usr/bin/agentctl", nil },
			LookupUser: func(name string) (*user.User, error) {
				if u, ok := users[name]; ok {
					return u, nil
				}
				return nil, user.UnknownUserError(name)
			},
			CurrentUser: func() (*user.User, error) { return users["alice"], nil },
		}
	}
	cwd, _ := os.Getwd()
	for _, tc := range []struct {
		name   string
		req    Request
		vars   map[string]string
		want   Spec
		errHas string
	}{
		{"user default home from HOME", Request{}, map[string]string{"HOME": "/home/alice", "PATH": "/usr/bin"},
			Spec{Scope: ScopeUser, User: "alice", Exe: "/usr/bin/agentctl", Home: "/home/alice/.agentctl", Path: "/usr/bin"}, ""},
		{"user AGENTCTL_HOME wins", Request{}, map[string]string{"HOME": "/home/alice", "AGENTCTL_HOME": "/data/ac"},
			Spec{Scope: ScopeUser, User: "alice", Exe: "/usr/bin/agentctl", Home: "/data/ac"}, ""},
		{"relative AGENTCTL_HOME made absolute", Request{}, map[string]string{"AGENTCTL_HOME": "rel"},
			Spec{Scope: ScopeUser, User: "alice", Exe: "/usr/bin/agentctl", Home: filepath.Join(cwd, "rel")}, ""},
		{"user --user self", Request{User: "alice"}, map[string]string{"HOME": "/home/alice"},
			Spec{Scope: ScopeUser, User: "alice", Exe: "/usr/bin/agentctl", Home: "/home/alice/.agentctl"}, ""},
		{"user --user other", Request{User: "bob"}, nil, Spec{}, "needs --system"},
		{"system home of the account", Request{System: true, User: "bob"}, map[string]string{"HOME": "/root"},
			Spec{Scope: ScopeSystem, User: "bob", Exe: "/usr/bin/agentctl", Home: "/srv/bob/.agentctl"}, ""},
		{"system account from SUDO_USER", Request{System: true}, map[string]string{"SUDO_USER": "alice"},
			Spec{Scope: ScopeSystem, User: "alice", Exe: "/usr/bin/agentctl", Home: "/home/alice/.agentctl"}, ""},
		{"system without account", Request{System: true}, nil, Spec{}, "--user NAME"},
		{"system unknown account", Request{System: true, User: "carol"}, nil, Spec{}, `look up user "carol"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Resolve(tc.req, envWith(tc.vars))
			if tc.errHas != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errHas) {
					t.Fatalf("error %v, want one containing %q", err, tc.errHas)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Scope != tc.want.Scope || got.User != tc.want.User || got.Exe != tc.want.Exe || got.Home != tc.want.Home || got.Path != tc.want.Path {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestStableExecutable(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "versions", "1.2", "agentctl")
	if err := os.MkdirAll(filepath.Dir(real), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(real, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(bin, "agentctl")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "other")
	if err := os.Mkdir(other, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(other, "agentctl"), []byte("#!/bin/sh\n# another\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, exe, argv0, path, want string
	}{
		{"found through PATH: the symlink", real, "agentctl", bin, link},
		{"started by path: that path", real, link, "", link},
		{"PATH finds another binary: the real one", real, "agentctl", other, real},
		{"not on PATH: the real one", real, "agentctl", "/nonexistent", real},
		{"exe is a symlink, argv0 unknown: resolved", link, "", "", real},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := stableExecutable(tc.exe, tc.argv0, tc.path)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("got %s, want %s", got, tc.want)
			}
		})
	}
	if _, err := stableExecutable(filepath.Join(dir, "missing"), "", ""); err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing executable: %v", err)
	}
}
