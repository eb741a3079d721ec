package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentctl/agentctl/api"
)

func TestRunListStatusLogs(t *testing.T) {
	t.Parallel()
	e := NewEnv(t)
	s := e.Start("--name", "greeter", "--", "sh", "-c", "echo hello from agentctl; read reply; exit 3")
	if s.Status != api.StatusRunning || s.PID == 0 || s.PGID != s.PID || s.StartTime == nil {
		t.Fatalf("started session = %+v; want running with pid == pgid and a start time", s)
	}
	if list := e.Launched(); len(list) != 1 || list[0].ID != s.ID {
		t.Fatalf("list = %+v, want the one running session", list)
	}
	e.MustRun("send", s.ID, "bye")
	out := e.MustRun("logs", "-f", s.ID[:8])
	if !strings.Contains(out, "hello from agentctl") {
		t.Errorf("logs -f = %q", out)
	}
	final := e.Session(s.ID)
	if final.Status != api.StatusExited || final.ExitCode == nil || *final.ExitCode != 3 || final.EndedAt == nil {
		t.Fatalf("final = %+v, want exited with code 3", final)
	}
	if len(e.Launched()) != 0 {
		t.Error("list without -a shows an ended session")
	}
	if l := e.Launched("-a"); len(l) != 1 {
		t.Errorf("list -a = %d sessions, want 1", len(l))
	}
}

// The pty's output processing is switched off (stty -opost), so the log
// must hold exactly the bytes the command wrote.
func TestOutputLandsByteIdentical(t *testing.T) {
	t.Parallel()
	e := NewEnv(t)
	data := make([]byte, 6<<20)
	rand.New(rand.NewSource(42)).Read(data)
	src := filepath.Join(t.TempDir(), "payload")
	if err := os.WriteFile(src, data, 0o600); err != nil {
		t.Fatal(err)
	}
	s := e.Start("--", "sh", "-c", "stty raw -echo -opost; cat "+src)
	e.WaitStatus(s.ID, api.StatusExited, 60*time.Second)
	got, err := os.ReadFile(filepath.Join(e.SessionDir(s.ID), "output.log"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, data) {
		t.Fatalf("output.log differs: %d bytes, want %d", len(got), len(data))
	}
}

func TestServiceKill9KeepsSessions(t *testing.T) {
	t.Parallel()
	e := NewEnv(t)
	const n = 20
	var ids []string
	var pids []int
	for i := 0; i < n; i++ {
		script := "i=0; while true; do echo tick $i; i=$((i+1)); sleep 0.1; done"
		if i == 0 {
			// This one exits while the service is down.
			script = "sleep 1.5; echo done; exit 7"
		}
		s := e.Start("--", "sh", "-c", script)
		ids = append(ids, s.ID)
		pids = append(pids, s.PID)
	}
	daemon := e.DaemonPID()
	killPID(t, daemon, syscall.SIGKILL)
	waitGone(t, daemon, 5*time.Second)
	size := func(id string) int64 {
		st, err := os.Stat(filepath.Join(e.SessionDir(id), "output.log"))
		if err != nil {
			return 0
		}
		return st.Size()
	}
	before := size(ids[1])
	time.Sleep(2 * time.Second)
	for i, pid := range pids[1:] {
		if !alive(pid) {
			t.Fatalf("session %d (pid %d) died with the service", i+1, pid)
		}
	}
	if after := size(ids[1]); after <= before {
		t.Fatalf("output stopped landing while the service was down: %d → %d bytes", before, after)
	}
	if alive(pids[0]) {
		t.Fatal("the short session should have exited by now")
	}
	// The next command starts a new service, which re-derives everything.
	list := e.Launched("-a")
	if len(list) != n {
		t.Fatalf("list -a after restart: %d sessions, want %d", len(list), n)
	}
	for _, s := range list {
		switch s.ID {
		case ids[0]:
			if s.Status != api.StatusExited || s.ExitCode == nil || *s.ExitCode != 7 {
				t.Errorf("session that exited while the service was down = %s code %v, want exited 7", s.Status, s.ExitCode)
			}
		default:
			if s.Status != api.StatusRunning {
				t.Errorf("session %s is %s after the restart, want running", s.ID, s.Status)
			}
		}
	}
	if e.DaemonPID() == daemon {
		t.Error("the service was not restarted")
	}
}

// `agentctl run` killed at random points: a session that started keeps
// running and is listed; none is left half-made.
func TestRunKilledMidRequest(t *testing.T) {
	// Alone: it times client kills against the service on purpose.
	e := NewEnv(t)
	e.MustRun("daemon", "start")
	rng := rand.New(rand.NewSource(7))
	for i := 0; i < 12; i++ {
		cmd := e.Command("run", "--", "sleep", "30")
		var out bytes.Buffer
		cmd.Stdout = &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(rng.Intn(40)) * time.Millisecond)
		sig := syscall.SIGTERM
		if i%2 == 1 {
			sig = syscall.SIGKILL
		}
		cmd.Process.Signal(sig)
		cmd.Wait()
	}
	time.Sleep(500 * time.Millisecond)
	for _, s := range e.Launched("-a") {
		if s.Status != api.StatusRunning {
			t.Errorf("session %s is %s: a killed client must not harm a started session", s.ID, s.Status)
		}
		if !alive(s.PID) {
			t.Errorf("session %s listed running but pid %d is gone", s.ID, s.PID)
		}
	}
	entries, _ := os.ReadDir(filepath.Join(e.Home, "sessions"))
	if got := len(e.Launched("-a")); got != len(entries) {
		t.Errorf("%d session folders but %d sessions listed: something was left half-made", len(entries), got)
	}
}

