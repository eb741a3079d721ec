//go:build !k8s

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/hosts"
)

// In an agentctl without client-go, every way of naming a cluster hands
// the command over to agentctl-k8s before anything is done, and a cluster
// URL with a mistake in it is told at once, without it.
func TestThinHandsClustersOver(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("AGENTCTL_HOME", dir)
	t.Setenv(hostEnv, "")
	write := func(cfg string) {
		if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"hosts": {"cl": "k8s://ctx/ns?image=agent:1"}}`)
	local, err := localHost()
	if err != nil {
		t.Fatal(err)
	}
	for name, open := range map[string]func() error{
		"a handle":      func() error { _, _, err := hostFor("cl/01abc"); return err },
		"among handles": func() error { _, err := routeHandles(local, []string{"01x", "local/01y", "cl/01z"}); return err },
		"--hosts all":   func() error { _, _, err := targetHosts(hosts.All); return err },
		"-H cl": func() error {
			t.Setenv(hostEnv, "cl")
			defer t.Setenv(hostEnv, "")
			_, err := defaultHost()
			return err
		},
		"-H k8s://URL": func() error {
			t.Setenv(hostEnv, "k8s://other/ns")
			defer t.Setenv(hostEnv, "")
			_, err := defaultHost()
			return err
		},
		"--hosts cl,all": func() error { _, _, err := targetHosts("local,cl"); return err },
	} {
		err := open()
		cause, ok := isClusterHost(err)
		if !ok {
			t.Errorf("%s: %v, want the command handed to %s", name, err, clusterBinary)
			continue
		}
		if want := map[string]string{"-H k8s://URL": "other"}[name]; want != "" && cause.host != want || want == "" && cause.host != "cl" {
			t.Errorf("%s: hands over for host %q", name, cause.host)
		}
	}
	write(`{"hosts": {"bad": "k8s://ctx/ns?pull=Sometimes"}}`)
	_, _, err = hostFor("bad/01abc")
	if _, handed := isClusterHost(err); handed || err == nil || !strings.Contains(err.Error(), "pull=") {
		t.Errorf("a cluster URL with a mistake: %v, want it told here", err)
	}
}
