package service

import (
	"fmt"
	"strings"
)

// Unit timing. A crashed service comes back after restartSec; a service that
// keeps crashing (say, a broken AGENTCTL_HOME) stops being restarted after
// startLimitBurst starts within startLimitInterval, and shows as failed.
const (
	restartSec         = 1
	startLimitInterval = 60
	startLimitBurst    = 10
)

// RenderSystemdUnit returns the systemd unit text for spec.
func RenderSystemdUnit(spec Spec) ([]byte, error) {
	if err := spec.Validate(); err != nil {
		return nil, fmt.Errorf("render systemd unit: %w", err)
	}
	var b strings.Builder
	b.WriteString("[Unit]\n")
	b.WriteString("Description=agentctl service: supervisor of coding-agent sessions\n")
	b.WriteString("Documentation=man:agentctl(1)\n")
	fmt.Fprintf(&b, "StartLimitIntervalSec=%d\n", startLimitInterval)
	fmt.Fprintf(&b, "StartLimitBurst=%d\n", startLimitBurst)
	b.WriteString("\n[Service]\n")
	b.WriteString("Type=simple\n")
	words := []string{systemdExecWord(spec.Exe)}
	for _, a := range spec.args() {
		words = append(words, systemdExecWord(a))
	}
	fmt.Fprintf(&b, "ExecStart=%s\n", strings.Join(words, " "))
	if spec.Scope == ScopeSystem {
		// A valid user name or the template specifier: nothing to escape.
		fmt.Fprintf(&b, "User=%s\n", spec.User)
	}
	if spec.Home != "" {
		fmt.Fprintf(&b, "Environment=%s\n", systemdEnvAssignment(HomeEnv, spec.Home))
	}
	if spec.Path != "" {
		fmt.Fprintf(&b, "Environment=%s\n", systemdEnvAssignment("PATH", spec.Path))
	}
	b.WriteString("# Session monitors and agents live in this unit's cgroup but must outlive\n")
	b.WriteString("# every stop and restart of the service: signal the main process only.\n")
	b.WriteString("KillMode=process\n")
	b.WriteString("Restart=on-failure\n")
	fmt.Fprintf(&b, "RestartSec=%d\n", restartSec)
	// The agents count against the unit's task limit.
	b.WriteString("TasksMax=infinity\n")
	b.WriteString("# The service gives each session a cgroup of its own below the unit's\n")
	b.WriteString("# (limits, a stop nothing escapes), from a leaf of it (systemd 254 and later;\n")
	b.WriteString("# older ones ignore DelegateSubgroup= and the service moves itself).\n")
	b.WriteString("Delegate=yes\n")
	b.WriteString("DelegateSubgroup=service\n")
	b.WriteString("\n[Install]\n")
	if spec.Scope == ScopeSystem {
		b.WriteString("WantedBy=multi-user.target\n")
	} else {
		// A user manager has no multi-user.target; default.target is what it
		// starts at login (or at boot with lingering enabled).
		b.WriteString("WantedBy=default.target\n")
	}
	return []byte(b.String()), nil
}

// systemdExecWord quotes one word of an ExecStart= command line: systemd
// expands % specifiers and $ variables there, and splits on whitespace
// unless quoted.
func systemdExecWord(s string) string {
	s = strings.ReplaceAll(s, "%", "%%")
	s = strings.ReplaceAll(s, "$", "$$")
	if s != "" && s != ";" && !strings.ContainsAny(s, " \t\"'\\") {
		return s
	}
	return `"` + systemdQuoteEscaper.Replace(s) + `"`
}

// systemdEnvAssignment renders one Environment= assignment, always quoted:
// the value may hold spaces, and % specifiers are expanded there too ($ is
// not).
func systemdEnvAssignment(key, value string) string {
	value = strings.ReplaceAll(value, "%", "%%")
	return `"` + key + "=" + systemdQuoteEscaper.Replace(value) + `"`
}

// systemdQuoteEscaper escapes what is special inside a double-quoted
// systemd word (C-style backslash escapes).
var systemdQuoteEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\t", `\t`)
