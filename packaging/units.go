// Package packaging holds what distribution packages ship besides the
// binary: the systemd units and the launchd plist (rendered by the same code
// as `agentctl service install`, and kept in sync by a test), and the nfpm
// configuration that builds the .deb and .rpm.
package packaging

import (
	"fmt"

	"github.com/agentctl/agentctl/service"
)

// Where packages install the binary.
const (
	LinuxBinary = "/usr/bin/agentctl"
	MacBinary   = "/usr/local/bin/agentctl"
)

// Units returns the packaged unit files by their path under packaging/.
// They leave AGENTCTL_HOME and PATH to the service's defaults: the daemon
// uses ~/.agentctl of the account it runs as, and the service manager's PATH.
//
//   - systemd/agentctl.service: the user unit (systemctl --user enable --now agentctl);
//   - systemd/agentctl@.service: the system template, one instance per user
//     (systemctl enable --now agentctl@alice);
//   - launchd/com.agentctl.daemon.plist: the LaunchAgent. Without a known
//     home it has no log paths; `agentctl service install` writes one that has.
func Units() (map[string][]byte, error) {
	files := map[string][]byte{}
	for path, render := range map[string]func() ([]byte, error){
		"systemd/agentctl.service": func() ([]byte, error) {
			return service.RenderSystemdUnit(service.Spec{Scope: service.ScopeUser, Exe: LinuxBinary})
		},
		"systemd/agentctl@.service": func() ([]byte, error) {
			return service.RenderSystemdUnit(service.Spec{Scope: service.ScopeSystem, User: service.TemplateUser, Exe: LinuxBinary})
		},
		"launchd/com.agentctl.daemon.plist": func() ([]byte, error) {
			return service.RenderLaunchdPlist(service.Spec{Scope: service.ScopeUser, Exe: MacBinary})
		},
	} {
		b, err := render()
		if err != nil {
			return nil, fmt.Errorf("render %s: %w", path, err)
		}
		files[path] = b
	}
	return files, nil
}
