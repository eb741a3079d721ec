package service

import (
	"bytes"
	"context"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentctl/agentctl/proc"
)

// decodePlist parses an XML property list into Go values: string, bool,
// int, []any and map[string]any.
func decodePlist(data []byte) (any, error) {
	d := xml.NewDecoder(bytes.NewReader(data))
	for {
		tok, err := d.Token()
		if err != nil {
			return nil, fmt.Errorf("no plist element: %w", err)
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "plist" {
			break
		}
	}
	v, _, err := decodePlistValue(d)
	return v, err
}

// decodePlistValue reads one value; end reports a closing tag instead.
func decodePlistValue(d *xml.Decoder) (v any, end bool, err error) {
	for {
		tok, err := d.Token()
		if err != nil {
			return nil, false, err
		}
		switch tok := tok.(type) {
		case xml.EndElement:
			return nil, true, nil
		case xml.StartElement:
			switch tok.Name.Local {
			case "string", "key", "integer":
				var s string
				if err := d.DecodeElement(&s, &tok); err != nil {
					return nil, false, err
				}
				if tok.Name.Local == "integer" {
					n, err := strconv.Atoi(s)
					return n, false, err
				}
				return s, false, nil
			case "true", "false":
				if err := d.Skip(); err != nil {
					return nil, false, err
				}
				return tok.Name.Local == "true", false, nil
			case "array":
				var arr []any
				for {
					v, end, err := decodePlistValue(d)
					if err != nil {
						return nil, false, err
					}
					if end {
						return arr, false, nil
					}
					arr = append(arr, v)
				}
			case "dict":
				m := map[string]any{}
				for {
					k, end, err := decodePlistValue(d)
					if err != nil {
						return nil, false, err
					}
					if end {
						return m, false, nil
					}
					key, ok := k.(string)
					if !ok {
						return nil, false, fmt.Errorf("dict key %v is not a <key>", k)
					}
					v, end, err := decodePlistValue(d)
					if err != nil || end {
						return nil, false, fmt.Errorf("dict key %q has no value: %v", key, err)
					}
					m[key] = v
				}
			default:
				return nil, false, fmt.Errorf("unknown plist element <%s>", tok.Name.Local)
			}
		}
	}
}

func TestLaunchdPlistDecodes(t *testing.T) {
	spec := renderCases[2].spec // the one with quotes, %, $ and spaces
	data, err := RenderLaunchdPlist(spec)
	if err != nil {
		t.Fatal(err)
	}
	v, err := decodePlist(data)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"Label":            "com.agentctl.daemon",
		"ProgramArguments": []any{spec.Exe, "daemon", "run", "--label", `a "b" c\d`, "50%", ";", ""},
		"EnvironmentVariables": map[string]any{
			"AGENTCTL_HOME": spec.Home,
			"PATH":          spec.Path,
		},
		"RunAtLoad":           true,
		"KeepAlive":           map[string]any{"SuccessfulExit": false},
		"ThrottleInterval":    launchdThrottleSec,
		"AbandonProcessGroup": true,
		"ProcessType":         "Interactive",
		"StandardOutPath":     spec.Home + "/service.out.log",
		"StandardErrorPath":   spec.Home + "/service.err.log",
	}
	if !reflect.DeepEqual(v, want) {
		t.Errorf("decoded plist\n got %#v\nwant %#v", v, want)
	}
}

func TestParseLaunchctlPrint(t *testing.T) {
	// The shape of `launchctl print gui/501/LABEL` output.
	out := "gui/501/com.agentctl.daemon = {\n" +
		"\tactive count = 1\n" +
		"\tpath = /Users/me/Library/LaunchAgents/com.agentctl.daemon.plist\n" +
		"\ttype = LaunchAgent\n" +
		"\tstate = running\n" +
		"\n" +
		"\tprogram = /usr/local/bin/agentctl\n" +
		"\targuments = {\n" +
		"\t\t/usr/local/bin/agentctl\n" +
		"\t\tdaemon\n" +
		"\t\trun\n" +
		"\t}\n" +
		"\n" +
		"\tenvironment = {\n" +
		"\t\tstate = not-this-one\n" +
		"\t\tAGENTCTL_HOME => /Users/me/.agentctl\n" +
		"\t}\n" +
		"\n" +
		"\tdomain = gui/501 [100005]\n" +
		"\truns = 1\n" +
		"\tpid = 4242\n" +
		"\timmediate reason = speculative\n" +
		"\tlast exit code = (never exited)\n" +
		"}\n"
	got := parseLaunchctlPrint(out)
	for k, want := range map[string]string{
		"state": "running", "pid": "4242", "runs": "1",
		"path":           "/Users/me/Library/LaunchAgents/com.agentctl.daemon.plist",
		"last exit code": "(never exited)",
	} {
		if got[k] != want {
			t.Errorf("%s = %q, want %q", k, got[k], want)
		}
	}
	if _, ok := got["arguments"]; ok {
		t.Error("a nested block was read as a value")
	}
}

