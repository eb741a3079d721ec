package storeio

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/agentctl/agentctl/proc"
)

// storeUnderHome is a rule like an agent's: $AGENT_DIR, else HOME/.agent.
func storeUnderHome(home string, getenv func(string) string) string {
	if d := getenv("AGENT_DIR"); d != "" {
		return d
	}
	return filepath.Join(home, ".agent")
}

// startSleep starts sleep with env (and as uid, when not -1), ended with
// the test; it returns the pid once the process has exec'd.
func startSleep(t *testing.T, uid int, env ...string) int {
	t.Helper()
	cmd := exec.Command("sleep", "30")
	cmd.Env = env
	if uid >= 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}}
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if argv, _ := proc.Cmdline(cmd.Process.Pid); len(argv) > 0 && filepath.Base(argv[0]) == "sleep" {
			break
		}
	}
	return cmd.Process.Pid
}

func TestUsesStore(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("process environments are read on Linux only")
	}
	home := t.TempDir()
	store := filepath.Join(home, ".agent")
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(home, link); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(store, 0o700)
	tests := []struct {
		name string
		uid  int
		env  []string
		want bool
	}{
		{"this HOME", -1, []string{"HOME=" + home}, true},
		{"this HOME through a symlink", -1, []string{"HOME=" + link}, true},
		{"this store through the agent's variable", -1, []string{"HOME=/nonexistent", "AGENT_DIR=" + store}, true},
		{"another HOME", -1, []string{"HOME=" + t.TempDir()}, false},
		{"this HOME, another agent folder", -1, []string{"HOME=" + home, "AGENT_DIR=" + t.TempDir()}, false},
		{"no HOME", -1, []string{"PATH=/bin:/usr/bin"}, false},
		{"another user under this HOME", 65534, []string{"HOME=" + home}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.uid >= 0 && os.Geteuid() != 0 {
				t.Skip("needs root to run a process as another user")
			}
			pid := startSleep(t, tt.uid, tt.env...)
			if got := UsesStore(proc.NewSnapshot(), pid, store, storeUnderHome); got != tt.want {
				t.Errorf("UsesStore = %v, want %v", got, tt.want)
			}
		})
	}
	if UsesStore(proc.NewSnapshot(), 1<<22+7, store, storeUnderHome) {
		t.Error("a process that does not exist uses the store")
	}
}
