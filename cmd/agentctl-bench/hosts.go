package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"
)

// hostsResult is what reaching other hosts over ssh costs, the ssh
// masters warm: medians of o.runs runs each.
type hostsResult struct {
	sessions int // running on each host
	// local is `list` on this machine; sshTrue `ssh HOST true` through the
	// warm master (the round trip a remote command pays at least); remote
	// `list -H HOST` for each host; all `list --hosts` over every host.
	local, sshTrue time.Duration
	// remoteStart is `ssh HOST agentctl dial-stdio` with nothing to send:
	// the round trip plus the far agentctl's start and its dial of its
	// service, which every remote command pays before its request.
	remoteStart time.Duration
	remote      []time.Duration
	all         time.Duration
	// sshTrueAll is `ssh HOST true` to every host at once: what the
	// machine's cores make of several ssh sessions starting together
	// (here the "remote" ends share them).
	sshTrueAll time.Duration
}

// sshHostsBench is n "hosts" on this machine: each an sshd of its own on
// 127.0.0.1 that logs in this user, with an agentctl home of its own
// (sshd's SetEnv), so each runs its own service, reached through
// `agentctl dial-stdio` as a real remote host is.
type sshHostsBench struct {
	work, sshCfg, user string
	ports              []int
	sshds              []*exec.Cmd
}

// measureHosts times `list` on this machine, on one remote host, and over
// several at once, each host running sessions sessions.
func measureHosts(ctx context.Context, o options, work string, n, sessions int) (hostsResult, error) {
	res := hostsResult{sessions: sessions}
	sshd := "/usr/sbin/sshd"
	if p, err := exec.LookPath("sshd"); err == nil {
		sshd = p
	}
	if _, err := os.Stat(sshd); err != nil {
		return res, errors.New("no sshd (apt-get install openssh-server): the remote hosts are sshd instances on 127.0.0.1")
	}
	me, err := user.Current()
	if err != nil {
		return res, err
	}
	b := &sshHostsBench{work: filepath.Join(work, "hosts"), user: me.Username}
	defer b.close()
	if err := os.MkdirAll(b.work, 0o755); err != nil {
		return res, err
	}
	if err := b.keys(ctx); err != nil {
		return res, err
	}
	if os.Geteuid() == 0 && !exists("/run/sshd") {
		os.MkdirAll("/run/sshd", 0o755)
	}
	localHome := filepath.Join(b.work, "local")
	env := append(benchEnv(), "AGENTCTL_HOME="+localHome, "AGENTCTL_SSH_COMMAND=ssh -F "+b.sshCfg)
	cli := func(args ...string) ([]byte, error) {
		cmd := exec.CommandContext(ctx, o.bin, args...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil {
			return out, fmt.Errorf("agentctl %s: %w: %s", strings.Join(args, " "), err, out)
		}
		return out, nil
	}
	var names []string
	for i := range n {
		name := fmt.Sprintf("h%d", i+1)
		home := filepath.Join(b.work, name)
		port, err := b.startSSHD(ctx, sshd, name, home)
		if err != nil {
			return res, err
		}
		u := fmt.Sprintf("ssh://%s@127.0.0.1:%d?agentctl=%s", b.user, port, o.bin)
		if _, err := cli("host", "add", name, u); err != nil {
			return res, err
		}
		names = append(names, name)
	}
	defer func() {
		// Clean up even when the bench was interrupted (ctx ended).
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		quiet := func(args ...string) {
			cmd := exec.CommandContext(cctx, o.bin, args...)
			cmd.Env = env
			cmd.Run()
		}
		for _, h := range append([]string{"local"}, names...) {
			quiet("-H", h, "stop", "--all", "--force")
		}
		quiet("daemon", "stop")
		for _, name := range names {
			c := exec.Command(o.bin, "daemon", "stop")
			c.Env = append(benchEnv(), "AGENTCTL_HOME="+filepath.Join(b.work, name))
			c.Run()
		}
		socks, _ := filepath.Glob(filepath.Join(localHome, "ssh", "*"))
		for _, s := range socks {
			exec.Command("ssh", "-F", b.sshCfg, "-o", "ControlPath="+s, "-O", "exit", "x").Run()
		}
	}()
	for _, h := range append([]string{"local"}, names...) {
		for range sessions {
			if _, err := cli("-H", h, "run", "--", "sleep", "600"); err != nil {
				return res, err
			}
		}
	}
	timed := func(argv ...string) (time.Duration, error) {
		var runs []time.Duration
		for range o.runs {
			cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
			cmd.Env = env
			t0 := time.Now()
			out, err := cmd.CombinedOutput()
			d := time.Since(t0)
			if err != nil {
				return 0, fmt.Errorf("%s: %w: %s", strings.Join(argv, " "), err, out)
			}
			runs = append(runs, d)
		}
		slices.Sort(runs)
		return runs[len(runs)/2], nil
	}
	// Warm: each service has answered, each master is up.
	for _, h := range names {
		if _, err := cli("list", "-H", h); err != nil {
			return res, err
		}
	}
	if res.local, err = timed(o.bin, "list"); err != nil {
		return res, err
	}
	controlDir := filepath.Join(localHome, "ssh")
	sshTrue := func(port int) []string {
		return []string{"ssh", "-F", b.sshCfg, "-o", "ControlMaster=auto", "-o", "ControlPath=" + filepath.Join(controlDir, "%C"),
			"-o", "ControlPersist=600", "-T", "-l", b.user, "-p", fmt.Sprint(port), "127.0.0.1", "true"}
	}
	if res.sshTrue, err = timed(sshTrue(b.ports[0])...); err != nil {
		return res, err
	}
	if res.remoteStart, err = timed(append(sshTrue(b.ports[0])[:len(sshTrue(b.ports[0]))-1], o.bin, "dial-stdio", "--no-autostart")...); err != nil {
		return res, err
	}
	// Every host at once, through a shell that starts them together.
	var all []string
	for _, p := range b.ports {
		all = append(all, shellJoin(sshTrue(p))+" &")
	}
	if res.sshTrueAll, err = timed("sh", "-c", strings.Join(all, " ")+" wait"); err != nil {
		return res, err
	}
	for _, h := range names {
		d, err := timed(o.bin, "list", "-H", h)
		if err != nil {
			return res, err
		}
		res.remote = append(res.remote, d)
	}
	if res.all, err = timed(o.bin, "list", "--hosts", strings.Join(names, ",")); err != nil {
		return res, err
	}
	return res, nil
}

// shellJoin quotes argv for sh.
func shellJoin(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}

// benchEnv is this process's environment less what points at the user's
// agentctl.
func benchEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AGENTCTL_") {
			out = append(out, kv)
		}
	}
	return out
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

