package service

import (
	"context"
	"fmt"
	"os"
	"os/user"
	"strings"
)

// StartInstalled starts the service through its service manager when a unit
// installed by `agentctl service install` serves home (AGENTCTL_HOME), and
// waits until it answers. It reports false when no such unit is installed:
// the caller then starts a service of its own.
//
// The CLI's auto-start must go through here: a service it spawned itself
// while the unit's service restarts (RestartSec after a crash, or during
// `systemctl restart`) would hold the home's lock, and the unit's service
// would fail on every restart until systemd gives up on it.
func StartInstalled(ctx context.Context, home string) (bool, error) {
	if home == "" {
		return false, nil
	}
	me, err := user.Current()
	if err != nil {
		return false, fmt.Errorf("look up the current user: %w", err)
	}
	exe, err := os.Executable()
	if err != nil {
		return false, fmt.Errorf("find the agentctl binary: %w", err)
	}
	for _, scope := range []Scope{ScopeUser, ScopeSystem} {
		spec := Spec{Scope: scope, User: me.Username, Exe: exe, Home: home}
		if spec.Validate() != nil {
			continue
		}
		c, err := New(spec)
		if err != nil {
			continue // no service manager for this scope
		}
		h, ok := c.(homeServer)
		if !ok || !h.servesHome() {
			continue
		}
		if scope == ScopeSystem && os.Geteuid() != 0 {
			// Only root may start it; its manager restarts it by itself.
			_, err := waitReady(ctx, spec, c.Status)
			if err != nil {
				return true, fmt.Errorf("the system service %s serves %s but does not answer (start it as root with `agentctl service start --system --user %s`): %w", h.unitName(), home, me.Username, err)
			}
			return true, nil
		}
		if _, err := c.Start(ctx); err != nil {
			return true, fmt.Errorf("start the installed service %s: %w", h.unitName(), err)
		}
		return true, nil
	}
	return false, nil
}

// homeServer is a controller that can tell whether its installed unit runs
// the service for its spec's AGENTCTL_HOME.
type homeServer interface {
	servesHome() bool
	unitName() string
}

func (c *systemdController) unitName() string { return c.unit() }

func (c *systemdController) servesHome() bool {
	text, err := os.ReadFile(c.unitPath)
	if err != nil {
		return false
	}
	want := "Environment=" + systemdEnvAssignment(HomeEnv, c.spec.Home)
	for line := range strings.Lines(string(text)) {
		if strings.TrimRight(line, "\n") == want {
			return true
		}
	}
	return false
}

func (c *launchdController) unitName() string { return c.spec.LaunchdLabel() }

func (c *launchdController) servesHome() bool {
	text, err := os.ReadFile(c.plistPath)
	if err != nil {
		return false
	}
	// The two lines RenderLaunchdPlist writes for it.
	want := &plistWriter{depth: 2}
	want.key(HomeEnv)
	want.str(c.spec.Home)
	return strings.Contains(string(text), want.buf.String())
}
