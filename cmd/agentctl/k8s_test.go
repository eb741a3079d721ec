package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/cluster/k8shelper"
	"github.com/agentctl/agentctl/home"
	"github.com/agentctl/agentctl/hosts"
)

// Every way of naming a cluster host reaches it through its helper, opened
// before the command acts; without the helper, it says so naming the host.
func TestClusterHostRouting(t *testing.T) {
	dir := t.TempDir()
	cli := newFakeCLI(t, home.Home(dir), nil).cli
	t.Setenv("PATH", t.TempDir()) // where the helper is looked for
	cfg := `{"hosts": {"cl": "k8s://ctx/ns?image=agent:1"}}`
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	local, err := cli.localHost()
	if err != nil {
		t.Fatal(err)
	}
	open := map[string]func() (hosts.Host, error){
		"a handle": func() (hosts.Host, error) {
			h, id, err := cli.hostFor("cl/01abc")
			if err == nil && id != "01abc" {
				t.Errorf("cl/01abc is %q on cl", id)
			}
			return h, err
		},
		"among handles": func() (hosts.Host, error) {
			r, err := cli.routeHandles(local, []string{"01x", "local/01y", "cl/01z"})
			if err == nil && (r["01x"].host.Name != hosts.Local || r["local/01y"].id != "01y") {
				t.Errorf("routes %+v", r)
			}
			return r["cl/01z"].host, err
		},
		"--hosts local,cl": func() (hosts.Host, error) {
			hs, several, err := cli.targetHosts("local,cl")
			if err != nil {
				return hosts.Host{}, err
			}
			if !several || len(hs) != 2 {
				t.Errorf("--hosts local,cl: %d hosts, several %v", len(hs), several)
			}
			return hs[1], nil
		},
		"-H cl": func() (hosts.Host, error) {
			cli.setenv(hostEnv, "cl")
			defer cli.setenv(hostEnv, "")
			return cli.defaultHost()
		},
	}
	for name, o := range open {
		h, err := o()
		if err == nil {
			_, err = h.API.Get(context.Background(), "01abc")
		}
		if err == nil || !strings.Contains(err.Error(), "host cl (k8s://ctx/ns?image=agent:1) is a Kubernetes cluster, reached through agentctl-k8s") {
			t.Errorf("%s without the helper: %v", name, err)
		}
	}
	bin := t.TempDir()
	t.Setenv("PATH", bin)
	// Chmod, not WriteFile's mode alone: an in-process service of another
	// test narrows the process's umask while it binds its socket.
	helper := filepath.Join(bin, hosts.K8sHelper)
	if err := os.WriteFile(helper, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(helper, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, o := range open {
		h, err := o()
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if _, ok := h.API.(*k8shelper.Sessions); !ok || h.Name != "cl" {
			t.Errorf("%s: host %+v, want cl through the helper", name, h)
		}
	}
}