func (b *sshHostsBench) keys(ctx context.Context) error {
	for _, k := range []string{"hostkey", "clientkey"} {
		if out, err := exec.CommandContext(ctx, "ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", filepath.Join(b.work, k)).CombinedOutput(); err != nil {
			return fmt.Errorf("ssh-keygen: %w: %s", err, out)
		}
	}
	pub, err := os.ReadFile(filepath.Join(b.work, "clientkey.pub"))
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(b.work, "authorized_keys"), pub, 0o644); err != nil {
		return err
	}
	b.sshCfg = filepath.Join(b.work, "ssh_config")
	cfg := fmt.Sprintf("Host *\n  IdentityFile %s\n  IdentitiesOnly yes\n  UserKnownHostsFile /dev/null\n  StrictHostKeyChecking no\n  BatchMode yes\n  LogLevel ERROR\n", filepath.Join(b.work, "clientkey"))
	return os.WriteFile(b.sshCfg, []byte(cfg), 0o644)
}

// startSSHD runs one host's sshd in the foreground on a free port; its
// logins get AGENTCTL_HOME=home.
func (b *sshHostsBench) startSSHD(ctx context.Context, bin, name, home string) (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cfgPath := filepath.Join(b.work, "sshd_config."+name)
	cfg := fmt.Sprintf("Port %d\nListenAddress 127.0.0.1\nHostKey %s\nPidFile none\nAuthorizedKeysFile %s\nPasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\nPermitRootLogin prohibit-password\nAllowUsers %s\nSetEnv AGENTCTL_HOME=%s\nLogLevel ERROR\n",
		port, filepath.Join(b.work, "hostkey"), filepath.Join(b.work, "authorized_keys"), b.user, home)
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		return 0, err
	}
	logf, err := os.Create(filepath.Join(b.work, "sshd."+name+".log"))
	if err != nil {
		return 0, err
	}
	defer logf.Close()
	cmd := exec.Command(bin, "-D", "-e", "-f", cfgPath)
	cmd.Stderr = logf
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("start sshd: %w", err)
	}
	b.sshds = append(b.sshds, cmd)
	b.ports = append(b.ports, port)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
			c.Close()
			return port, nil
		}
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
	}
	return 0, fmt.Errorf("sshd on port %d did not listen within 10s", port)
}

// close ends the sshds (their connections go with them).
func (b *sshHostsBench) close() {
	for _, c := range b.sshds {
		c.Process.Signal(syscall.SIGTERM)
		c.Wait()
	}
}

func printHosts(w io.Writer, r hostsResult) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	slowest := slices.Max(r.remote)
	fmt.Fprintf(tw, "agentctl over ssh (%d running sessions per host, masters warm, medians)\tms\n", r.sessions)
	fmt.Fprintf(tw, "list, this machine\t%s\n", ms(r.local))
	fmt.Fprintf(tw, "ssh HOST true, through the master\t%s\n", ms(r.sshTrue))
	fmt.Fprintf(tw, "ssh HOST agentctl dial-stdio, nothing sent\t%s\n", ms(r.remoteStart))
	for i, d := range r.remote {
		fmt.Fprintf(tw, "list -H h%d\t%s\n", i+1, ms(d))
	}
	fmt.Fprintf(tw, "  target: <= 2 x local + ssh round trip\t%s\n", ms(2*r.local+r.sshTrue))
	fmt.Fprintf(tw, "ssh HOST true to the %d hosts at once\t%s\n", len(r.remote), ms(r.sshTrueAll))
	fmt.Fprintf(tw, "list --hosts (%d hosts)\t%s\n", len(r.remote), ms(r.all))
	fmt.Fprintf(tw, "  target: <= slowest host + 20 ms\t%s\n", ms(slowest+20*time.Millisecond))
	tw.Flush()
}
