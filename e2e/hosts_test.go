package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentctl/agentctl/api"
)

// sshHost is one "host" of the tests: a local account of its own (its own
// HOME, so its own agentctl service) behind an sshd of its own on
// 127.0.0.1, so killing one host's sshd leaves the other reachable.
type sshHost struct {
	name string // the test's name for it (a, b)
	user string
	uid  int
	home string
	bin  string // its agentctl
	port int
	sshd *exec.Cmd
	url  string
}

// sshWorld is the tests' ssh: a client key, the hosts, and the ssh
// configuration the CLI runs with (AGENTCTL_SSH_COMMAND).
type sshWorld struct {
	t      *testing.T
	dir    string
	sshCfg string
	hosts  []*sshHost
}

// newSSHWorld starts one sshd per host, each for one new local account.
// It needs root (to add the accounts) and Debian's openssh-server; without
// them the test is skipped, saying why. Everything it made (accounts and
// their homes, sshd processes, ssh masters) goes at the end.
func newSSHWorld(t *testing.T, names ...string) *sshWorld {
	t.Helper()
	sshd, err := exec.LookPath("sshd")
	if err != nil {
		sshd = "/usr/sbin/sshd"
	}
	switch {
	case os.Geteuid() != 0:
		t.Skip("SKIPPED: the ssh host tests add local accounts and need root (CI runs them as root)")
	case !fileExists(sshd):
		t.Skip("SKIPPED: no sshd (apt-get install openssh-server; .ci/run installs it)")
	}
	for _, tool := range []string{"ssh", "ssh-keygen", "useradd", "userdel"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("SKIPPED: %s is not installed", tool)
		}
	}
	dir, err := os.MkdirTemp("", "acs")
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o755)
	w := &sshWorld{t: t, dir: dir}
	t.Cleanup(w.close)
	// sshd refuses to start without its privilege separation folder.
	if !fileExists("/run/sshd") {
		if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Remove("/run/sshd") })
	}
	w.run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", filepath.Join(dir, "hostkey"))
	w.run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", filepath.Join(dir, "clientkey"))
	pub, err := os.ReadFile(filepath.Join(dir, "clientkey.pub"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "authorized_keys"), pub, 0o644); err != nil {
		t.Fatal(err)
	}
	w.sshCfg = filepath.Join(dir, "ssh_config")
	cfg := fmt.Sprintf(`Host *
  IdentityFile %s
  IdentitiesOnly yes
  UserKnownHostsFile /dev/null
  StrictHostKeyChecking no
  BatchMode yes
  LogLevel ERROR
  ConnectTimeout 5
`, filepath.Join(dir, "clientkey"))
	if err := os.WriteFile(w.sshCfg, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	bin, err := os.ReadFile(agentctlBin)
	if err != nil {
		t.Fatal(err)
	}
	suffix := filepath.Base(dir)[3:]
	for _, name := range names {
		h := &sshHost{name: name, user: "acs" + name + strings.ToLower(suffix)}
		h.home = filepath.Join(dir, name)
		w.run("useradd", "-M", "-d", h.home, "-s", "/bin/sh", "-U", h.user)
		w.hosts = append(w.hosts, h)
		// A locked account ('!', useradd's default) may not log in even
		// with a key when sshd does not use PAM; '*' has no password.
		w.run("usermod", "-p", "*", h.user)
		w.run("install", "-d", "-o", h.user, "-g", h.user, "-m", "0755", h.home)
		h.bin = filepath.Join(h.home, "agentctl")
		if err := os.WriteFile(h.bin, bin, 0o755); err != nil {
			t.Fatal(err)
		}
		w.run("chown", h.user+":"+h.user, h.bin)
		out, err := exec.Command("id", "-u", h.user).Output()
		if err != nil {
			t.Fatal(err)
		}
		h.uid, _ = strconv.Atoi(strings.TrimSpace(string(out)))
		w.startSSHD(sshd, h)
		h.url = fmt.Sprintf("ssh://%s@127.0.0.1:%d?agentctl=%s", h.user, h.port, h.bin)
	}
	return w
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

func (w *sshWorld) run(name string, args ...string) string {
	w.t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		w.t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// startSSHD runs an sshd for h alone, in the foreground, on a free port.
func (w *sshWorld) startSSHD(bin string, h *sshHost) {
	w.t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		w.t.Fatal(err)
	}
	h.port = l.Addr().(*net.TCPAddr).Port
	l.Close()
	cfgPath := filepath.Join(w.dir, "sshd_config."+h.name)
	cfg := fmt.Sprintf(`Port %d
ListenAddress 127.0.0.1
HostKey %s
PidFile none
AuthorizedKeysFile %s
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PermitRootLogin no
AllowUsers %s
LogLevel ERROR
`, h.port, filepath.Join(w.dir, "hostkey"), filepath.Join(w.dir, "authorized_keys"), h.user)
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		w.t.Fatal(err)
	}
	h.sshd = exec.Command(bin, "-D", "-e", "-f", cfgPath)
	logPath := filepath.Join(w.dir, "sshd."+h.name+".log")
	logf, err := os.Create(logPath)
	if err != nil {
		w.t.Fatal(err)
	}
	defer logf.Close()
	h.sshd.Stderr = logf
	if err := h.sshd.Start(); err != nil {
		w.t.Fatal(err)
	}
	// What sshd said, for a test that failed (the folder goes after).
	w.t.Cleanup(func() {
		if b, _ := os.ReadFile(logPath); w.t.Failed() && len(b) > 0 {
			w.t.Logf("sshd of host %s:\n%s", h.name, b)
		}
	})
	WaitFor(w.t, 10*time.Second, "sshd to listen", func() bool {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", h.port))
		if err == nil {
			c.Close()
		}
		return err == nil
	})
}

