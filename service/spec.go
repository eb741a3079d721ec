// Package service installs agentctl as a service of the machine's service
// manager: a systemd unit on Linux (per user by default, or a system unit
// that runs as a given user) and a launchd job on macOS. The unit runs
// `agentctl daemon run` with the AGENTCTL_HOME the CLI uses, so once it is
// installed the CLI talks to it instead of auto-starting a service of its own.
//
// agentctl renders the unit text itself rather than through
// kardianos/service: that library's systemd template hard-codes
// RestartSec=120 and WantedBy=multi-user.target (wrong for user units), has no
// KillMode, writes Environment= values unquoted, refuses to rewrite an
// existing unit, and its template engine cannot be called to render a unit
// for golden tests or for the packaged files. On a Linux machine without
// systemd it also falls back to writing SysV init scripts, which agentctl
// must never do.
package service

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
)

// Scope says which service manager instance owns the unit.
type Scope string

const (
	// ScopeUser is the user's own service manager (systemd --user, a launchd
	// LaunchAgent): the service runs with the user's home and credentials.
	ScopeUser Scope = "user"
	// ScopeSystem is the system manager (a systemd system unit, a launchd
	// LaunchDaemon) running the service as Spec.User.
	ScopeSystem Scope = "system"
)

// TemplateUser as Spec.User renders a systemd template unit
// (agentctl@.service) whose instance name is the account it runs as.
// Distribution packages ship that template.
const TemplateUser = "%i"

// HomeEnv names the environment variable that points agentctl at its state
// directory.
const HomeEnv = "AGENTCTL_HOME"

// SocketName is the service's socket inside AGENTCTL_HOME.
const SocketName = "agentctl.sock"

// Spec is what to install: everything the unit text depends on.
type Spec struct {
	Scope Scope
	// User is the account the service runs as. Required for ScopeSystem
	// (or TemplateUser); for ScopeUser it is informational.
	User string
	// Exe is the absolute path of the agentctl binary.
	Exe string
	// Args are the arguments after Exe; nil means "daemon run".
	Args []string
	// Home is AGENTCTL_HOME for the service, absolute. Empty leaves it to the
	// daemon's default (~/.agentctl of the account it runs as), which is what
	// packaged units do.
	Home string
	// Path is PATH for the service, so it finds the same agent binaries as
	// the shell that installed it. Empty keeps the service manager's default.
	Path string
}

// args returns the unit's argument list.
func (s Spec) args() []string {
	if s.Args == nil {
		return []string{"daemon", "run"}
	}
	return s.Args
}

