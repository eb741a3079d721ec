package hosts

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/client"
	"github.com/agentctl/agentctl/cluster/k8shelper"
	"github.com/agentctl/agentctl/home"
)

func TestParseSSH(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		url                   string
		user, host, port, bin string
		err                   string
	}{
		{url: "ssh://build01", host: "build01"},
		{url: "ssh://me@build01:2222", user: "me", host: "build01", port: "2222"},
		{url: "ssh://me@[::1]:22", user: "me", host: "::1", port: "22"},
		{url: "ssh://gpu-1?agentctl=/opt/agentctl/bin/agentctl", host: "gpu-1", bin: "/opt/agentctl/bin/agentctl"},
		{url: "ssh://me:secret@build01", err: "no password"},
		{url: "ssh://build01/home/me", err: "has no path"},
		{url: "ssh://build01?bogus=1", err: `unknown parameter "bogus"`},
		{url: "ssh://-oProxyCommand=x", err: "cannot start with '-'"},
		{url: "ssh://ad%5Cme$@[fe80::1%25eth0]", user: `ad\me$`, host: "fe80::1%eth0"},
		{url: "ssh://me%0Ax@build01", err: "a user name is"},
		{url: "ssh://-me@build01", err: "a user name is"},
		{url: "ssh://me;rm@build01", err: "a user name is"},
		{url: "ssh://me%20x@build01", err: "a user name is"},
		{url: "ssh://bu;ld$(x)01", err: "a host name"},
		{url: "ssh://b%C3%BCild", err: "a host name"},
	} {
		u, err := ParseURL(tc.url)
		if err != nil {
			t.Fatalf("%s: %v", tc.url, err)
		}
		s, err := ParseSSH(u)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: error %v, want one saying %q", tc.url, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.url, err)
		}
		if s.User != tc.user || s.Host != tc.host || s.Port != tc.port || s.Agentctl != tc.bin {
			t.Errorf("%s: got %+v", tc.url, s)
		}
	}
}

func TestParseK8s(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		url  string
		want K8s
		name string
		err  string
	}{
		{url: "k8s://kind-dev/agents", want: K8s{Context: "kind-dev", Namespace: "agents"}, name: "kind-dev"},
		{url: "k8s://kind-dev", want: K8s{Context: "kind-dev"}, name: "kind-dev"},
		{url: "k8s:///agents", want: K8s{Namespace: "agents"}, name: "k8s"},
		{url: "k8s:///agents?context=arn:aws:eks:eu-west-1:1:cluster/x", want: K8s{Context: "arn:aws:eks:eu-west-1:1:cluster/x", Namespace: "agents"}, name: "arn:aws:eks:eu-west-1:1:cluster/x"},
		{url: "k8s://c/ns?image=agent:1&pull=Never&volume=pvc:work&kubeconfig=/etc/k.yaml",
			want: K8s{Context: "c", Namespace: "ns", Image: "agent:1", PullPolicy: "Never", Volume: "pvc:work", Kubeconfig: "/etc/k.yaml"}, name: "c"},
		{url: "k8s://c/ns?volume=host:/srv/work", want: K8s{Context: "c", Namespace: "ns", Volume: "host:/srv/work"}, name: "c"},
		{url: "k8s://c/ns/more", err: "one namespace"},
		{url: "k8s://me@c/ns", err: "no user or port"},
		{url: "k8s://c:6443/ns", err: "no user or port"},
		{url: "k8s://c/ns?pull=Sometimes", err: "want Always, IfNotPresent or Never"},
		{url: "k8s://c/ns?volume=nfs:x", err: "want pvc:CLAIM or host:/PATH"},
		{url: "k8s://c/ns?volume=host:relative", err: "want pvc:CLAIM or host:/PATH"},
		{url: "k8s://c/ns?network=host", want: K8s{Context: "c", Namespace: "ns", HostNetwork: true}, name: "c"},
		{url: "k8s://c/ns?network=bridge", err: "network=\"bridge\": want host"},
		{url: "k8s://c/ns?context=d", err: "two contexts"},
		{url: "k8s://c/ns?bogus=1", err: `unknown parameter "bogus"`},
		{url: "k8s://c/..", err: "a namespace is a DNS label"},
		{url: "k8s://c/a%0Ab", err: "a namespace is a DNS label"},
		{url: "k8s://c/Agents", err: "a namespace is a DNS label"},
		{url: "k8s://c/-ns", err: "a namespace is a DNS label"},
		{url: "k8s://c/" + strings.Repeat("a", 64), err: "a namespace is a DNS label"},
		{url: "k8s://c/" + strings.Repeat("a", 63), want: K8s{Context: "c", Namespace: strings.Repeat("a", 63)}, name: "c"},
		{url: "k8s://c/ns?image=a%0Ab", err: "no control characters"},
	} {
		u, err := ParseURL(tc.url)
		if err != nil {
			t.Fatalf("%s: %v", tc.url, err)
		}
		k, err := ParseK8s(u)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: error %v, want one saying %q", tc.url, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.url, err)
		}
		if k != tc.want {
			t.Errorf("%s: got %+v, want %+v", tc.url, k, tc.want)
		}
		if n := defaultName(u); n != tc.name {
			t.Errorf("%s: named %q, want %q", tc.url, n, tc.name)
		}
	}
}

