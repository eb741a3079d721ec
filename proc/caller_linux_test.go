//go:build linux

package proc

import (
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestHelperConnect is not a test: run by connector, it connects the
// socket it inherits as fd 3 to $CALLER_TEST_SOCKET, then exits at once or
// once its standard input closes.
func TestHelperConnect(t *testing.T) {
	path := os.Getenv("CALLER_TEST_SOCKET")
	if path == "" {
		t.Skip("run by connector")
	}
	if err := unix.Connect(3, &unix.SockaddrUnix{Name: path}); err != nil {
		os.Exit(2)
	}
	if os.Getenv("CALLER_TEST_STAY") != "" {
		b := make([]byte, 1)
		os.Stdin.Read(b)
	}
	os.Exit(0)
}

// connector starts a process that connects a socket made here to ln's
// path (the socket outlives it: this process holds it too, as a parent
// holds what its forked child connected).
func connector(t *testing.T, ln net.Listener, stay bool) (*exec.Cmd, *os.File, net.Conn) {
	t.Helper()
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	sock := os.NewFile(uintptr(fd), "socket")
	t.Cleanup(func() { sock.Close() })
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperConnect$")
	cmd.Env = append(os.Environ(), "CALLER_TEST_SOCKET="+ln.Addr().String())
	if stay {
		cmd.Env = append(cmd.Env, "CALLER_TEST_STAY=1")
	}
	cmd.ExtraFiles = []*os.File{sock}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	conn, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return cmd, stdin.(*os.File), conn
}

// A connection whose connecting process exited is not that process's any
// more: not when it exited before the accept, nor after. And Close lets
// the pidfd go.
func TestPinPeerOfAConnectorThatExits(t *testing.T) {
	ln, err := net.Listen("unix", filepath.Join(t.TempDir(), "s"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()

	// Exits before the connection is accepted.
	cmd, _, conn := connector(t, ln, false)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("connector: %v", err)
	}
	c, err := PinPeer(conn)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.PID != cmd.Process.Pid || c.UID != os.Getuid() {
		t.Fatalf("peer pid %d uid %d, want %d %d", c.PID, c.UID, cmd.Process.Pid, os.Getuid())
	}
	if err := c.Check(); !errors.Is(err, ErrUnproven) || !strings.Contains(err.Error(), "has exited") {
		t.Fatalf("check of a peer that exited before the accept: %v", err)
	}

	// Runs at the accept, exits after.
	cmd, stdin, conn := connector(t, ln, true)
	c2, err := PinPeer(conn)
	if err != nil {
		t.Fatal(err)
	}
	if c2.PID != cmd.Process.Pid {
		t.Fatalf("peer pid %d, want %d", c2.PID, cmd.Process.Pid)
	}
	if err := c2.Check(); err != nil {
		t.Fatalf("check of a running peer: %v", err)
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("connector: %v", err)
	}
	if err := c2.Check(); !errors.Is(err, ErrUnproven) {
		t.Fatalf("check of a peer that exited after the accept: %v", err)
	}

	// Close closes the pidfd, once.
	fd := c2.pin.fd
	if fd < 0 {
		t.Fatal("no pidfd was taken")
	}
	if err := c2.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err != unix.EBADF {
		t.Errorf("pidfd %d still open after Close (%v)", fd, err)
	}
	if err := c2.Close(); err != nil {
		t.Errorf("a second Close: %v", err)
	}
	if err := c2.Check(); !errors.Is(err, ErrUnproven) {
		t.Errorf("check after Close: %v", err)
	}
}
