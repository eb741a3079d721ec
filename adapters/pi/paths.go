package pi

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
)

// Environment variables Pi reads for its own directories.
const (
	envAgentDir   = "PI_CODING_AGENT_DIR"
	envSessionDir = "PI_CODING_AGENT_SESSION_DIR"
)

// layout is where one Pi installation keeps its files, resolved the way Pi
// resolves them (config.js getAgentDir, main.js session dir precedence).
type layout struct {
	home string
	// agentDir holds models.json, settings.json and, by default, sessions/.
	agentDir string
	// flatDir is the session directory set by PI_CODING_AGENT_SESSION_DIR or
	// the sessionDir setting; Pi then writes session files directly into it,
	// with no per-cwd subfolder. Empty when unset.
	flatDir string
}

// AgentDir is Pi's agent folder for a user whose home is home and whose
// environment getenv reads: $PI_CODING_AGENT_DIR (a leading ~ is the
// home, as Pi reads it), else ~/.pi/agent. It holds Pi's settings, its
// extensions/ and, by default, its sessions/.
func AgentDir(home string, getenv func(string) string) string { return agentDirOf(home, getenv) }

// agentDirOf is Pi's rule for its agent folder, for any environment: its
// own, or a process's (storeio.StoreOf).
func agentDirOf(home string, getenv func(string) string) string {
	if d := getenv(envAgentDir); d != "" {
		return expandTilde(d, home)
	}
	return filepath.Join(home, ".pi", "agent")
}

func resolveLayout(home string, getenv func(string) string) layout {
	l := layout{home: home, agentDir: agentDirOf(home, getenv)}
	if d := getenv(envSessionDir); d != "" {
		l.flatDir = expandTilde(d, home)
	} else if d := settingsSessionDir(l.agentDir); d != "" {
		l.flatDir = expandTilde(d, home)
	}
	if l.flatDir != "" && !filepath.IsAbs(l.flatDir) {
		// Pi would resolve a relative setting against its own cwd, which
		// differs per process; agentctl cannot know it.
		l.flatDir = ""
	}
	return l
}

// sessionsRoot is Pi's default store: one "--<cwd slug>--" folder per cwd.
func (l layout) sessionsRoot() string { return filepath.Join(l.agentDir, "sessions") }

// roots are the folders discovery scans; each may hold session files
// directly and in one level of subfolders.
func (l layout) roots() []string {
	roots := []string{l.sessionsRoot()}
	if l.flatDir != "" && filepath.Clean(l.flatDir) != filepath.Clean(l.sessionsRoot()) {
		roots = append(roots, l.flatDir)
	}
	return roots
}

// dirFor is the folder Pi itself would put a new session for cwd in.
func (l layout) dirFor(cwd string) string {
	if l.flatDir != "" {
		return l.flatDir
	}
	return filepath.Join(l.sessionsRoot(), CwdSlug(cwd))
}

// CwdSlug is Pi's folder name for a working directory (session-manager.js
// getDefaultSessionDir): the leading separator dropped, '/', '\' and ':'
// replaced by '-', wrapped in "--". Dots, spaces and '_' are kept.
func CwdSlug(cwd string) string {
	s := strings.TrimPrefix(cwd, "/")
	s = strings.TrimPrefix(s, `\`)
	s = strings.NewReplacer("/", "-", `\`, "-", ":", "-").Replace(s)
	return "--" + s + "--"
}

func expandTilde(p, home string) string {
	if p == "~" {
		return home
	}
	if strings.HasPrefix(p, "~/") {
		return filepath.Join(home, p[2:])
	}
	return p
}

// settingsSessionDir reads "sessionDir" from Pi's global settings.json; a
// missing or unreadable file means the setting is not set.
func settingsSessionDir(agentDir string) string {
	b, err := os.ReadFile(filepath.Join(agentDir, "settings.json"))
	if err != nil || len(b) > 1<<20 {
		return ""
	}
	var s struct {
		SessionDir any `json:"sessionDir"`
	}
	if json.Unmarshal(b, &s) != nil {
		return ""
	}
	d, _ := s.SessionDir.(string)
	return strings.TrimSpace(d)
}