// killSSHD takes h off the network: its sshd and every connection it
// serves (the CLI's shared master among them) end.
func (w *sshWorld) killSSHD(h *sshHost) {
	for _, pid := range descendants(h.sshd.Process.Pid) {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	h.sshd.Process.Kill()
	h.sshd.Wait()
	h.sshd = nil
}

// descendants are the processes under pid, read from /proc.
func descendants(pid int) []int {
	parent := map[int]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// The fields after the command's closing parenthesis: state, ppid.
		i := bytes.LastIndexByte(b, ')')
		f := strings.Fields(string(b[i+1:]))
		if len(f) > 1 {
			parent[p], _ = strconv.Atoi(f[1])
		}
	}
	var out []int
	var walk func(int)
	walk = func(pp int) {
		for p, par := range parent {
			if par == pp {
				out = append(out, p)
				walk(p)
			}
		}
	}
	walk(pid)
	return out
}

// processesOf are the processes running as uid.
func processesOf(uid int) []int {
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		var st syscall.Stat_t
		if syscall.Stat(filepath.Join("/proc", e.Name()), &st) == nil && int(st.Uid) == uid {
			out = append(out, p)
		}
	}
	return out
}

func (w *sshWorld) close() {
	for _, h := range w.hosts {
		if h.sshd != nil {
			w.killSSHD(h)
		}
		// What the test started as the account (its service, its
		// sessions), by pid, before the account goes.
		for i := 0; i < 50; i++ {
			pids := processesOf(h.uid)
			if len(pids) == 0 || h.uid == 0 {
				break
			}
			for _, pid := range pids {
				syscall.Kill(pid, syscall.SIGKILL)
			}
			time.Sleep(20 * time.Millisecond)
		}
		if out, err := exec.Command("userdel", "-r", h.user).CombinedOutput(); err != nil {
			w.t.Logf("userdel -r %s: %v: %s", h.user, err, out)
		}
	}
	os.RemoveAll(w.dir)
}