func TestParseURLRefuses(t *testing.T) {
	t.Parallel()
	for raw, want := range map[string]string{
		"build01":   "no scheme",
		"ssh://":    "no host",
		"unix://":   "no path",
		"ssh://a b": "invalid",
		"nfs:///ns": "no host",
	} {
		if _, err := ParseURL(raw); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want one saying %q", raw, err, want)
		}
	}
}

func TestResolverNamesAndSchemes(t *testing.T) {
	t.Parallel()
	r := Resolver{Schemes: Schemes(), Named: map[string]string{"build": "ssh://me@build01", "other": "unix:///tmp/x"}}
	h, err := r.Host("build")
	if err != nil || h.Name != "build" || h.URL != "ssh://me@build01" {
		t.Fatalf("build: %+v, %v", h, err)
	}
	if h, err := r.Host("ssh://gpu-1:2222"); err != nil || h.Name != "gpu-1" {
		t.Fatalf("a URL: %+v, %v", h, err)
	}
	if h, err := r.Host(""); err != nil || h.Name != Local {
		t.Fatalf("the default: %+v, %v", h, err)
	}
	if _, err := r.Host("nope"); err == nil || !strings.Contains(err.Error(), "agentctl host add nope") {
		t.Fatalf("an unknown name: %v", err)
	}
	if _, err := r.Host("nfs://ctx/ns"); err == nil || !strings.Contains(err.Error(), `unknown scheme "nfs"`) {
		t.Fatalf("a scheme nobody registered: %v", err)
	}
	all, err := r.Hosts(All)
	if err != nil || strings.Join(Names(all), ",") != "local,build,other" {
		t.Fatalf("all: %v, %v", Names(all), err)
	}
	some, err := r.Hosts("build, local,build")
	if err != nil || strings.Join(Names(some), ",") != "build,local" {
		t.Fatalf("a list: %v, %v", Names(some), err)
	}
}

func TestSplitHandle(t *testing.T) {
	t.Parallel()
	isHost := func(n string) bool { return n == "build" || n == Local }
	for _, tc := range []struct{ in, host, id string }{
		{"build/01m8", "build", "01m8"},
		{"local/k3x9", "local", "k3x9"},
		{"k3x9", "", "k3x9"},
		{"web/api", "", "web/api"}, // a name with a slash, no such host
		{"build/", "", "build/"},
	} {
		h, id, ok := SplitHandle(tc.in, isHost)
		if h != tc.host || id != tc.id || ok != (tc.host != "") {
			t.Errorf("%q: got %q %q %v", tc.in, h, id, ok)
		}
	}
}

func TestCheckName(t *testing.T) {
	t.Parallel()
	for name, ok := range map[string]bool{"build": true, "gpu-1.eu": true, "local": false, "all": false, "a/b": false, "-x": false, "": false} {
		if err := CheckName(name); (err == nil) != ok {
			t.Errorf("%q: %v", name, err)
		}
	}
}

// A host's session that was unknown when it last answered may be live: when
// the host stops answering, it is still listed (as unknown), not dropped.
func TestUnreachableHostHidesItsUnknownSessions(t *testing.T) {
	t.Parallel()
	cache := Cache{Dir: t.TempDir()}
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	b := Host{Name: "b"}
	seen := []Answer{{Host: b, List: api.SessionList{Sessions: []api.Session{
		{ID: "bbbb1", Status: api.StatusRunning},
		{ID: "bbbb2", Status: api.StatusUnknown},
		{ID: "bbbb3", Status: api.StatusEnded},
	}}}}
	Merge(seen, cache, api.ListOptions{}, now)
	l := Merge([]Answer{{Host: b, Err: errors.New("cannot reach the host over ssh")}}, cache, api.ListOptions{}, now.Add(time.Minute))
	var got []string
	for _, s := range l.Sessions {
		got = append(got, s.ID+"="+string(s.Status))
	}
	if want := []string{"bbbb1=unknown", "bbbb2=unknown"}; !slices.Equal(got, want) {
		t.Errorf("with b down: %q, want %q", got, want)
	}
}