// fakeLaunchctl plays launchd for the launchd controller on a machine that
// has none: it answers launchctl's domain commands with launchctl's own
// output formats and exit codes, and runs a loaded job's ProgramArguments
// with its EnvironmentVariables and log paths, as launchd does.
type fakeLaunchctl struct {
	t      *testing.T
	uid    int
	hasGUI bool

	mu       sync.Mutex
	calls    [][]string
	jobs     map[string]*fakeJob // by domain/label
	disabled map[string]bool     // by label
}

type fakeJob struct {
	plist    map[string]any
	path     string
	proc     *os.Process
	exited   chan struct{}
	lastExit string
}

func newFakeLaunchctl(t *testing.T) *fakeLaunchctl {
	f := &fakeLaunchctl{t: t, uid: os.Getuid(), hasGUI: true, jobs: map[string]*fakeJob{}, disabled: map[string]bool{}}
	t.Cleanup(func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		for _, j := range f.jobs {
			j.kill()
		}
	})
	return f
}

func (f *fakeLaunchctl) commands() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, c := range f.calls {
		out = append(out, strings.Join(c, " "))
	}
	return out
}

func notFound(label string, uid int) error {
	return &CommandError{Command: "launchctl", ExitCode: launchctlNotFound,
		Stderr: fmt.Sprintf("Could not find service %q in domain for uid: %d\n", label, uid)}
}

func (f *fakeLaunchctl) Run(ctx context.Context, name string, args ...string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, append([]string{name}, args...))
	if name != "launchctl" || len(args) == 0 {
		return "", fmt.Errorf("fake launchctl cannot run %s %v", name, args)
	}
	gui := "gui/" + strconv.Itoa(f.uid)
	switch args[0] {
	case "print":
		target := args[1]
		if target == gui || target == "user/"+strconv.Itoa(f.uid) || target == "system" {
			if target == gui && !f.hasGUI {
				return "", &CommandError{Command: "launchctl", ExitCode: 112, Stderr: "Bad request.\nCould not find domain for port identifier: 0x0\n"}
			}
			return target + " = {\n\ttype = domain\n}\n", nil
		}
		j, ok := f.jobs[target]
		if !ok {
			return "", notFound(filepath.Base(target), f.uid)
		}
		return j.print(target), nil
	case "print-disabled":
		var b strings.Builder
		b.WriteString("disabled services = {\n")
		for label, d := range f.disabled {
			fmt.Fprintf(&b, "\t%q => %s\n", label, map[bool]string{true: "disabled", false: "enabled"}[d])
		}
		b.WriteString("}\n")
		return b.String(), nil
	case "bootstrap":
		domain, path := args[1], args[2]
		data, err := os.ReadFile(path)
		if err != nil {
			return "", &CommandError{Command: "launchctl", ExitCode: 5, Stderr: "Bootstrap failed: 5: Input/output error\n"}
		}
		v, err := decodePlist(data)
		if err != nil {
			f.t.Errorf("bootstrap of an unparsable plist: %v", err)
			return "", &CommandError{Command: "launchctl", ExitCode: 5, Stderr: "Bootstrap failed: 5: Input/output error\n"}
		}
		plist := v.(map[string]any)
		label := plist["Label"].(string)
		target := domain + "/" + label
		if _, loaded := f.jobs[target]; loaded || f.disabled[label] {
			return "", &CommandError{Command: "launchctl", ExitCode: 5, Stderr: "Bootstrap failed: 5: Input/output error\n"}
		}
		j := &fakeJob{plist: plist, path: path}
		f.jobs[target] = j
		if plist["RunAtLoad"] == true {
			j.start(f.t)
		}
		return "", nil
	case "bootout":
		j, ok := f.jobs[args[1]]
		if !ok {
			return "", &CommandError{Command: "launchctl", ExitCode: 3, Stderr: "Boot-out failed: 3: No such process\n"}
		}
		j.stop()
		delete(f.jobs, args[1])
		return "", nil
	case "kickstart":
		kill := args[1] == "-k"
		target := args[len(args)-1]
		j, ok := f.jobs[target]
		if !ok {
			return "", notFound(filepath.Base(target), f.uid)
		}
		if j.running() && kill {
			j.stop()
		}
		if !j.running() {
			j.start(f.t)
		}
		return "", nil
	case "enable":
		f.disabled[filepath.Base(args[1])] = false
		return "", nil
	}
	return "", fmt.Errorf("fake launchctl: unknown subcommand %v", args)
}

