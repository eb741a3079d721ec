package hosts

import (
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/client"
	"github.com/agentctl/agentctl/home"
)

// hostCapabilities names the optional capabilities (capabilities.go) s
// implements.
func hostCapabilities(s client.Sessions) string {
	has := map[string]bool{}
	_, has["Service"] = s.(Service)
	_, has["EventSource"] = s.(EventSource)
	_, has["Decider"] = s.(Decider)
	_, has["Explainer"] = s.(Explainer)
	_, has["Remover"] = s.(Remover)
	_, has["Restarter"] = s.(Restarter)
	_, has["Renamer"] = s.(Renamer)
	_, has["Signaler"] = s.(Signaler)
	_, has["FrameAttacher"] = s.(FrameAttacher)
	_, has["StreamAttacher"] = s.(StreamAttacher)
	_, has["Remoter"] = s.(Remoter)
	var out []string
	for _, name := range slices.Sorted(maps.Keys(has)) {
		if has[name] {
			out = append(out, name)
		}
	}
	return strings.Join(out, " ")
}

// Every kind of host implements exactly the capabilities this table states
// (and every scheme of Schemes() has a row): what a kind answers decides
// which commands work against it, so a capability gained or lost must be a
// change of this table too.
func TestHostCapabilities(t *testing.T) {
	t.Parallel()
	const service = "Decider EventSource Explainer FrameAttacher Remoter Remover Renamer Restarter Service Signaler"
	// The cluster's helper beside agentctl, so a k8s:// host opens to it
	// whatever PATH holds. It is never run here.
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, K8sHelper), []byte("#!/bin/sh\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	env := Env{Home: home.Home(t.TempDir()), Exe: filepath.Join(bin, "agentctl")}
	for _, tc := range []struct {
		kind string
		url  string // opened through Schemes(); "" for the rows below
		open func() client.Sessions
		want string
	}{
		{kind: "local", open: func() client.Sessions { return OpenLocal(env).API }, want: service},
		{kind: "unix", url: "unix:///srv/other", want: service},
		{kind: "ssh", url: "ssh://me@build01", want: service},
		{kind: "k8s", url: "k8s://kind-test/agents", want: "EventSource Explainer StreamAttacher"},
		{kind: "k8s without its helper", open: func() client.Sessions { return failing{errors.New("no helper")} }, want: ""},
		{kind: "a view over several hosts", open: func() client.Sessions { return &View{} }, want: "Decider EventSource Explainer FrameAttacher Remoter Restarter"},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			t.Parallel()
			var s client.Sessions
			if tc.url != "" {
				h, err := Schemes().Open("", tc.url, env)
				if err != nil {
					t.Fatalf("open %s: %v", tc.url, err)
				}
				s = h.API
			} else {
				s = tc.open()
			}
			if got := hostCapabilities(s); got != tc.want {
				t.Errorf("%s (%T) implements %q, the table says %q", tc.kind, s, got, tc.want)
			}
		})
	}
	// Every registered scheme has its row.
	for scheme := range Schemes() {
		if !slices.Contains([]string{"unix", "ssh", "k8s"}, scheme) {
			t.Errorf("scheme %s:// has no row in this table", scheme)
		}
	}
}