// A launch record whose start time does not match the live process with
// that pid is lost, never running.
func TestRecycledPIDIsLost(t *testing.T) {
	t.Parallel()
	e := NewEnv(t)
	s := e.Start("--", "sleep", "30")
	dir := e.SessionDir(s.ID)
	b, err := os.ReadFile(filepath.Join(dir, "launch.json"))
	if err != nil {
		t.Fatal(err)
	}
	// A copy of the record whose agent and monitor pids name this test's own
	// process: alive, but not the processes that were started (their start
	// stamps differ), as after pid reuse.
	var rec map[string]any
	if err := json.Unmarshal(b, &rec); err != nil {
		t.Fatal(err)
	}
	rec["id"] = "01zzzzzzzzzzzzzzzzzzzzzzzz"
	rec["process"].(map[string]any)["pid"] = os.Getpid()
	rec["shim"].(map[string]any)["pid"] = os.Getpid()
	fakeJSON, _ := json.Marshal(rec)
	fake := string(fakeJSON)
	fdir := e.SessionDir("01zzzzzzzzzzzzzzzzzzzzzzzz")
	if err := os.Mkdir(fdir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(fdir, "launch.json"), []byte(fake), 0o600); err != nil {
		t.Fatal(err)
	}
	got := e.Session("01zzzzzzzzzzzzzzzzzzzzzzzz")
	if got.Status != api.StatusLost {
		t.Fatalf("status with a recycled pid = %s, want lost", got.Status)
	}
}