// use points e's CLI at the world's ssh and names its hosts, and closes
// the ssh masters the CLI leaves at the end.
func (w *sshWorld) use(e *Env) {
	e.Setenv("AGENTCTL_SSH_COMMAND", "ssh -F "+w.sshCfg)
	for _, h := range w.hosts {
		e.MustRun("host", "add", h.name, h.url)
	}
	w.t.Cleanup(func() {
		socks, _ := filepath.Glob(filepath.Join(e.Home, "ssh", "*"))
		for _, s := range socks {
			exec.Command("ssh", "-F", w.sshCfg, "-o", "ControlPath="+s, "-O", "exit", "x").Run()
		}
	})
}

func TestHostsOverSSH(t *testing.T) {
	w := newSSHWorld(t, "a", "b")
	e := NewEnv(t)
	w.use(e)
	a, b := w.hosts[0], w.hosts[1]

	// Run on host A: the session is A's, in A's account and home.
	var onA api.Session
	e.JSON(&onA, "run", "--json", "-H", "a", "--name", "on-a", "--", "sh", "-c", "id -un; pwd; exec sleep 300")
	got := e.MustRun("logs", "-n", "0", "a/"+onA.ID)
	WaitFor(t, 10*time.Second, "A's session to say who it is", func() bool {
		got = e.MustRun("logs", "-n", "0", "a/"+onA.ID)
		return strings.Contains(got, a.home)
	})
	if !strings.Contains(got, a.user) {
		t.Fatalf("A's session runs as someone else: %q (want %s in %s)", got, a.user, a.home)
	}
	// B does not see it: two hosts, two services.
	if out := e.MustRun("list", "-q", "-H", "b"); strings.Contains(out, onA.ID) {
		t.Fatalf("B lists A's session: %s", out)
	}
	local := e.Start("--name", "on-local", "--", "sleep", "300")
	var onB api.Session
	e.JSON(&onB, "run", "--json", "-H", "b", "--name", "on-b", "--", "sleep", "300")

	// Across A, B and this machine: one list, each row naming its host.
	var all api.SessionList
	e.JSON(&all, "list", "--json", "--hosts", "all")
	hostOf := map[string]string{}
	for _, s := range all.Sessions {
		hostOf[s.ID] = s.Host
	}
	for id, want := range map[string]string{onA.ID: "a", onB.ID: "b", local.ID: "local"} {
		if hostOf[id] != want {
			t.Fatalf("list --hosts all: session %s on %q, want %s: %+v", id, hostOf[id], want, all)
		}
	}
	table := e.MustRun("list", "-H", "a,b,local")
	for _, want := range []string{"HOST", "a/" + onA.ID[:4], "b/" + onB.ID[:4], "local/" + local.ID[:4]} {
		if !strings.Contains(table, want) {
			t.Fatalf("list -H a,b,local lacks %q:\n%s", want, table)
		}
	}

	// events over A and this machine: one stream, each event naming its
	// host and its session's handle.
	ev := e.Command("events", "--hosts", "a,local", "--since", "0", "--type", "session.started")
	evOut, err := ev.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := ev.Start(); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{onA.ID: "a", local.ID: "local"}
	sc := bufio.NewScanner(evOut)
	for len(want) > 0 && sc.Scan() {
		var got api.Event
		if err := json.Unmarshal(sc.Bytes(), &got); err != nil {
			t.Fatalf("events: %q: %v", sc.Text(), err)
		}
		if host, ok := want[got.SessionID]; ok {
			if got.Host != host || got.Session == nil || got.Session.Host != host {
				t.Fatalf("events: %s's event names host %q, want %s: %s", got.SessionID, got.Host, host, sc.Text())
			}
			delete(want, got.SessionID)
		}
	}
	ev.Process.Kill()
	ev.Wait()
	if len(want) > 0 {
		t.Fatalf("events --hosts a,local: no start event of %v", want)
	}

	// top over every host: A's, B's and this machine's sessions, by host.
	view := newTmux(t, e, 160, 30)
	view.text(e.Bin + " top --hosts all")
	view.keys("Enter")
	screen := view.waitScreen(20*time.Second, "every host's sessions", func(s string) bool {
		return strings.Contains(s, "on-a") && strings.Contains(s, "on-b") && strings.Contains(s, "on-local")
	})
	for name, host := range map[string]string{"on-a": "a", "on-b": "b", "on-local": "local"} {
		found := false
		for _, l := range strings.Split(screen, "\n") {
			f := strings.Fields(strings.TrimPrefix(strings.TrimSpace(l), "›"))
			found = found || len(f) > 2 && f[0] == host && f[1] == name
		}
		if !found {
			t.Fatalf("top: no row of %s on host %s:\n%s", name, host, screen)
		}
	}
	view.keys("q")

	// logs -f from B follows to the end, over ssh.
	var counter api.Session
	e.JSON(&counter, "run", "--json", "-H", "b", "--", "sh", "-c", "for i in 1 2 3; do echo line-$i; sleep 0.3; done")
	out := e.MustRun("logs", "-f", "-n", "0", "b/"+counter.ID)
	for _, want := range []string{"line-1", "line-2", "line-3"} {
		if !strings.Contains(out, want) {
			t.Fatalf("logs -f from B: no %q in %q", want, out)
		}
	}

	// Attach to A through a real terminal: typed bytes go through ssh to
	// the session and its output comes back; Ctrl-] detaches.
	var cat api.Session
	e.JSON(&cat, "run", "--json", "-H", "a", "--", "cat")
	tm := newTmux(t, e, 100, 30)
	tm.text(e.Bin + " attach a/" + cat.ID)
	tm.keys("Enter")
	// Attached, the session's (empty) screen is drawn over ours.
	tm.waitScreen(15*time.Second, "the session's screen", func(s string) bool {
		return !strings.Contains(s, " attach a/")
	})
	tm.text("ping-over-ssh")
	tm.keys("Enter")
	WaitFor(t, 10*time.Second, "the echo of what was typed", func() bool {
		return strings.Count(tm.screen(), "ping-over-ssh") >= 2 // typed, and cat's echo
	})
	tm.keys("C-]")
	tm.waitFor(10*time.Second, "detached from")
	if s := e.Session("a/" + cat.ID); s.Status != api.StatusRunning {
		t.Fatalf("detaching stopped A's session: %s", s.Status)
	}

	// Stop on B.
	e.MustRun("stop", "--timeout", "1s", "b/"+onB.ID)
	if s := e.Session("b/" + onB.ID); !s.Status.Ended() {
		t.Fatalf("B's session after stop: %s", s.Status)
	}
	e.JSON(&onB, "run", "--json", "-H", "b", "--name", "on-b2", "--", "sleep", "300")
	e.MustRun("list", "--hosts", "all") // B's running sessions are now its last seen

	// B's sshd goes: a warning names B, A and this machine are listed,
	// and B's sessions seen before are unknown, not gone, not stopped.
	w.killSSHD(b)
	var l api.SessionList
	stdout, stderr, code := e.Run("list", "--json", "--hosts", "all")
	if code != 0 {
		t.Fatalf("list --hosts all with B down: exit %d: %s", code, stderr)
	}
	if err := json.Unmarshal([]byte(stdout), &l); err != nil {
		t.Fatal(err)
	}
	seen := map[string]api.Session{}
	for _, s := range l.Sessions {
		seen[s.ID] = s
	}
	if seen[onA.ID].Status != api.StatusRunning || seen[local.ID].Status != api.StatusRunning {
		t.Fatalf("with B down, A's and the local session are not listed running: %+v", l)
	}
	if s, ok := seen[onB.ID]; !ok || s.Status != api.StatusUnknown || s.Host != "b" {
		t.Fatalf("with B down, its session seen before is %+v, want unknown on b", s)
	}
	if !strings.Contains(strings.Join(l.Warnings, "\n"), "host b did not answer") {
		t.Fatalf("no warning names B: %q", l.Warnings)
	}
	_, stderr, code = e.Run("list", "--hosts", "all")
	if code != 0 || !strings.Contains(stderr, "host b did not answer") || !strings.Contains(stderr, "cannot reach the host over ssh") {
		t.Fatalf("list with B down: exit %d, stderr %q", code, stderr)
	}
	_, stderr, code = e.Run("status", "b/"+onB.ID)
	if code == 0 || !strings.Contains(stderr, "host b") {
		t.Fatalf("status on B down: exit %d, stderr %q", code, stderr)
	}

	// Clean up A's sessions while it answers.
	e.Run("stop", "--force", "a/"+onA.ID, "a/"+cat.ID)
}

