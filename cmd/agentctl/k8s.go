package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
)

// clusterBinary is the agentctl that reaches Kubernetes clusters: the same
// commands built with the k8s tag, which links client-go. It is a binary
// of its own because client-go's package initialisation costs every
// command ~10 ms and doubles the binary; the agentctl that does not link
// it runs this one, with the same arguments, when a command names a
// cluster.
const clusterBinary = "agentctl-k8s"

// clusterHostError says a command named a cluster host in an agentctl that
// does not link client-go: main runs clusterBinary in its place.
type clusterHostError struct{ host string }

func (e clusterHostError) Error() string {
	return fmt.Sprintf("host %s is a Kubernetes cluster, which this agentctl reaches through %s", e.host, clusterBinary)
}

// execCluster replaces this process with clusterBinary given the same
// arguments (and the same environment, terminal and pid): found beside
// this agentctl, else on PATH. It returns only when it cannot.
func execCluster(args []string, cause clusterHostError) error {
	var bin string
	if exe, err := os.Executable(); err == nil {
		if p := filepath.Join(filepath.Dir(exe), clusterBinary); fileExecutable(p) {
			bin = p
		}
	}
	if bin == "" {
		p, err := exec.LookPath(clusterBinary)
		if err != nil {
			return fmt.Errorf("%w: it is neither beside agentctl nor on PATH; install it (make build puts it in bin/)", cause)
		}
		bin = p
	}
	err := syscall.Exec(bin, append([]string{bin}, args...), os.Environ())
	return fmt.Errorf("%w: run %s: %w", cause, bin, err)
}

func fileExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}

// isClusterHost reports whether err asks for clusterBinary.
func isClusterHost(err error) (clusterHostError, bool) {
	var e clusterHostError
	ok := errors.As(err, &e)
	return e, ok
}