func TestStopEndsTheWholeTree(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		script string
		flags  []string
	}{
		{"ignores SIGTERM", `trap "" TERM; echo ready; while true; do sleep 0.2; done`, []string{"--timeout", "1s"}},
		{"grandchildren in the group", `sleep 300 & sleep 300 & echo ready; wait`, nil},
		{"grandchild that called setsid", `setsid sh -c 'trap "" TERM HUP; sleep 300' & echo ready; sleep 300`, []string{"--timeout", "1s"}},
		{"force", `trap "" TERM; echo ready; sleep 300`, []string{"--force"}},
	}
	e := NewEnv(t)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := e.Start("--", "sh", "-c", tc.script)
			WaitFor(t, 10*time.Second, "the script to be ready", func() bool {
				b, _ := os.ReadFile(filepath.Join(e.SessionDir(s.ID), "output.log"))
				return bytes.Contains(b, []byte("ready"))
			})
			tree := descendantsOf(t, shimPID(t, e, s.ID))
			if len(tree) < 1 {
				t.Fatalf("no processes under the session's monitor")
			}
			var final api.Session
			e.JSON(&final, append(append([]string{"stop", "--json"}, tc.flags...), s.ID)...)
			if !final.Status.Ended() {
				t.Fatalf("after stop the session is %s", final.Status)
			}
			for _, pid := range tree {
				if alive(pid) {
					t.Errorf("pid %d of the session survived the stop", pid)
				}
			}
		})
	}
}

func shimPID(t *testing.T, e *Env, id string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(e.SessionDir(id), "launch.json"))
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(b, []byte(`"shim"`))
	var pid int
	fmt.Sscanf(string(b[i:]), `"shim": {`+"\n"+`    "pid": %d`, &pid)
	if pid == 0 {
		t.Fatalf("no shim pid in launch.json")
	}
	return pid
}

// descendantsOf lists every live descendant of pid from /proc.
func descendantsOf(t *testing.T, root int) []int {
	t.Helper()
	ents, _ := os.ReadDir("/proc")
	parent := map[int]int{}
	for _, en := range ents {
		var pid int
		if _, err := fmt.Sscanf(en.Name(), "%d", &pid); err != nil {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(b, ')')
		var state string
		var ppid int
		fmt.Sscanf(string(b[i+2:]), "%s %d", &state, &ppid)
		parent[pid] = ppid
	}
	var out []int
	for pid := range parent {
		for p := parent[pid]; p > 1; p = parent[p] {
			if p == root {
				out = append(out, pid)
				break
			}
		}
	}
	return out
}

func TestBadInput(t *testing.T) {
	t.Parallel()
	e := NewEnv(t)
	// Ids begin with random characters: start sessions until two share
	// the first one (at most 33 by the pigeonhole principle), so a prefix
	// is ambiguous.
	var a, b api.Session
	seen := map[byte]api.Session{}
	started := 0
	for a.ID == "" {
		s := e.Start("--", "sleep", "30")
		started++
		if prev, ok := seen[s.ID[0]]; ok {
			a, b = prev, s
		}
		seen[s.ID[0]] = s
	}
	common := 0
	for common < len(a.ID) && a.ID[common] == b.ID[common] {
		common++
	}
	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantErr  string
	}{
		{"unknown id", []string{"status", "zzzzzz"}, 1, "no session matches"},
		{"ambiguous prefix", []string{"status", a.ID[:common]}, 1, "matches 2 sessions"},
		{"path traversal", []string{"status", "../../etc"}, 2, "not a valid session id"},
		{"missing binary", []string{"run", "--", "no-such-binary-agentctl"}, 1, "no-such-binary-agentctl: executable file not found"},
		{"missing cwd", []string{"run", "--cwd", "/no/such/dir", "--", "true"}, 1, "/no/such/dir"},
		{"no command", []string{"run"}, 2, "no command given"},
		{"bad flag", []string{"list", "--bogus"}, 2, "unknown flag"},
		{"bad env", []string{"run", "--env", "NOEQUALS", "--", "true"}, 2, "KEY=VALUE"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, stderr, code := e.Run(tc.args...)
			if code != tc.wantCode || !strings.Contains(stderr, tc.wantErr) {
				t.Errorf("agentctl %v: exit %d, stderr %q; want exit %d and %q", tc.args, code, stderr, tc.wantCode, tc.wantErr)
			}
			if strings.Count(strings.TrimSpace(stderr), "\n") > 0 {
				t.Errorf("error is more than one line: %q", stderr)
			}
		})
	}
	// Failed starts leave nothing that looks like a session.
	if got := len(e.Launched("-a")); got != started {
		t.Errorf("after failed starts list -a shows %d sessions, want %d", got, started)
	}
	entries, _ := os.ReadDir(filepath.Join(e.Home, "sessions"))
	if len(entries) != started {
		t.Errorf("%d session folders, want %d: a failed start left one behind", len(entries), started)
	}
}

