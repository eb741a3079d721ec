package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/internal/k8stest"
)

// testCluster is the test cluster scripts/k8s-harness.sh started, whose
// state folder AGENTCTL_TEST_K8S names, and a namespace of the test's own
// there.
type testCluster struct {
	dir, kubeconfig, image, kubectl, ns string
}

// newTestCluster skips the test unless a test cluster runs
// (scripts/k8s-e2e.sh starts one, runs these tests and tears it down), and
// makes a namespace for the test, removed at its end.
func newTestCluster(t *testing.T) *testCluster {
	t.Helper()
	dir := os.Getenv(k8stest.DirEnv)
	if dir == "" {
		t.Skip("SKIPPED: no test cluster (AGENTCTL_TEST_K8S unset): scripts/k8s-e2e.sh starts one and runs these tests (needs root)")
	}
	h, err := k8stest.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	h.NeedSchedulable(t)
	c := &testCluster{dir: dir, kubeconfig: h.Kubeconfig, image: h.Image, kubectl: h.Kubectl()}
	c.ns = fmt.Sprintf("e2e-%d", time.Now().UnixNano()%1000000)
	c.kube(t, "create", "namespace", c.ns)
	t.Cleanup(func() { c.kubeRun("delete", "namespace", c.ns, "--wait=false") })
	// Pods wait for their namespace's default service account.
	WaitFor(t, time.Minute, "the namespace's service account", func() bool {
		_, err := c.kubeRun("-n", c.ns, "get", "serviceaccount", "default")
		return err == nil
	})
	buildClusterBinary(t)
	return c
}

