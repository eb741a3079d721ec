package service

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// helperArgs make the test binary run TestHelperDaemon: a stand-in for
// `agentctl daemon run` (which lives in another package) with the same
// outward behaviour the installers depend on. It takes an exclusive lock on
// AGENTCTL_HOME (a second instance exits 1), serves the socket, appends
// its pid to helper.starts, and exits 0 on SIGTERM. With withChild it also
// starts a `sleep` in a session of its own, as the service starts session
// monitors, and appends that pid to helper.children.
func helperArgs(withChild bool) []string {
	args := []string{"-test.run=^TestHelperDaemon$", "--", "daemon", "run"}
	if withChild {
		args = append(args, "with-child")
	}
	return args
}

func TestHelperDaemon(t *testing.T) {
	args := flag.Args()
	if len(args) < 2 || args[0] != "daemon" || args[1] != "run" {
		t.Skip("helper process of the service tests")
	}
	withChild := len(args) == 3 && args[2] == "with-child"
	if err := runHelperDaemon(os.Getenv(HomeEnv), withChild); err != nil {
		fmt.Fprintln(os.Stderr, "helper daemon:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

func runHelperDaemon(home string, withChild bool) error {
	if home == "" {
		return errors.New(HomeEnv + " is not set")
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	lock, err := os.OpenFile(filepath.Join(home, "helper.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return err
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return fmt.Errorf("another service holds %s: %w", home, err)
	}
	// Everything a test reads is written before the socket answers.
	if withChild {
		child, err := os.StartProcess("/bin/sleep", []string{"sleep", "600"}, &os.ProcAttr{
			Sys: &syscall.SysProcAttr{Setsid: true},
		})
		if err != nil {
			return err
		}
		children, err := os.OpenFile(filepath.Join(home, "helper.children"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
		if err != nil {
			return err
		}
		fmt.Fprintln(children, child.Pid)
		children.Close()
		child.Release()
	}
	starts, err := os.OpenFile(filepath.Join(home, "helper.starts"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	fmt.Fprintln(starts, os.Getpid())
	starts.Close()
	sock := filepath.Join(home, SocketName)
	os.Remove(sock) // stale: the lock is ours
	l, err := net.Listen("unix", sock)
	if err != nil {
		return err
	}
	fmt.Println("helper daemon serving", sock) // lands in the service's log
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	<-sigs
	l.Close()
	return nil
}

// startHelperDaemon starts the helper outside any service manager, as the
// CLI auto-starts a service, and returns its pid once it serves.
func startHelperDaemon(t *testing.T, home string) int {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p, err := os.StartProcess(exe, append([]string{exe}, helperArgs(false)...), &os.ProcAttr{
		Env:   append(os.Environ(), HomeEnv+"="+home),
		Files: []*os.File{nil, nil, os.Stderr},
		Sys:   &syscall.SysProcAttr{Setsid: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { p.Wait(); close(exited) }()
	t.Cleanup(func() {
		p.Signal(syscall.SIGKILL)
		<-exited
	})
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if peer, err := socketPeer(filepath.Join(home, SocketName)); err == nil && peer.PID == p.Pid {
			return p.Pid
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("helper daemon did not serve its socket within 10s")
	return 0
}
