// Package agenttest finds the real agent CLIs that tests drive, installed by
// scripts/install-agents.sh, and skips a test loudly when one is missing.
package agenttest

import (
	"os"
	"path/filepath"
	"testing"
)

// BinDir is the folder the installer puts the CLIs' links in:
// $AGENTCTL_AGENTS_DIR/bin, else .cache/agents/bin in the module.
func BinDir(t testing.TB) string {
	t.Helper()
	if d := os.Getenv("AGENTCTL_AGENTS_DIR"); d != "" {
		abs, err := filepath.Abs(filepath.Join(d, "bin"))
		if err != nil {
			t.Fatal(err)
		}
		return abs
	}
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, ".cache", "agents", "bin")
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's folder")
		}
		dir = parent
	}
}

// Bin returns the absolute path of the installed CLI name ("claude",
// "codex", "opencode", "pi"), or skips the test saying how to install it.
func Bin(t testing.TB, name string) string {
	t.Helper()
	bin := filepath.Join(BinDir(t), name)
	if _, err := os.Stat(bin); err != nil {
		t.Skipf("SKIP: the %s CLI is not installed (%s missing); install it with scripts/install-agents.sh %s, or set AGENTCTL_AGENTS_DIR", name, bin, name)
	}
	return bin
}