// kubeRun runs kubectl and returns its standard output; its standard
// error is in the error.
func (c *testCluster) kubeRun(args ...string) (string, error) {
	cmd := exec.Command(c.kubectl, append([]string{"--kubeconfig", c.kubeconfig}, args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		err = fmt.Errorf("%w: %s", err, stderr.String())
	}
	return string(out), err
}

func (c *testCluster) kube(t *testing.T, args ...string) string {
	t.Helper()
	out, err := c.kubeRun(args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return out
}

// url is the cluster's namespace as a host: the harness's kubeconfig (its
// current context), the test image, never pulled.
func (c *testCluster) url() string {
	return "k8s:///" + c.ns + "?image=" + c.image + "&pull=Never"
}

// use makes e reach the cluster as host cl.
func (c *testCluster) use(e *Env) {
	e.Setenv("KUBECONFIG", c.kubeconfig)
	e.MustRun("host", "add", "cl", c.url())
}

// apiServer is the pid of the harness's kube-apiserver.
func (c *testCluster) apiServer(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(c.dir, "pids"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if name, pid, _ := strings.Cut(line, " "); name == "kube-apiserver" {
			n, err := strconv.Atoi(pid)
			if err == nil {
				return n
			}
		}
	}
	t.Fatalf("no kube-apiserver in %s/pids", c.dir)
	return 0
}

var clusterBinaryOnce struct {
	sync.Once
	err error
}

// buildClusterBinary builds agentctl-k8s, the helper that reaches
// clusters, beside the tests' agentctl.
func buildClusterBinary(t *testing.T) {
	t.Helper()
	clusterBinaryOnce.Do(func() {
		args := []string{"build", "-o", filepath.Join(filepath.Dir(agentctlBin), "agentctl-k8s")}
		if raceBuild {
			args = append(args, "-race")
		}
		out, err := exec.Command("go", append(args, "../cmd/agentctl-k8s")...).CombinedOutput()
		if err != nil {
			clusterBinaryOnce.err = fmt.Errorf("build agentctl-k8s: %v: %s", err, out)
		}
	})
	if clusterBinaryOnce.err != nil {
		t.Fatal(clusterBinaryOnce.err)
	}
}

// A Kubernetes cluster is one more host of the CLI: run, list across
// hosts, logs -f, run --wait, events, attach through a terminal, stop, and
// a warning naming it when its API server stops answering, with this
// machine's sessions still listed.
func TestClusterAsHost(t *testing.T) {
	c := newTestCluster(t)
	e := NewEnv(t)
	c.use(e)

	// A plain command as a Job: it says its first line, waits for a line
	// typed into its terminal (send), then exits 3.
	var job api.Session
	e.JSON(&job, "run", "--json", "-H", "cl", "--cwd", "/work", "--name", "on-cl", "--",
		"sh", "-c", "echo line-1; read x; echo line-2-$x; echo line-3; exit 3")
	local := e.Start("--name", "on-local", "--", "sleep", "300")

	// Listed with the local session, the cluster as its host.
	var all api.SessionList
	e.JSON(&all, "list", "--json", "--hosts", "all")
	hostOf := map[string]api.Session{}
	for _, s := range all.Sessions {
		hostOf[s.ID] = s
	}
	if s := hostOf[job.ID]; s.Host != "cl" || s.Status != api.StatusRunning || s.Handle != "cl/"+job.ID {
		t.Fatalf("list --hosts all: the Job's session is %+v, want running on host cl as cl/%s", s, job.ID)
	}
	if s := hostOf[local.ID]; s.Host != "local" {
		t.Fatalf("list --hosts all: the local session is %+v", s)
	}
	table := e.MustRun("list", "--hosts", "all")
	for _, want := range []string{"HOST", "cl/" + job.ID[:4], "local/" + local.ID[:4]} {
		if !strings.Contains(table, want) {
			t.Fatalf("list --hosts all lacks %q:\n%s", want, table)
		}
	}

	// logs -f follows it to its end through the API's log stream, while
	// send lets it go on.
	follow := e.Command("logs", "-f", "-n", "0", "cl/"+job.ID)
	var followed strings.Builder
	follow.Stdout = &followed
	if err := follow.Start(); err != nil {
		t.Fatal(err)
	}
	e.MustRun("send", "cl/"+job.ID, "go")
	if err := follow.Wait(); err != nil {
		t.Fatalf("logs -f: %v", err)
	}
	if out := followed.String(); !strings.Contains(out, "line-1\n") || !strings.Contains(out, "line-2-go\nline-3") || strings.Count(out, "line-1") != 1 {
		t.Fatalf("logs -f: %q, want each line once, in order, the typed word in the second", out)
	}
	if s := e.Session("cl/" + job.ID); s.Status != api.StatusExited || s.ExitCode == nil || *s.ExitCode != 3 {
		t.Fatalf("after its end: %+v, want exited(3)", s)
	}
	if table := e.MustRun("list", "-a", "--hosts", "all"); !strings.Contains(table, "exited(3)") {
		t.Fatalf("list -a --hosts all: no exited(3):\n%s", table)
	}

	// run --wait streams its output and exits with its code.
	stdout, stderr, code := e.Run("run", "--wait", "-H", "cl", "--cwd", "/work", "--", "sh", "-c", "echo waited; exit 5")
	if code != 5 || !strings.Contains(stdout, "waited") {
		t.Fatalf("run --wait on the cluster: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}

	// events: the cluster's stream, each event naming its host. It starts
	// from now: sessions are started until one's start is seen (the
	// stream is open), then a waiting one is let go and its end seen.
	var short api.Session
	e.JSON(&short, "run", "--json", "-H", "cl", "--cwd", "/work", "--", "sh", "-c", "read x; exit 4")
	ev := e.Command("events", "--hosts", "cl", "--type", "session.*")
	evOut, err := ev.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := ev.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ev.Process.Kill(); ev.Wait() })
	events := make(chan api.Event, 100)
	go func() {
		defer close(events)
		sc := bufio.NewScanner(evOut)
		for sc.Scan() {
			var got api.Event
			if json.Unmarshal(sc.Bytes(), &got) == nil {
				events <- got
			}
		}
	}()
	next := func(timeout time.Duration) (api.Event, bool) {
		select {
		case got, ok := <-events:
			return got, ok
		case <-time.After(timeout):
			return api.Event{}, false
		}
	}
	open := false
	for attempt := 0; attempt < 10 && !open; attempt++ {
		var canary api.Session
		e.JSON(&canary, "run", "--json", "-H", "cl", "--cwd", "/work", "--", "sleep", "300")
		for !open {
			got, ok := next(15 * time.Second)
			if !ok {
				break
			}
			open = got.Type == api.EventSessionStarted && got.Session != nil && got.Session.ID == canary.ID
			if open && (got.Host != "cl" || got.Session.Handle != "cl/"+canary.ID) {
				t.Fatalf("events: %+v: want host cl, handle cl/%s", got, canary.ID)
			}
		}
	}
	if !open {
		t.Fatal("events --hosts cl: no session's start seen")
	}
	e.MustRun("send", "cl/"+short.ID, "go")
	var ended *api.Event
	for ended == nil {
		got, ok := next(time.Minute)
		if !ok {
			t.Fatalf("events --hosts cl: no %s for %s", api.EventSessionStopped, short.ID)
		}
		if got.Type == api.EventSessionStopped && got.Session != nil && got.Session.ID == short.ID {
			ended = &got
		}
	}
	if ended.Host != "cl" || ended.Session.Status != api.StatusExited || ended.Session.ExitCode == nil || *ended.Session.ExitCode != 4 {
		t.Fatalf("events: the end of %s is %+v on %q, want exited(4) on cl", short.ID, ended.Session, ended.Host)
	}

	// attach through a real terminal: typed bytes reach the pod's terminal
	// and its output comes back; Ctrl-] detaches and the session goes on.
	var cat api.Session
	e.JSON(&cat, "run", "--json", "-H", "cl", "--cwd", "/work", "--", "cat")
	tm := newTmux(t, e, 100, 30)
	tm.text(e.Bin + " attach cl/" + cat.ID)
	tm.keys("Enter")
	tm.waitFor(20*time.Second, "attached to")
	tm.text("ping-the-pod")
	tm.keys("Enter")
	WaitFor(t, 15*time.Second, "the echo of what was typed", func() bool {
		return strings.Count(tm.screen(), "ping-the-pod") >= 2 // the terminal's echo, and cat's
	})
	tm.keys("C-]")
	tm.waitFor(10*time.Second, "detached from")
	if s := e.Session("cl/" + cat.ID); s.Status != api.StatusRunning {
		t.Fatalf("detaching stopped the session: %s", s.Status)
	}

	// stop mid-run: the pod is gone, the session killed.
	e.MustRun("stop", "--timeout", "1s", "cl/"+cat.ID)
	if pods := c.kube(t, "-n", c.ns, "get", "pods", "-l", "agentctl.dev/id="+cat.ID, "-o", "name"); strings.TrimSpace(pods) != "" {
		t.Fatalf("after stop, its pod is still there: %s", pods)
	}
	if s := e.Session("cl/" + cat.ID); s.Status != api.StatusKilled {
		t.Fatalf("after stop: %+v, want killed", s)
	}

	// The API server stops answering (stopped, then let go on): a warning
	// names the cluster, this machine's sessions are listed, and the
	// cluster's seen running before are unknown.
	var sleeper api.Session
	e.JSON(&sleeper, "run", "--json", "-H", "cl", "--cwd", "/work", "--", "sleep", "300")
	e.MustRun("list", "--hosts", "all") // the cluster's running sessions, seen
	apiserver := c.apiServer(t)
	if err := syscall.Kill(apiserver, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	resumed := false
	resume := func() {
		if !resumed {
			syscall.Kill(apiserver, syscall.SIGCONT)
			resumed = true
		}
	}
	t.Cleanup(resume)
	stdout, stderr, code = e.Run("list", "--json", "--hosts", "all")
	var down api.SessionList
	if code != 0 || json.Unmarshal([]byte(stdout), &down) != nil {
		t.Fatalf("list --hosts all with the API server stopped: exit %d: %s", code, stderr)
	}
	seen := map[string]api.Session{}
	for _, s := range down.Sessions {
		seen[s.ID] = s
	}
	if seen[local.ID].Status != api.StatusRunning {
		t.Fatalf("with the cluster down, the local session is not listed running: %+v", down)
	}
	if s := seen[sleeper.ID]; s.Status != api.StatusUnknown || s.Host != "cl" {
		t.Fatalf("with the cluster down, its session seen running is %+v, want unknown on cl", s)
	}
	if w := strings.Join(down.Warnings, "\n"); !strings.Contains(w, "host cl did not answer") {
		t.Fatalf("no warning names the cluster: %q", down.Warnings)
	}
	resume()
	WaitFor(t, time.Minute, "the API server to answer again", func() bool {
		_, _, code := e.Run("list", "-H", "cl")
		return code == 0
	})
	e.MustRun("stop", "--force", "cl/"+sleeper.ID)
}
