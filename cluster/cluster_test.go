package cluster

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/internal/k8stest"
)

// The tests below run against a real cluster: the one scripts/k8s-e2e.sh
// starts with scripts/k8s-harness.sh (etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler, a kubelet over containerd), whose
// state folder it names in AGENTCTL_TEST_K8S.

func TestMain(m *testing.M) {
	QuietClientLogs()
	os.Exit(m.Run())
}

func testHarness(t *testing.T) k8stest.Harness {
	t.Helper()
	dir := os.Getenv(k8stest.DirEnv)
	if dir == "" {
		t.Skip("SKIP: no test cluster (AGENTCTL_TEST_K8S unset): scripts/k8s-e2e.sh starts one and runs these tests (needs root)")
	}
	h, err := k8stest.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// testCluster is a Cluster in a namespace of its own, removed at the end.
func testCluster(t *testing.T) (*Cluster, k8stest.Harness) {
	t.Helper()
	h := testHarness(t)
	h.NeedSchedulable(t)
	admin, err := New(Config{Kubeconfig: h.Kubeconfig})
	if err != nil {
		t.Fatal(err)
	}
	ns := strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	ns = "t-" + ns[:min(len(ns), 40)] + fmt.Sprintf("-%d", time.Now().UnixNano()%100000)
	ctx := context.Background()
	if _, err := admin.core.Namespaces().Create(ctx, namespace(ns), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		admin.core.Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
	})
	// Pods wait for their namespace's default service account.
	deadline := time.Now().Add(time.Minute)
	for {
		if _, err := admin.core.ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{}); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("namespace %s has no default service account", ns)
		}
		time.Sleep(200 * time.Millisecond)
	}
	c, err := New(Config{Kubeconfig: h.Kubeconfig, Namespace: ns, Image: h.Image, PullPolicy: "Never"})
	if err != nil {
		t.Fatal(err)
	}
	return c, h
}

func launch(t *testing.T, c *Cluster, req api.RunRequest) api.Session {
	t.Helper()
	if req.Cwd == "" {
		req.Cwd = "/work"
	}
	s, err := c.Launch(context.Background(), req)
	if err != nil {
		t.Fatalf("launch %q: %v", req.Command, err)
	}
	return s
}

// follow reads the session's log to its end: the lines, and the final
// session.
func follow(t *testing.T, c *Cluster, id string) ([]string, api.Session) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var lines []string
	var end *api.Session
	err := c.Logs(ctx, id, api.LogOptions{Follow: true}, func(ch api.LogChunk) error {
		if ch.Text != "" {
			lines = append(lines, strings.Split(ch.Text, "\n")...)
		}
		if ch.End {
			end = ch.Session
		}
		return nil
	})
	if err != nil {
		t.Fatalf("logs -f %s: %v", id, err)
	}
	if end == nil {
		t.Fatalf("logs -f %s ended without the final session; lines %q", id, lines)
	}
	return lines, *end
}

func wantExited(t *testing.T, s api.Session, code int) {
	t.Helper()
	if s.Status != api.StatusExited || s.ExitCode == nil || *s.ExitCode != code {
		t.Fatalf("session %s: status %s, exit %v, warnings %q; want exited(%d)", s.ID, s.Status, s.ExitCode, s.Warnings, code)
	}
}