// A host whose agentctl is missing, or speaks another protocol, is a
// clear message naming the host and what to do.
func TestHostsOverSSHMissingOrOldAgentctl(t *testing.T) {
	w := newSSHWorld(t, "c")
	e := NewEnv(t)
	w.use(e)
	c := w.hosts[0]

	missing := fmt.Sprintf("ssh://%s@127.0.0.1:%d?agentctl=%s", c.user, c.port, filepath.Join(c.home, "no-agentctl"))
	_, stderr, code := e.Run("list", "-H", missing)
	if code == 0 || !strings.Contains(stderr, "agentctl is not installed there") || !strings.Contains(stderr, "no-agentctl") {
		t.Fatalf("missing remote agentctl: exit %d, stderr %q", code, stderr)
	}
	t.Logf("a missing remote agentctl: %s", stderr)

	// An agentctl of an older protocol, built as such.
	old := filepath.Join(w.dir, "agentctl-old")
	build := exec.Command("go", "build", "-o", old, "-ldflags", "-X main.protocol=0 -X main.version=0.0.1-old", "../cmd/agentctl")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build an old agentctl: %v\n%s", err, out)
	}
	os.Chmod(old, 0o755)
	tooOld := fmt.Sprintf("ssh://%s@127.0.0.1:%d?agentctl=%s", c.user, c.port, old)
	_, stderr, code = e.Run("list", "-H", tooOld)
	for _, want := range []string{"0.0.1-old (protocol 0)", fmt.Sprintf("(protocol %d)", api.Protocol), "upgrade agentctl on 127.0.0.1"} {
		if code == 0 || !strings.Contains(stderr, want) {
			t.Fatalf("old remote agentctl: exit %d, stderr %q lacks %q", code, stderr, want)
		}
	}
	t.Logf("an old remote agentctl: %s", stderr)

	// The same older agentctl as this machine's running service (an
	// upgrade replaced the binary, not the service): the CLI says so once
	// per command, and version names both.
	oldHome, err := os.MkdirTemp("", "acold")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(oldHome)
	vars := append(slices.Clone(e.Vars), "AGENTCTL_HOME="+oldHome)
	run := func(bin string, args ...string) (string, string) {
		cmd := exec.Command(bin, args...)
		cmd.Env = vars
		var out, errb strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errb
		cmd.Run()
		return out.String(), errb.String()
	}
	run(old, "daemon", "start")
	defer run(old, "daemon", "stop")
	_, stderr = run(e.Bin, "list", "-a")
	if want := "the service runs 0.0.1-old, this is "; strings.Count(stderr, want) != 1 || !strings.Contains(stderr, "agentctl daemon restart") {
		t.Fatalf("list against an older service: stderr %q, want %q once", stderr, want)
	}
	if out, _ := run(e.Bin, "version"); !strings.Contains(out, "service:  0.0.1-old (pid ") {
		t.Fatalf("version against an older service: %q", out)
	}
}
