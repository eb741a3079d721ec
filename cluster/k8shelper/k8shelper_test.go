package k8shelper

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/internal/k8stest"
)

// agentctl must not link client-go: its start-up would cost every
// command (measured: +4.5 ms of package initialisation, twice the binary).
func TestAgentctlDoesNotLinkClientGo(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/agentctl/agentctl/cmd/agentctl").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if strings.HasPrefix(pkg, "k8s.io/") || pkg == "github.com/agentctl/agentctl/cluster" {
			t.Fatalf("agentctl links %s: reach clusters through the agentctl-k8s helper (this package)", pkg)
		}
	}
}

// helper builds agentctl-k8s.
func helper(t *testing.T) string {
	t.Helper()
	exe := filepath.Join(t.TempDir(), "agentctl-k8s")
	if out, err := exec.Command("go", "build", "-o", exe, "github.com/agentctl/agentctl/cmd/agentctl-k8s").CombinedOutput(); err != nil {
		t.Fatalf("build agentctl-k8s: %v\n%s", err, out)
	}
	return exe
}

func TestHelperErrorsAreOneLine(t *testing.T) {
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	os.WriteFile(kc, []byte("apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: \"https://127.0.0.1:1\"}}]\nusers: [{name: u, user: {}}]\ncontexts: [{name: prod, context: {cluster: c, user: u}}]\ncurrent-context: prod\n"), 0o600)
	exe := helper(t)
	s := New(exe, Target{Kubeconfig: kc, Context: "staging"})
	_, err := s.List(context.Background(), api.ListOptions{})
	if api.CodeOf(err) != api.CodeInvalid || !strings.Contains(err.Error(), `no context "staging": use one of prod`) {
		t.Fatalf("list with a wrong context: %v (code %s)", err, api.CodeOf(err))
	}
	// An API server that does not answer, with no answer before it (the
	// helper is a process per call): one line naming the cluster; the CLI
	// then shows what it saw last as unknown.
	s = New(exe, Target{Kubeconfig: kc})
	list, err := s.List(context.Background(), api.ListOptions{})
	if err == nil || !strings.Contains(err.Error(), "prod/default") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("list with the API server gone: %+v, %v; want one line naming prod/default", list, err)
	}
}

// Against the test cluster (scripts/k8s-e2e.sh): a plain command through
// the helper, followed to its end.
func TestHelperRunLogsExit(t *testing.T) {
	dir := os.Getenv(k8stest.DirEnv)
	if dir == "" {
		t.Skip("SKIP: no test cluster (AGENTCTL_TEST_K8S unset): scripts/k8s-e2e.sh starts one and runs these tests (needs root)")
	}
	h, err := k8stest.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	h.NeedSchedulable(t)
	ctx := context.Background()
	s := New(helper(t), Target{Kubeconfig: h.Kubeconfig, Image: h.Image, PullPolicy: "Never"})
	sess, err := s.Launch(ctx, api.RunRequest{Command: []string{"sh", "-c", "echo via helper; exit 3"}, Cwd: "/work"})
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	var end *api.Session
	err = s.Logs(ctx, sess.ID, api.LogOptions{Follow: true}, func(ch api.LogChunk) error {
		if ch.Text != "" {
			lines = append(lines, ch.Text)
		}
		if ch.End {
			end = ch.Session
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(lines, "|") != "via helper" || end == nil || end.Status != api.StatusExited || end.ExitCode == nil || *end.ExitCode != 3 {
		t.Fatalf("logs -f: %q, end %+v; want the line and exited(3)", lines, end)
	}
	got, err := s.Get(ctx, sess.ID[:6])
	if err != nil || got.ID != sess.ID || got.Status != api.StatusExited {
		t.Fatalf("get: %+v, %v", got, err)
	}
	if _, err := s.Stop(ctx, sess.ID, api.StopRequest{}); api.CodeOf(err) != api.CodeNotRunning {
		t.Fatalf("stop of an ended session: %v, want not running", err)
	}
}