func TestRunListLogsExit(t *testing.T) {
	c, _ := testCluster(t)
	s := launch(t, c, api.RunRequest{
		Command: []string{"sh", "-c", "echo first line; sleep 3; echo second line; exit 3"},
		Name:    "three", Group: "g1",
	})
	if s.Status != api.StatusRunning {
		t.Fatalf("launched session is %s (%q), want running", s.Status, s.Warnings)
	}
	list, err := c.List(context.Background(), api.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Sessions) != 1 || list.Sessions[0].ID != s.ID || list.Sessions[0].Status != api.StatusRunning ||
		list.Sessions[0].Name != "three" || list.Sessions[0].Group != "g1" {
		t.Fatalf("list: %+v, want %s running, named three in g1", list.Sessions, s.ID)
	}
	lines, end := follow(t, c, s.ID[:8])
	if strings.Join(lines, "|") != "first line|second line" {
		t.Fatalf("logs -f: %q, want the two lines once each", lines)
	}
	wantExited(t, end, 3)
	got, err := c.Get(context.Background(), s.ID)
	if err != nil {
		t.Fatal(err)
	}
	wantExited(t, got, 3)
	// Ended sessions are listed with -a only.
	if list, _ := c.List(context.Background(), api.ListOptions{}); len(list.Sessions) != 0 {
		t.Fatalf("list without -a shows ended sessions: %+v", list.Sessions)
	}
	if list, _ := c.List(context.Background(), api.ListOptions{All: true}); len(list.Sessions) != 1 {
		t.Fatalf("list -a: %+v", list.Sessions)
	}
	// The prompt and the environment stay out of the Job's spec.
	job, _, err := c.state(context.Background(), s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if spec := fmt.Sprintf("%+v", job.Spec); strings.Contains(spec, "AGENTCTL_SESSION") {
		t.Fatalf("the Job's spec carries the environment: %s", spec)
	}
}

// An agent that leaves a process behind still ends its session: the
// monitor, the container's PID 1, ends the orphans and reports the exit.
func TestOrphansDoNotHoldThePod(t *testing.T) {
	c, _ := testCluster(t)
	s := launch(t, c, api.RunRequest{Command: []string{"sh", "-c", "sleep 1000 & echo started; exit 4"}})
	_, end := follow(t, c, s.ID)
	wantExited(t, end, 4)
}

func TestStopMidRun(t *testing.T) {
	c, _ := testCluster(t)
	s := launch(t, c, api.RunRequest{Command: []string{"sh", "-c", "echo up; exec sleep 1000"}})
	got, err := c.Stop(context.Background(), s.ID, api.StopRequest{Timeout: "2s"})
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != api.StatusKilled {
		t.Fatalf("after stop: %s (%q), want killed", got.Status, got.Warnings)
	}
	pods, err := c.core.Pods(c.namespace).List(context.Background(), metav1.ListOptions{LabelSelector: labelID + "=" + s.ID})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 0 {
		t.Fatalf("after stop the pod is still there: %s (%s)", pods.Items[0].Name, pods.Items[0].Status.Phase)
	}
	again, err := c.Get(context.Background(), s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if again.Status != api.StatusKilled {
		t.Fatalf("listed after stop: %s (%q), want killed", again.Status, again.Warnings)
	}
	if _, err := c.Stop(context.Background(), s.ID, api.StopRequest{}); api.CodeOf(err) != api.CodeNotRunning {
		t.Fatalf("second stop: %v, want not running", err)
	}
}

func TestInputThroughAttach(t *testing.T) {
	c, _ := testCluster(t)
	s := launch(t, c, api.RunRequest{Command: []string{"sh", "-c", "read answer; echo got:$answer; exit 0"}})
	if _, err := c.Input(context.Background(), s.ID, []byte("yes\n")); err != nil {
		t.Fatal(err)
	}
	lines, end := follow(t, c, s.ID)
	wantExited(t, end, 0)
	if !strings.Contains(strings.Join(lines, "\n"), "got:yes") {
		t.Fatalf("output %q, want got:yes", lines)
	}
}

func TestLockLeaseBlocksSecondLaunch(t *testing.T) {
	c, _ := testCluster(t)
	first := launch(t, c, api.RunRequest{Command: []string{"sh", "-c", "sleep 4; exit 0"}, Cwd: "/srv/repo", Lock: true})
	_, err := c.Launch(context.Background(), api.RunRequest{Command: []string{"true"}, Cwd: "/srv/repo", Lock: true})
	if api.CodeOf(err) != api.CodeLocked || !strings.Contains(err.Error(), first.ID) {
		t.Fatalf("second launch into a locked directory: %v, want locked by %s", err, first.ID)
	}
	// Another directory is free.
	other := launch(t, c, api.RunRequest{Command: []string{"true"}, Cwd: "/srv/other", Lock: true})
	follow(t, c, other.ID)
	// Once the first ends, the directory is free again: nobody released
	// the Lease, its holder's pod ended.
	_, end := follow(t, c, first.ID)
	wantExited(t, end, 0)
	third := launch(t, c, api.RunRequest{Command: []string{"true"}, Cwd: "/srv/repo", Lock: true})
	_, end = follow(t, c, third.ID)
	wantExited(t, end, 0)
}

func TestImageNotPresent(t *testing.T) {
	c, _ := testCluster(t)
	c.cfg.Image = "agentctl.test/absent:1"
	_, err := c.Launch(context.Background(), api.RunRequest{Command: []string{"true"}, Cwd: "/work"})
	if api.CodeOf(err) != api.CodeSpawnFailed || !strings.Contains(err.Error(), "agentctl.test/absent:1 is not on node") {
		t.Fatalf("launch with an absent image: %v", err)
	}
	if strings.Contains(err.Error(), "\n") {
		t.Fatalf("the message is not one line: %q", err)
	}
	t.Log(err)
	// Nothing is left of the failed launch.
	list, err := c.List(context.Background(), api.ListOptions{All: true})
	if err != nil || len(list.Sessions) != 0 {
		t.Fatalf("after a failed launch: %+v, %v", list.Sessions, err)
	}
}

// A session's own image (--image) wins over the host's default.
func TestImageNamedPerSession(t *testing.T) {
	c, _ := testCluster(t)
	image := c.cfg.Image
	c.cfg.Image = "agentctl.test/absent:1"
	s := launch(t, c, api.RunRequest{Command: []string{"sh", "-c", "exit 4"}, Cwd: "/work", Image: image})
	_, end := follow(t, c, s.ID)
	wantExited(t, end, 4)
}

func TestTenAtOnce(t *testing.T) {
	c, _ := testCluster(t)
	ids := make([]string, 10)
	var wg sync.WaitGroup
	errs := make(chan error, 10)
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := c.Launch(context.Background(), api.RunRequest{
				Command: []string{"sh", "-c", fmt.Sprintf("sleep 2; exit %d", 10+i)}, Cwd: "/work",
			})
			if err != nil {
				errs <- err
				return
			}
			ids[i] = s.ID
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	list, err := c.List(context.Background(), api.ListOptions{All: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Sessions) != 10 {
		t.Fatalf("listed %d sessions, want 10", len(list.Sessions))
	}
	for i, id := range ids {
		_, end := follow(t, c, id)
		wantExited(t, end, 10+i)
	}
}

// An API server that stops answering makes the cluster's sessions unknown,
// with a warning naming the cluster: never stopped.
func TestAPIServerGone(t *testing.T) {
	c, h := testCluster(t)
	s := launch(t, c, api.RunRequest{Command: []string{"sleep", "1000"}})
	// The same cluster through a proxy this test can take away.
	proxy := newProxy(t, strings.TrimPrefix(c.rest.Host, "https://"))
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	b, _ := os.ReadFile(h.Kubeconfig)
	os.WriteFile(kc, []byte(strings.ReplaceAll(string(b), c.rest.Host, "https://"+proxy.addr())), 0o600)
	via, err := New(Config{Kubeconfig: kc, Namespace: c.namespace, Image: c.cfg.Image})
	if err != nil {
		t.Fatal(err)
	}
	list, err := via.List(context.Background(), api.ListOptions{})
	if err != nil || len(list.Sessions) != 1 || list.Sessions[0].Status != api.StatusRunning {
		t.Fatalf("list through the proxy: %+v, %v", list, err)
	}
	proxy.close()
	list, err = via.List(context.Background(), api.ListOptions{})
	if err != nil {
		t.Fatalf("list with the API server gone fails: %v; want sessions unknown and a warning", err)
	}
	if len(list.Sessions) != 1 || list.Sessions[0].Status != api.StatusUnknown {
		t.Fatalf("with the API server gone: %+v, want %s unknown", list.Sessions, s.ID)
	}
	if len(list.Warnings) != 1 || !strings.Contains(list.Warnings[0], via.Name()) || strings.Contains(list.Warnings[0], "\n") {
		t.Fatalf("warnings %q: want one line naming cluster %s", list.Warnings, via.Name())
	}
	// It still runs.
	if got, err := c.Get(context.Background(), s.ID); err != nil || got.Status != api.StatusRunning {
		t.Fatalf("directly: %+v, %v", got, err)
	}
	if _, err := c.Stop(context.Background(), s.ID, api.StopRequest{Force: true}); err != nil {
		t.Fatal(err)
	}
}

func TestForbidden(t *testing.T) {
	h := testHarness(t)
	c, err := New(Config{Kubeconfig: h.NobodyKubeconfig, Image: h.Image})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.List(context.Background(), api.ListOptions{})
	if api.CodeOf(err) != api.CodeForbidden || !strings.Contains(err.Error(), "RBAC") || !strings.Contains(err.Error(), "docs/kubernetes.md") {
		t.Fatalf("list without rights: %v", err)
	}
	t.Log(err)
}

// Configuration mistakes are found before any request, without a cluster.
func TestKubeconfigErrors(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	os.WriteFile(empty, nil, 0o600)
	one := filepath.Join(dir, "one")
	os.WriteFile(one, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {}}]
contexts: [{name: prod, context: {cluster: c, user: u}}]
current-context: prod
`), 0o600)
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"no kubeconfig", Config{Kubeconfig: empty}, "set KUBECONFIG"},
		{"missing file", Config{Kubeconfig: filepath.Join(dir, "absent")}, "point KUBECONFIG at a good one"},
		{"wrong context", Config{Kubeconfig: one, Context: "staging"}, `no context "staging": use one of prod`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("New: %v, want one line with %q", err, tc.want)
			}
		})
	}
	c, err := New(Config{Kubeconfig: one})
	if err != nil {
		t.Fatal(err)
	}
	if c.Name() != "prod/default" {
		t.Fatalf("name %q", c.Name())
	}
}

// proxy forwards TCP connections to target until closed, then refuses.
type tcpProxy struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

func newProxy(t *testing.T, target string) *tcpProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &tcpProxy{ln: ln}
	t.Cleanup(p.close)
	go func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", target)
			if err != nil {
				in.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, in, out)
			p.mu.Unlock()
			go func() { io.Copy(out, bufio.NewReader(in)); out.Close() }()
			go func() { io.Copy(in, out); in.Close() }()
		}
	}()
	return p
}

func (p *tcpProxy) addr() string { return p.ln.Addr().String() }

func (p *tcpProxy) close() {
	p.ln.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

func namespace(name string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

func TestOverQuota(t *testing.T) {
	c, _ := testCluster(t)
	ctx := context.Background()
	quota := &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "no-jobs"},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"count/jobs.batch": resource.MustParse("0")}},
	}
	if _, err := c.core.ResourceQuotas(c.namespace).Create(ctx, quota, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The quota counts once its controller has seen it.
	deadline := time.Now().Add(time.Minute)
	for {
		q, err := c.core.ResourceQuotas(c.namespace).Get(ctx, "no-jobs", metav1.GetOptions{})
		if err == nil && len(q.Status.Hard) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the quota has no status")
		}
		time.Sleep(200 * time.Millisecond)
	}
	_, err := c.Launch(ctx, api.RunRequest{Command: []string{"true"}, Cwd: "/work"})
	if api.CodeOf(err) != api.CodeSpawnFailed || !strings.Contains(err.Error(), "quota") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("launch over quota: %v (code %s)", err, api.CodeOf(err))
	}
	t.Log(err)
}

// A pod no node can take (here: its volume's claim does not exist) fails
// the launch at once, with the scheduler's reason.
func TestUnschedulable(t *testing.T) {
	c, _ := testCluster(t)
	c.cfg.Volume = "pvc:absent"
	_, err := c.Launch(context.Background(), api.RunRequest{Command: []string{"true"}, Cwd: "/work"})
	if api.CodeOf(err) != api.CodeSpawnFailed || !strings.Contains(err.Error(), `"absent" not found`) || strings.Contains(err.Error(), "\n") {
		t.Fatalf("launch with an absent claim: %v (code %s)", err, api.CodeOf(err))
	}
	t.Log(err)
}
