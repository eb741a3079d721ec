package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/home"
	"github.com/agentctl/agentctl/internal/text"
)

// SSH reaches another host's service through the system's ssh: each
// connection is `ssh … HOST agentctl dial-stdio`, whose standard input and
// output carry the API to that host's socket. The user's ssh configuration,
// agent, ProxyJump and known_hosts all apply; connections share one ssh
// master (ControlMaster) so only the first pays the handshake.
type SSH struct {
	// Name is how messages name the host ("build", or its URL).
	Name string
	// User, Host and Port are the destination; User and Port may be "".
	User, Host, Port string
	// Agentctl is the remote agentctl to run ("" is "agentctl", found on
	// the remote user's PATH).
	Agentctl string
	// Command is ssh and any options of the user's (AGENTCTL_SSH_COMMAND);
	// empty is "ssh".
	Command []string
	// ControlDir holds the shared masters' sockets; "" shares none.
	ControlDir string
	// Version is this agentctl's version, named when versions disagree.
	Version string

	// first holds dials back until one has brought the shared master up:
	// connections started together before it would each make a whole
	// ssh connection of their own (and trip sshd's MaxStartups).
	first  sync.Mutex
	shared bool
}

var _ Dialer = (*SSH)(nil)

// ControlPersist is how long an idle ssh master stays up after its last
// connection.
const ControlPersist = 10 * time.Minute

// greetingTimeout bounds how long the far end may take to reach its
// service (which it may start first) and say so.
const greetingTimeout = 30 * time.Second

func (s *SSH) String() string { return "host " + s.Name }

// Argv is the ssh command line of one connection.
func (s *SSH) Argv(autostart bool) []string {
	argv := append([]string(nil), s.Command...)
	if len(argv) == 0 {
		argv = []string{"ssh"}
	}
	if s.ControlDir != "" {
		argv = append(argv,
			"-o", "ControlMaster=auto",
			"-o", "ControlPath="+filepath.Join(s.ControlDir, "%C"),
			"-o", "ControlPersist="+strconv.Itoa(int(ControlPersist/time.Second)))
	}
	// No terminal on the far side: the stream is the API's, byte for
	// byte, and no escape character may eat an attached session's input.
	argv = append(argv, "-T", "-e", "none")
	if s.User != "" {
		argv = append(argv, "-l", s.User)
	}
	if s.Port != "" {
		argv = append(argv, "-p", s.Port)
	}
	remote := "agentctl"
	if s.Agentctl != "" {
		remote = text.ShellQuote(s.Agentctl)
	}
	remote += " dial-stdio"
	if !autostart {
		remote += " --no-autostart"
	}
	return append(argv, "--", s.Host, remote)
}

// Dial starts ssh and waits for the far end's greeting, which says it
// reached its service and which protocol it speaks.
func (s *SSH) Dial(ctx context.Context, autostart bool) (conn net.Conn, err error) {
	if s.ControlDir != "" {
		s.first.Lock()
		if s.shared {
			s.first.Unlock()
		} else {
			defer func() {
				s.shared = err == nil
				s.first.Unlock()
			}()
		}
	}
	argv := s.Argv(autostart)
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("reach %s: %w", s, err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, fmt.Errorf("reach %s: %w", s, err)
	}
	// ssh's messages go to a file, not a pipe: a master that ssh leaves
	// running in the background may hold its standard error for as long
	// as it lives, and a pipe would not end before it.
	errf, err := os.CreateTemp("", "agentctl-ssh-*.err")
	if err != nil {
		inR.Close()
		inW.Close()
		outR.Close()
		outW.Close()
		return nil, fmt.Errorf("reach %s: %w", s, err)
	}
	os.Remove(errf.Name())
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errf
	err = cmd.Start()
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		errf.Close()
		return nil, fmt.Errorf("reach %s: start %s: %w", s, argv[0], err)
	}
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(exited) }()
	sc := &sshConn{w: inW, r: outR, proc: cmd.Process, exited: exited, name: s.Name}

	line, err := readGreeting(ctx, outR, greetingTimeout)
	if err != nil {
		sc.Close()
		<-exited
		msg := readTail(errf)
		errf.Close()
		if ctx.Err() != nil {
			return nil, fmt.Errorf("reach %s: %w", s, ctx.Err())
		}
		return nil, s.dialFailure(exitCode(waitErr), msg, err)
	}
	errf.Close()
	proto, version, ok := api.ParseDialGreeting(line)
	if !ok {
		sc.Close()
		return nil, fmt.Errorf("reach %s: `agentctl dial-stdio` there answered %q, not its greeting (does a login script print to standard output?)", s, line)
	}
	if err := s.checkProtocol(proto, version); err != nil {
		sc.Close()
		return nil, err
	}
	return sc, nil
}

// ErrVersionSkew marks a far end whose protocol this agentctl does not
// speak.
var ErrVersionSkew = errors.New("agentctl versions do not match")

// checkProtocol refuses a far end of another protocol, naming both
// versions and which side to upgrade.
func (s *SSH) checkProtocol(proto int, version string) error {
	if proto == api.Protocol {
		return nil
	}
	upgrade := "agentctl on " + s.Name
	if proto > api.Protocol {
		upgrade = "this agentctl"
	}
	return fmt.Errorf("%w: %s runs agentctl %s (protocol %d), this one is %s (protocol %d): upgrade %s",
		ErrVersionSkew, s, version, proto, s.Version, api.Protocol, upgrade)
}

// Failures to reach a host, as dialFailure names them.
var (
	ErrUnreachable  = errors.New("cannot reach the host over ssh")
	ErrNoAgentctl   = errors.New("agentctl is not installed there")
	ErrTooOld       = errors.New("agentctl there is too old")
	ErrRemoteFailed = errors.New("agentctl dial-stdio failed")
)