func TestCorruptRecordIsAWarning(t *testing.T) {
	t.Parallel()
	e := NewEnv(t)
	good := e.Start("--", "sleep", "30")
	bad := e.SessionDir("01aaaaaaaaaaaaaaaaaaaaaaaa")
	os.Mkdir(bad, 0o700)
	os.WriteFile(filepath.Join(bad, "launch.json"), []byte(`{"id": "01aaaa", "argv": [tru`), 0o600)
	out, stderr, code := e.Run("list", "-a")
	if code != 0 {
		t.Fatalf("list failed on a corrupt record: %d %s", code, stderr)
	}
	if !strings.Contains(out, good.ID[:4]) || !strings.Contains(stderr, "01aaaaaaaaaaaaaaaaaaaaaaaa") {
		t.Errorf("list: stdout %q stderr %q; want the good session listed and a warning naming the bad one", out, stderr)
	}
	if _, err := os.Stat(filepath.Join(bad, "launch.json")); err != nil {
		t.Error("the corrupt record was deleted")
	}
	e.MustRun("prune")
	if _, err := os.Stat(filepath.Join(bad, "launch.json")); err != nil {
		t.Error("prune deleted a corrupt record that a person should look at")
	}
}

// The socket is 0600 in a 0700 folder, and the service itself refuses a
// connection from another uid even when the file modes would let it in.
func TestForeignUIDIsRefused(t *testing.T) {
	t.Parallel()
	if os.Getuid() != 0 {
		t.Skip("needs root to act as another user")
	}
	e := NewEnv(t)
	e.MustRun("daemon", "start")
	sock := filepath.Join(e.Home, "agentctl.sock")
	if st, _ := os.Stat(sock); st.Mode().Perm() != 0o600 {
		t.Errorf("socket mode %v, want 0600", st.Mode().Perm())
	}
	if st, _ := os.Stat(e.Home); st.Mode().Perm() != 0o700 {
		t.Errorf("home mode %v, want 0700", st.Mode().Perm())
	}
	asNobody := func() (string, int) {
		cmd := exec.Command("curl", "-s", "--unix-socket", sock, "http://agentctl/v1/daemon")
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Skipf("curl unavailable: %v", err)
		}
		return string(out), code
	}
	if out, code := asNobody(); code == 0 {
		t.Fatalf("another uid reached the service through the file modes: %s", out)
	}
	os.Chmod(e.Home, 0o755)
	os.Chmod(sock, 0o666)
	defer os.Chmod(e.Home, 0o700)
	out, _ := asNobody()
	if !strings.Contains(out, `"code":"forbidden"`) {
		t.Fatalf("another uid with an open socket got %q, want a forbidden error", out)
	}
}

func TestTwoServicesCannotShareAHome(t *testing.T) {
	t.Parallel()
	e := NewEnv(t)
	e.MustRun("daemon", "start")
	_, stderr, code := e.Run("daemon", "run")
	if code == 0 || !strings.Contains(stderr, "already running") {
		t.Fatalf("second service: exit %d %q; want a refusal", code, stderr)
	}
	// A crashed service leaves its socket behind: the next one recovers.
	killPID(t, e.DaemonPID(), syscall.SIGKILL)
	time.Sleep(100 * time.Millisecond)
	if _, err := os.Stat(filepath.Join(e.Home, "agentctl.sock")); err != nil {
		t.Skip("socket was removed; nothing stale to recover from")
	}
	e.MustRun("daemon", "start")
}

