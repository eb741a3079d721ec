// Package k8stest reads the test cluster scripts/k8s-harness.sh starts: its
// state folder's env file, for the cluster tests, the end-to-end tests and
// the bench.
package k8stest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
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
