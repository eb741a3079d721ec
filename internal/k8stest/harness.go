// Package k8stest reads the test cluster scripts/k8s-harness.sh starts: its
// state folder's env file, for the cluster tests, the end-to-end tests and
// the bench.
package k8stest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// DirEnv names the environment variable that holds a running test
// cluster's state folder (scripts/k8s-e2e.sh sets it).
const DirEnv = "AGENTCTL_TEST_K8S"

// Harness is what the harness wrote of a running test cluster.
type Harness struct {
	// Dir is its state folder.
	Dir string
	// Kubeconfig is the admin's kubeconfig; NobodyKubeconfig a user's
	// with no rights.
	Kubeconfig, NobodyKubeconfig string
	// Image is the test image the node has (busybox and agentctl).
	Image string
	// Bin holds the components and kubectl.
	Bin string
}

// Kubectl is the harness's kubectl.
func (h Harness) Kubectl() string { return filepath.Join(h.Bin, "kubectl") }

// Read reads the env file of the test cluster whose state folder is dir.
func Read(dir string) (Harness, error) {
	b, err := os.ReadFile(filepath.Join(dir, "env"))
	if err != nil {
		return Harness{}, fmt.Errorf("test cluster %s: %w", dir, err)
	}
	h := Harness{Dir: dir}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, _ := strings.Cut(line, "=")
		switch k {
		case "KUBECONFIG":
			h.Kubeconfig = v
		case "K8S_NOBODY_KUBECONFIG":
			h.NobodyKubeconfig = v
		case "K8S_IMAGE":
			h.Image = v
		case "K8S_BIN":
			h.Bin = v
		}
	}
	for k, v := range map[string]string{"KUBECONFIG": h.Kubeconfig, "K8S_IMAGE": h.Image, "K8S_BIN": h.Bin} {
		if v == "" {
			return Harness{}, fmt.Errorf("test cluster %s: no %s in its env file", dir, k)
		}
	}
	return h, nil
}

// nodeStates is the kubectl template WaitSchedulable reads: a line a node,
// "NAME READY-STATUS TAINTS" (TAINTS empty when it has none).
const nodeStates = `{range .items[*]}{.metadata.name}{" "}{.status.conditions[?(@.type=="Ready")].status}{" "}{.spec.taints}{"\n"}{end}`

// WaitSchedulable waits up to limit for every node of the cluster to be
// Ready and untainted, so that a test starts where the scheduler can place
// its pods: a node whose kubelet or container runtime falters for a moment
// is tainted until it recovers, and a launch then fails with the
// scheduler's "untolerated taint", a fact of the machine and not of the code
// under test. It returns what it saw when it had to wait (for the test's
// log), and an error naming the nodes' last state when the limit passed.
func (h Harness) WaitSchedulable(ctx context.Context, limit time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	var seen []string
	for {
		out, err := exec.CommandContext(ctx, h.Kubectl(), "--kubeconfig", h.Kubeconfig,
			"get", "nodes", "-o", "jsonpath="+nodeStates).Output()
		state := strings.TrimSpace(string(out))
		if err != nil {
			state = fmt.Sprintf("kubectl get nodes: %v", err)
		} else if schedulable(state) {
			return strings.Join(seen, "; "), nil
		}
		if len(seen) == 0 || seen[len(seen)-1] != state {
			seen = append(seen, state)
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("test cluster %s: no schedulable node after %v: %s", h.Dir, limit, strings.Join(seen, "; "))
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// test is what NeedSchedulable uses of a *testing.T (the bench links this
// package, and not the testing package).
type test interface {
	Helper()
	Fatal(args ...any)
	Logf(format string, args ...any)
}

// NeedSchedulable holds a test until the cluster's nodes can take its pods
// (WaitSchedulable, up to 2 minutes), logging what they were like if it
// waited, and fails it if they never could.
func (h Harness) NeedSchedulable(t test) {
	t.Helper()
	seen, err := h.WaitSchedulable(context.Background(), 2*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if seen != "" {
		t.Logf("waited for the node to take pods; it was: %s", seen)
	}
}

// schedulable says whether every line of a nodeStates answer is a Ready
// node without taints (and there is at least one).
func schedulable(states string) bool {
	lines := strings.Split(states, "\n")
	for _, line := range lines {
		f := strings.Fields(line)
		if len(f) != 2 || f[1] != "True" {
			return false
		}
	}
	return states != ""
}