func TestMergeNamesHostsAndKeepsUnreachableOnesUnknown(t *testing.T) {
	t.Parallel()
	cache := Cache{Dir: t.TempDir()}
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	a := Host{Name: "a"}
	b := Host{Name: "b"}
	first := []Answer{
		{Host: a, List: api.SessionList{Sessions: []api.Session{{ID: "aaaa1", Handle: "aaaa", Status: api.StatusRunning}}, Warnings: []string{"a corrupt record"}}},
		{Host: b, List: api.SessionList{Sessions: []api.Session{
			{ID: "bbbb1", Handle: "bbbb", Status: api.StatusRunning, Activity: api.ActivityBusy, Group: "g"},
			{ID: "bbbb2", Status: api.StatusExited},
		}}},
	}
	l := Merge(first, cache, api.ListOptions{}, now)
	if len(l.Sessions) != 3 || l.Sessions[0].Host != "a" || l.Sessions[0].Handle != "a/aaaa" || l.Sessions[2].Handle != "b/bbbb2" {
		t.Fatalf("merged: %+v", l.Sessions)
	}
	if len(l.Warnings) != 1 || l.Warnings[0] != "a: a corrupt record" {
		t.Fatalf("warnings: %q", l.Warnings)
	}

	// B stops answering: its running session seen before is unknown, the
	// ended one is not made up, and a warning names B.
	second := []Answer{first[0], {Host: b, Err: errors.New("cannot reach the host over ssh")}}
	l = Merge(second, cache, api.ListOptions{}, now.Add(time.Minute))
	if len(l.Sessions) != 2 {
		t.Fatalf("with b down: %+v", l.Sessions)
	}
	got := l.Sessions[1]
	if got.ID != "bbbb1" || got.Host != "b" || got.Status != api.StatusUnknown || got.Activity != "" || len(got.Warnings) != 1 {
		t.Fatalf("b's session seen before: %+v", got)
	}
	w := l.Warnings[len(l.Warnings)-1]
	if !strings.Contains(w, "host b did not answer: cannot reach") || !strings.Contains(w, "its 1 sessions running or unknown when last seen (1m ago)") {
		t.Fatalf("warning: %q", w)
	}
	// A filter applies to what was seen: another group shows nothing of B,
	// and asking for running sessions does not show unknown ones.
	for _, o := range []api.ListOptions{{Group: "other"}, {Status: string(api.StatusRunning)}} {
		if l := Merge(second, cache, o, now); len(l.Sessions) != 1 {
			t.Fatalf("%+v: %+v", o, l.Sessions)
		}
	}
	// A filtered answer does not replace what was last seen.
	Merge([]Answer{{Host: b, List: api.SessionList{}}}, cache, api.ListOptions{Group: "other"}, now)
	if seen, _, _ := cache.Load("b"); len(seen) != 1 {
		t.Fatalf("a filtered list replaced b's last seen: %+v", seen)
	}
	if got := Failed(second); len(got) != 1 || got[0] != "b" {
		t.Fatalf("failed: %v", got)
	}
}

func TestOpenK8sFindsItsHelper(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "agentctl")
	t.Setenv("PATH", t.TempDir())
	// Without the helper the host opens (a view lists the others), and
	// each request says what is missing.
	h, err := Schemes().Open("cl", "k8s://ctx/ns", Env{Exe: exe})
	if err != nil {
		t.Fatal(err)
	}
	_, err = h.API.List(context.Background(), api.ListOptions{})
	if err == nil || !strings.Contains(err.Error(), "host cl (k8s://ctx/ns) is a Kubernetes cluster, reached through agentctl-k8s, which is neither beside agentctl nor on PATH") {
		t.Fatalf("without the helper: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, K8sHelper), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	h, err = Schemes().Open("cl", "k8s://ctx/ns?image=agent:1", Env{Exe: exe})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := h.API.(*k8shelper.Sessions); !ok || h.Name != "cl" {
		t.Fatalf("opened %+v, want host cl through the helper", h)
	}
	// A mistake in the URL is told before the helper is looked for.
	if _, err := Schemes().Open("", "k8s://ctx/ns?pull=Sometimes", Env{Exe: exe}); err == nil || !strings.Contains(err.Error(), "pull=") {
		t.Fatalf("a bad pull policy: %v", err)
	}
}

// What the web dashboard asks of a view beyond the list goes to the host a
// HOST/ID handle names, and says which host answered what; a host that
// lacks the capability is refused by name. The hosts here are homes with no
// service (and no autostart) and a host that opens to nothing.
func TestViewRoutesExplainRestartAttach(t *testing.T) {
	t.Parallel()
	near := client.New(home.Home(t.TempDir()), "", false)
	v := &View{Hosts: []Host{{Name: "near", API: near}, {Name: "bare", API: failing{errors.New("no helper")}}}}
	ctx := context.Background()
	calls := map[string]func(id string) error{
		"explain": func(id string) error { _, err := v.Explain(ctx, id); return err },
		"restart": func(id string) error { _, err := v.Restart(ctx, id, api.RestartRequest{}); return err },
		"attach":  func(id string) error { _, err := v.Attach(ctx, id, 24, 80); return err },
	}
	for name, call := range calls {
		for handle, want := range map[string]string{
			"near/0123abcd": "host near: ",
			"bare/0123abcd": "host bare ",
			"0123abcd":      "names no session of these hosts (near, bare)",
			"far/0123abcd":  "names no session of these hosts",
		} {
			if err := call(handle); err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s %s: %v, want it to say %q", name, handle, err, want)
			}
		}
	}
	// A view is this machine only when every host says it is.
	if (&View{Hosts: []Host{{Name: "near", API: near}}}).Remote() {
		t.Error("a view of a local home calls itself remote")
	}
	if !v.Remote() {
		t.Error("a view with a host that does not say where it is calls itself local")
	}
}