// userNamePattern is the portable user name syntax; it keeps the name safe
// in a unit file, a plist, a launchd label and a systemd instance name.
// Compiled on first use: package init runs at every CLI start.
var userNamePattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.-]{0,31}$`) })

// Validate reports what is wrong with the spec, if anything.
func (s Spec) Validate() error {
	switch s.Scope {
	case ScopeUser:
		if s.User == TemplateUser {
			return errors.New("a user unit cannot be a template: the user manager already runs as its user")
		}
	case ScopeSystem:
		if s.User == "" {
			return errors.New("a system service needs the account it runs as (--user NAME)")
		}
	default:
		return fmt.Errorf("unknown scope %q (want %q or %q)", s.Scope, ScopeUser, ScopeSystem)
	}
	if s.User != "" && s.User != TemplateUser && !userNamePattern().MatchString(s.User) {
		return fmt.Errorf("invalid user name %q", s.User)
	}
	if !filepath.IsAbs(s.Exe) {
		return fmt.Errorf("agentctl executable path %q is not absolute", s.Exe)
	}
	if s.Home != "" && !filepath.IsAbs(s.Home) {
		return fmt.Errorf("%s %q is not absolute", HomeEnv, s.Home)
	}
	for _, v := range append([]string{s.Exe, s.Home, s.Path}, s.args()...) {
		if strings.ContainsAny(v, "\x00\n\r") {
			return fmt.Errorf("value %q contains a NUL or line break, which a unit file cannot hold", v)
		}
	}
	return nil
}

// SystemdUnitName is the unit's name: agentctl.service for a user unit,
// agentctl@USER.service for a system unit (agentctl@.service for the
// template), so several users can each have one on the same machine.
func (s Spec) SystemdUnitName() string {
	if s.Scope == ScopeSystem {
		if s.User == TemplateUser {
			return "agentctl@.service"
		}
		return "agentctl@" + s.User + ".service"
	}
	return "agentctl.service"
}

// LaunchdLabel is the launchd job's label.
func (s Spec) LaunchdLabel() string {
	if s.Scope == ScopeSystem {
		return "com.agentctl.daemon." + s.User
	}
	return "com.agentctl.daemon"
}

// SocketPath is where the service listens, or "" when Home is left to the
// daemon's default.
func (s Spec) SocketPath() string {
	if s.Home == "" {
		return ""
	}
	return filepath.Join(s.Home, SocketName)
}

// Request is what the CLI asks for: the scope, and for a system service the
// account it runs as.
type Request struct {
	System bool
	User   string
}

// Environment is the part of the process environment a spec is resolved
// from; tests pass their own.
type Environment struct {
	Getenv func(string) string
	// Executable returns the running agentctl's absolute path.
	Executable func() (string, error)
	// LookupUser finds an account by name.
	LookupUser func(name string) (*user.User, error)
	// CurrentUser is the account running the CLI.
	CurrentUser func() (*user.User, error)
}

// OSEnvironment is the real process environment.
func OSEnvironment() Environment {
	return Environment{
		Getenv:      os.Getenv,
		Executable:  StableExecutable,
		LookupUser:  user.Lookup,
		CurrentUser: user.Current,
	}
}

// Resolve turns a request into a spec: which account, which binary, which
// AGENTCTL_HOME (the CLI's own: $AGENTCTL_HOME, else ~/.agentctl of the
// account the service runs as) and which PATH.
func Resolve(req Request, env Environment) (Spec, error) {
	exe, err := env.Executable()
	if err != nil {
		return Spec{}, fmt.Errorf("find the agentctl executable: %w", err)
	}
	spec := Spec{Scope: ScopeUser, Exe: exe, Path: env.Getenv("PATH")}
	var account *user.User
	if req.System {
		spec.Scope = ScopeSystem
		name := req.User
		if name == "" {
			// sudo agentctl service install --system: the service is for
			// the user who ran sudo, not for root.
			name = env.Getenv("SUDO_USER")
		}
		if name == "" {
			return Spec{}, errors.New("a system service runs as one account: name it with --user NAME")
		}
		account, err = env.LookupUser(name)
		if err != nil {
			return Spec{}, fmt.Errorf("look up user %q: %w", name, err)
		}
		spec.User = account.Username
	} else {
		account, err = env.CurrentUser()
		if err != nil {
			return Spec{}, fmt.Errorf("look up the current user: %w", err)
		}
		if req.User != "" && req.User != account.Username {
			return Spec{}, fmt.Errorf("--user %s needs --system: a user service always runs as the user who installs it (%s)", req.User, account.Username)
		}
		spec.User = account.Username
	}
	home := env.Getenv(HomeEnv)
	if home == "" {
		base := account.HomeDir
		if !req.System {
			// The CLI's own default follows $HOME, as os.UserHomeDir does.
			if h := env.Getenv("HOME"); h != "" {
				base = h
			}
		}
		if base == "" {
			return Spec{}, fmt.Errorf("user %s has no home directory: set %s", account.Username, HomeEnv)
		}
		home = filepath.Join(base, ".agentctl")
	}
	if spec.Home, err = filepath.Abs(home); err != nil {
		return Spec{}, fmt.Errorf("resolve %s %q: %w", HomeEnv, home, err)
	}
	return spec, spec.Validate()
}

// StableExecutable returns the running binary's path as the user reaches it:
// when the name it was started by resolves through PATH to the same file,
// that path (say /usr/local/bin/agentctl, a symlink a package manager
// repoints on upgrade) rather than the symlink's current target, so a unit
// keeps working after an upgrade.
func StableExecutable() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("locate the running executable: %w", err)
	}
	argv0 := ""
	if len(os.Args) > 0 {
		argv0 = os.Args[0]
	}
	return stableExecutable(exe, argv0, os.Getenv("PATH"))
}

func stableExecutable(exe, argv0, pathEnv string) (string, error) {
	real, err := filepath.EvalSymlinks(exe)
	if err != nil {
		return "", fmt.Errorf("resolve %s: %w", exe, err)
	}
	if cand, ok := lookPathAbs(argv0, pathEnv); ok && sameFile(cand, real) {
		return cand, nil
	}
	return real, nil
}

// lookPathAbs finds name as a shell would, as an absolute path.
func lookPathAbs(name, pathEnv string) (string, bool) {
	if name == "" {
		return "", false
	}
	if strings.Contains(name, "/") {
		abs, err := filepath.Abs(name)
		return abs, err == nil
	}
	for _, dir := range filepath.SplitList(pathEnv) {
		if dir == "" || !filepath.IsAbs(dir) {
			continue
		}
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, true
		}
	}
	return "", false
}

func sameFile(a, b string) bool {
	fa, err := os.Stat(a)
	if err != nil {
		return false
	}
	fb, err := os.Stat(b)
	if err != nil {
		return false
	}
	return os.SameFile(fa, fb)
}