// dialFailure says why ssh ended before the greeting, from its exit code
// and what it (or the far end) wrote on standard error.
func (s *SSH) dialFailure(code int, stderr string, readErr error) error {
	msg := strings.TrimSpace(stderr)
	bin := s.Agentctl
	if bin == "" {
		bin = "agentctl"
	}
	switch {
	case code == 255:
		if msg == "" {
			msg = "ssh exited with status 255"
		}
		return fmt.Errorf("%w: %s: %s", ErrUnreachable, s, msg)
	case code == 127 || (code == 126 && strings.Contains(msg, "not found")):
		return fmt.Errorf("%w: %s has no %s (the remote shell answered: %s): install agentctl on that host, on the PATH of a non-interactive ssh login, or name its path in the host's URL (ssh://%s?agentctl=/path/to/agentctl)",
			ErrNoAgentctl, s, bin, orNothing(msg), s.Host)
	case strings.Contains(msg, `unknown command "dial-stdio"`):
		return fmt.Errorf("%w: %s runs an agentctl with no `dial-stdio` (too old to be reached over ssh): upgrade agentctl on %s to %s or later (protocol %d)",
			ErrTooOld, s, s.Name, s.Version, api.Protocol)
	case code >= 0:
		if msg == "" {
			msg = fmt.Sprintf("it ended with status %d", code)
		}
		return fmt.Errorf("%w on %s: %s", ErrRemoteFailed, s, msg)
	}
	return fmt.Errorf("reach %s: %w (%s)", s, readErr, orNothing(msg))
}

func orNothing(s string) string {
	if s == "" {
		return "nothing"
	}
	return s
}

// exitCode is a process's exit status, or -1 when it did not exit (a
// signal, or no process).
func exitCode(err error) int {
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	return -1
}

// readGreeting reads the far end's first line, byte by byte (nothing of
// the API after it may be taken), within timeout.
func readGreeting(ctx context.Context, r *os.File, timeout time.Duration) (string, error) {
	deadline := time.Now().Add(timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	r.SetReadDeadline(deadline)
	defer r.SetReadDeadline(time.Time{})
	stop := context.AfterFunc(ctx, func() { r.SetReadDeadline(time.Now()) })
	defer stop()
	var line []byte
	b := make([]byte, 1)
	for len(line) < 512 {
		if _, err := r.Read(b); err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) && ctx.Err() == nil {
				return "", fmt.Errorf("no greeting within %s", timeout)
			}
			return "", err
		}
		if b[0] == '\n' {
			return strings.TrimRight(string(line), "\r"), nil
		}
		line = append(line, b[0])
	}
	return "", fmt.Errorf("no greeting: %q…", line)
}

// readTail is the end of what ssh wrote on standard error.
func readTail(f *os.File) string {
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return ""
	}
	b, _ := io.ReadAll(io.LimitReader(f, 64<<10))
	s := strings.TrimSpace(string(b))
	if len(s) > 2000 {
		s = "…" + s[len(s)-2000:]
	}
	return s
}

// sshConn is one ssh process's standard input and output as a connection.
type sshConn struct {
	w      *os.File
	r      *os.File
	proc   *os.Process
	exited <-chan struct{}
	name   string
}

func (c *sshConn) Read(p []byte) (int, error)  { return c.r.Read(p) }
func (c *sshConn) Write(p []byte) (int, error) { return c.w.Write(p) }

// Close ends the connection: the far end sees its input end, and ssh (a
// client of the shared master, or the master's first user, which leaves
// the master running) is ended.
func (c *sshConn) Close() error {
	c.w.Close()
	c.r.Close()
	select {
	case <-c.exited:
	default:
		c.proc.Signal(syscall.SIGTERM)
		select {
		case <-c.exited:
		case <-time.After(2 * time.Second):
			c.proc.Kill()
			<-c.exited
		}
	}
	return nil
}

func (c *sshConn) LocalAddr() net.Addr  { return sshAddr("local") }
func (c *sshConn) RemoteAddr() net.Addr { return sshAddr(c.name) }
func (c *sshConn) SetDeadline(t time.Time) error {
	return errors.Join(c.r.SetReadDeadline(t), c.w.SetWriteDeadline(t))
}
func (c *sshConn) SetReadDeadline(t time.Time) error  { return c.r.SetReadDeadline(t) }
func (c *sshConn) SetWriteDeadline(t time.Time) error { return c.w.SetWriteDeadline(t) }

type sshAddr string

func (a sshAddr) Network() string { return "ssh" }
func (a sshAddr) String() string  { return string(a) }

// SSHControlDir is the private folder of the shared ssh masters' sockets:
// the home's ssh folder when its path leaves room for ssh's socket names
// (a 40-character hash, plus a temporary suffix while it binds), else one
// of the user's own under the temporary folder. "" when neither is safe
// (connections then share nothing).
func SSHControlDir(h home.Home) string {
	const room = 1 + 40 + 17
	dir := filepath.Join(string(h), "ssh")
	if len(dir)+room > home.MaxSocketPath {
		dir = filepath.Join(os.TempDir(), fmt.Sprintf("agentctl-ssh-%d", os.Getuid()))
		if len(dir)+room > home.MaxSocketPath {
			return ""
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return ""
	}
	// The folder must be ours alone: another user's could hand us their
	// master's socket.
	fi, err := os.Lstat(dir)
	if err != nil || !fi.IsDir() || fi.Mode().Perm()&0o077 != 0 {
		return ""
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); !ok || int(st.Uid) != os.Getuid() {
		return ""
	}
	return dir
}