func (j *fakeJob) running() bool {
	if j.proc == nil {
		return false
	}
	select {
	case <-j.exited:
		return false
	default:
		return true
	}
}

func (j *fakeJob) start(t *testing.T) {
	var argv []string
	for _, a := range j.plist["ProgramArguments"].([]any) {
		argv = append(argv, a.(string))
	}
	env := []string{}
	if m, ok := j.plist["EnvironmentVariables"].(map[string]any); ok {
		for k, v := range m {
			env = append(env, k+"="+v.(string))
		}
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	for key, dst := range map[string]*io.Writer{"StandardOutPath": &cmd.Stdout, "StandardErrorPath": &cmd.Stderr} {
		if p, ok := j.plist[key].(string); ok {
			f, err := os.OpenFile(p, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
			if err != nil {
				t.Errorf("launchd would fail to open %s: %v", p, err)
				return
			}
			defer f.Close()
			*dst = f
		}
	}
	if err := cmd.Start(); err != nil {
		t.Errorf("start job: %v", err)
		return
	}
	j.proc = cmd.Process
	j.exited = make(chan struct{})
	exited := j.exited
	go func() {
		err := cmd.Wait()
		j.lastExit = "0"
		if err != nil {
			j.lastExit = err.Error()
		}
		close(exited)
	}()
}

// stop signals the job as launchd does on bootout: SIGTERM, then SIGKILL.
func (j *fakeJob) stop() {
	if !j.running() {
		return
	}
	j.proc.Signal(syscall.SIGTERM)
	select {
	case <-j.exited:
	case <-time.After(5 * time.Second):
		j.kill()
	}
}

func (j *fakeJob) kill() {
	if j.running() {
		j.proc.Signal(syscall.SIGKILL)
		<-j.exited
	}
}

func (j *fakeJob) print(target string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s = {\n\tactive count = 1\n\tpath = %s\n", target, j.path)
	if j.running() {
		fmt.Fprintf(&b, "\tstate = running\n\n\tpid = %d\n\tlast exit code = (never exited)\n", j.proc.Pid)
	} else {
		b.WriteString("\tstate = not running\n")
		if j.lastExit != "" {
			fmt.Fprintf(&b, "\tlast exit code = %s\n", j.lastExit)
		}
	}
	b.WriteString("}\n")
	return b.String()
}

// launchdFixture is a user's home with AGENTCTL_HOME, and a launchd
// controller whose job runs the helper daemon.
type launchdFixture struct {
	fake *fakeLaunchctl
	spec Spec
	home string // the user's home
	ctl  *launchdController
}

func newLaunchdFixture(t *testing.T, scope Scope) launchdFixture {
	home := t.TempDir()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	spec := Spec{Scope: scope, User: "tester", Exe: exe, Args: helperArgs(false), Home: filepath.Join(home, "state dir"), Path: "/usr/bin:/bin"}
	fake := newFakeLaunchctl(t)
	systemDir := filepath.Join(home, "LaunchDaemons")
	return launchdFixture{fake: fake, spec: spec, home: home,
		ctl: newLaunchd(spec, fake, home, systemDir, os.Getuid(), os.Getgid())}
}

func TestLaunchdLifecycle(t *testing.T) {
	fx := newLaunchdFixture(t, ScopeUser)
	ctx := context.Background()
	plistPath := filepath.Join(fx.home, "Library", "LaunchAgents", "com.agentctl.daemon.plist")

	st, err := fx.ctl.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.State != StateNotInstalled || st.Installed {
		t.Fatalf("before install: %+v", st)
	}

	res, err := fx.ctl.Install(ctx)
	if err != nil {
		t.Fatal(err)
	}
	st = res.Status
	if !res.Changed || !st.Installed || !st.Running || st.PID == 0 || st.SocketPID != st.PID || st.UnitPath != plistPath {
		t.Fatalf("after install: %+v", res)
	}
	want, _ := RenderLaunchdPlist(fx.spec)
	if got, err := os.ReadFile(plistPath); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("plist on disk differs from the rendered one (err %v)", err)
	}
	if fi, err := os.Stat(fx.spec.Home); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("AGENTCTL_HOME not created 0700: %v %v", fi, err)
	}
	if out, _ := os.ReadFile(filepath.Join(fx.spec.Home, LaunchdStdoutLog)); !strings.Contains(string(out), "helper daemon serving") {
		t.Errorf("the job's stdout did not land in %s: %q", LaunchdStdoutLog, out)
	}
	if !slices.Contains(fx.fake.commands(), "launchctl bootstrap gui/"+strconv.Itoa(os.Getuid())+" "+plistPath) {
		t.Errorf("not bootstrapped into the GUI domain: %v", fx.fake.commands())
	}
	firstPID := st.PID
	if !fx.ctl.servesHome() {
		t.Error("the installed plist does not serve its AGENTCTL_HOME")
	}
	other := *fx.ctl
	other.spec.Home = fx.spec.Home + "2"
	if other.servesHome() {
		t.Error("the installed plist serves another AGENTCTL_HOME")
	}

	// Installing the same unit again changes nothing.
	res, err = fx.ctl.Install(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.Changed || res.Status.PID != firstPID {
		t.Fatalf("reinstall of the same unit: %+v", res)
	}

	st, err = fx.ctl.Restart(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !st.Running || st.PID == firstPID || st.SocketPID != st.PID {
		t.Fatalf("after restart: %+v (first pid %d)", st, firstPID)
	}

	st, err = fx.ctl.Stop(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Running || !st.Installed || st.State != StateStopped || st.SocketPID != 0 {
		t.Fatalf("after stop: %+v", st)
	}

	st, err = fx.ctl.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !st.Running || st.SocketPID != st.PID {
		t.Fatalf("after start: %+v", st)
	}

	removed, err := fx.ctl.Uninstall(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(removed, []string{plistPath}) {
		t.Errorf("removed %v, want the plist", removed)
	}
	entries, _ := os.ReadDir(filepath.Dir(plistPath))
	if len(entries) != 0 {
		t.Errorf("LaunchAgents not empty after uninstall: %v", entries)
	}
	st, err = fx.ctl.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.State != StateNotInstalled || st.SocketPID != 0 {
		t.Fatalf("after uninstall: %+v", st)
	}
	if _, err := fx.ctl.Start(ctx); err != ErrNotInstalled {
		t.Fatalf("start after uninstall: %v, want ErrNotInstalled", err)
	}
}

func TestLaunchdInstallTakesOverAutostartedService(t *testing.T) {
	fx := newLaunchdFixture(t, ScopeUser)
	if err := os.MkdirAll(fx.spec.Home, 0o700); err != nil {
		t.Fatal(err)
	}
	auto := startHelperDaemon(t, fx.spec.Home)
	res, err := fx.ctl.Install(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if res.Status.PID == auto || res.Status.SocketPID != res.Status.PID {
		t.Fatalf("the job does not serve the socket: %+v (auto-started pid %d)", res.Status, auto)
	}
	if len(res.Notes) == 0 || !strings.Contains(res.Notes[0], strconv.Itoa(auto)) {
		t.Errorf("notes do not mention the replaced service: %q", res.Notes)
	}
	if info, err := proc.Lookup(auto); err == nil && !info.Zombie {
		t.Errorf("the auto-started service (pid %d) still runs", auto)
	}
}

func TestLaunchdDisabledJobIsEnabled(t *testing.T) {
	fx := newLaunchdFixture(t, ScopeUser)
	fx.fake.disabled["com.agentctl.daemon"] = true
	res, err := fx.ctl.Install(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !res.Status.Running || !res.Status.Enabled {
		t.Fatalf("after install of a disabled job: %+v", res.Status)
	}
}

func TestLaunchdWithoutGUILoginUsesUserDomain(t *testing.T) {
	fx := newLaunchdFixture(t, ScopeUser)
	fx.fake.hasGUI = false
	if _, err := fx.ctl.Install(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := "launchctl bootstrap user/" + strconv.Itoa(os.Getuid())
	found := false
	for _, c := range fx.fake.commands() {
		found = found || strings.HasPrefix(c, want)
	}
	if !found {
		t.Fatalf("no %q in %v", want, fx.fake.commands())
	}
}

func TestLaunchdSystemDaemon(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("a system service needs root")
	}
	fx := newLaunchdFixture(t, ScopeSystem)
	res, err := fx.ctl.Install(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(fx.home, "LaunchDaemons", "com.agentctl.daemon.tester.plist")
	if res.Status.UnitPath != want || !res.Status.Running {
		t.Fatalf("system install: %+v", res.Status)
	}
	if !slices.Contains(fx.fake.commands(), "launchctl bootstrap system "+want) {
		t.Errorf("not bootstrapped into the system domain: %v", fx.fake.commands())
	}
	if _, err := fx.ctl.Uninstall(context.Background()); err != nil {
		t.Fatal(err)
	}
}