func TestConcurrentAutostart(t *testing.T) {
	t.Parallel()
	e := NewEnv(t)
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if out, stderr, code := e.Run("list"); code != 0 {
				errs <- out + stderr
			}
		}()
	}
	wg.Wait()
	close(errs)
	for msg := range errs {
		t.Errorf("a concurrent first command failed: %s", msg)
	}
}

func TestPrune(t *testing.T) {
	t.Parallel()
	e := NewEnv(t)
	done := e.Start("--", "true")
	running := e.Start("--", "sleep", "30")
	e.WaitStatus(done.ID, api.StatusExited, 10*time.Second)
	e.MustRun("prune")
	if _, err := os.Stat(e.SessionDir(done.ID)); !os.IsNotExist(err) {
		t.Error("prune left an ended session's folder")
	}
	if _, err := os.Stat(e.SessionDir(running.ID)); err != nil {
		t.Error("prune removed a running session")
	}
}

func TestSendAndEnvAndCwd(t *testing.T) {
	t.Parallel()
	e := NewEnv(t)
	dir := t.TempDir()
	s := e.Start("--cwd", dir, "--env", "GREETING=hi there", "--", "sh", "-c", `pwd; echo "$GREETING"; read line; echo "got:$line"`)
	e.MustRun("send", s.ID, "typed input")
	final := e.WaitStatus(s.ID, api.StatusExited, 10*time.Second)
	out := e.MustRun("logs", "-n", "0", final.ID)
	for _, want := range []string{dir, "hi there", "got:typed input"} {
		if !strings.Contains(out, want) {
			t.Errorf("output %q lacks %q", out, want)
		}
	}
}

// A service auto-started from inside a session descends from that session's
// monitor (a subreaper), yet must survive the session's end, and so must the
// sessions it started.
func TestServiceStartedInsideASessionSurvivesIt(t *testing.T) {
	t.Parallel()
	e := NewEnv(t)
	// The session waits for the service to go, then starts a new one (by
	// running agentctl) and a session through it, then ends.
	script := `while [ -S "$AGENTCTL_HOME/agentctl.sock" ]; do sleep 0.05; done; ` +
		e.Bin + ` daemon start >/dev/null; ` + e.Bin + ` run -- sleep 60 > "$AGENTCTL_HOME/inner.id"; echo done`
	outer := e.Start("--", "sh", "-c", script)
	e.MustRun("daemon", "stop")
	idFile := filepath.Join(e.Home, "inner.id")
	WaitFor(t, 30*time.Second, "the session to start a service and a session", func() bool {
		b, _ := os.ReadFile(idFile)
		return len(bytes.TrimSpace(b)) > 0
	})
	WaitFor(t, 30*time.Second, "the outer session to end", func() bool {
		return e.Session(outer.ID).Status.Ended()
	})
	time.Sleep(3 * time.Second) // longer than the leftover grace
	b, _ := os.ReadFile(idFile)
	inner := e.Session(strings.TrimSpace(string(b)))
	if inner.Status != api.StatusRunning || !alive(inner.PID) {
		t.Fatalf("the session started by the inner service is %s: ending the outer session killed it", inner.Status)
	}
}

// The session's PWD is its own cwd, not the caller's: some agents work in
// $PWD rather than in their real working directory.
func TestPWDFollowsCwd(t *testing.T) {
	t.Parallel()
	e := NewEnv(t)
	dir := t.TempDir()
	e.Setenv("PWD", "/somewhere/else")
	s := e.Start("--cwd", dir, "--", "env")
	e.WaitStatus(s.ID, api.StatusExited, 10*time.Second)
	if out := e.MustRun("logs", "-n", "0", s.ID); !strings.Contains("\n"+out+"\n", "\nPWD="+dir+"\n") {
		t.Errorf("environment %q lacks PWD=%s", out, dir)
	}
}
