// Package hosts is what the CLI knows of hosts: places that hold sessions
// and answer the API — this machine's service, another machine's over ssh,
// and any other kind a URL scheme registers (a cluster). It reads host URLs
// and names, opens them through a registry of schemes, and holds, once for
// every kind, what a view over several hosts needs: the fan-out, the merge
// naming each session's host, HOST/ID handles, and the warning for a host
// that does not answer, whose sessions seen before are shown as unknown
// (from a small last-seen cache), never dropped and never called stopped.
package hosts

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"unicode"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/client"
	"github.com/agentctl/agentctl/cluster/k8shelper"
	"github.com/agentctl/agentctl/home"
)

// Local is the name of this machine's own service.
const Local = "local"

// All, as a host selection, is the local host and every named one.
const All = "all"

// Host is one place sessions live.
type Host struct {
	// Name is what the HOST column and handles (NAME/ID) show: "local",
	// a configured name, or the host part of a URL given as is.
	Name string
	// URL is how it was reached ("" for the local service).
	URL string
	// API answers for its sessions.
	API client.Sessions
}

// Client is the host's API as the agentctl client, for what goes beyond
// client.Sessions (attach, events, locks…); a kind of host that is no
// agentctl service says so.
func (h Host) Client() (*client.Client, error) {
	if s, ok := h.API.(Service); ok {
		return s.ServiceClient(), nil
	}
	return nil, fmt.Errorf("host %s (%s) answers for its sessions but not this command", h.Name, h.URL)
}

// Env is what opening a host may need from the CLI.
type Env struct {
	// Home is the local home (the last-seen cache and the ssh masters'
	// sockets live there); Exe the local agentctl; Autostart whether a
	// service that does not run is started (locally or on the far side).
	Home      home.Home
	Exe       string
	Autostart bool
	// SSHCommand is ssh with the user's options; empty is "ssh".
	SSHCommand []string
	// Version is this agentctl's, named when versions disagree.
	Version string
	// OnServiceVersion, when set, hears once which version this machine's
	// service runs.
	OnServiceVersion func(version string)
	// StartInstalled, when set, is how a local service is started through
	// an installed unit before one of the client's own (see
	// client.InstalledStarter).
	StartInstalled client.InstalledStarter
}

// Opener opens a host of one URL scheme; name is what messages call it.
type Opener func(u *url.URL, name string, env Env) (client.Sessions, error)

// Registry maps URL schemes to the kinds of host they open. Another kind
// of host (a cluster) is one more entry.
type Registry map[string]Opener

// Schemes is the registry of the kinds of host agentctl itself knows:
// ssh://[user@]host[:port][?agentctl=PATH] and unix:///path (another
// local home, or its socket); k8s://CONTEXT/NAMESPACE (a Kubernetes
// cluster, see ParseK8s).
func Schemes() Registry {
	return Registry{"ssh": OpenSSH, "unix": OpenUnix, "k8s": OpenK8s}
}

// Open opens the host rawURL names; name "" takes the URL's host part.
func (r Registry) Open(name, rawURL string, env Env) (Host, error) {
	u, err := ParseURL(rawURL)
	if err != nil {
		return Host{}, err
	}
	open, ok := r[u.Scheme]
	if !ok {
		return Host{}, fmt.Errorf("host URL %q: unknown scheme %q (known: %s)", rawURL, u.Scheme, strings.Join(r.schemes(), ", "))
	}
	if name == "" {
		name = defaultName(u)
	}
	api, err := open(u, name, env)
	if err != nil {
		return Host{}, err
	}
	return Host{Name: name, URL: rawURL, API: api}, nil
}

func (r Registry) schemes() []string {
	out := make([]string, 0, len(r))
	for s := range r {
		out = append(out, s+"://")
	}
	slices.Sort(out)
	return out
}

// ParseURL reads a host URL: a scheme and, but for unix://, a host.
func ParseURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("host URL %q: %w", raw, err)
	}
	switch {
	case u.Scheme == "":
		return nil, fmt.Errorf("host URL %q: no scheme (want ssh://[user@]host[:port], unix:///path or k8s://CONTEXT/NAMESPACE)", raw)
	case u.Scheme == "unix" && u.Path == "":
		return nil, fmt.Errorf("host URL %q: no path (want unix:///path/to/home)", raw)
	case u.Scheme != "unix" && u.Scheme != "k8s" && u.Host == "":
		return nil, fmt.Errorf("host URL %q: no host", raw)
	}
	return u, nil
}

// defaultName is what a host given by URL is called: its host name, or
// for a local home its path.
func defaultName(u *url.URL) string {
	switch u.Scheme {
	case "unix":
		return u.Path
	case "k8s":
		if k, err := ParseK8s(u); err == nil && k.Context != "" {
			return k.Context
		}
		return "k8s"
	}
	return u.Hostname()
}

// OpenLocal opens this machine's own service, in env's home.
func OpenLocal(env Env) Host {
	c := env.localClient(env.Home)
	if env.OnServiceVersion != nil {
		c.OnServiceVersion(env.OnServiceVersion)
	}
	return Host{Name: Local, API: c}
}

// OpenUnix opens another local home's service: unix:///path names the
// home, or its socket.
func OpenUnix(u *url.URL, _ string, env Env) (client.Sessions, error) {
	dir := filepath.Clean(u.Path)
	if fi, err := os.Stat(dir); err == nil && !fi.IsDir() || filepath.Base(dir) == "agentctl.sock" {
		dir = filepath.Dir(dir)
	}
	return env.localClient(home.Home(dir)), nil
}

// localClient is a client of the service of h, a home on this machine.
func (env Env) localClient(h home.Home) *client.Client {
	c := client.New(h, env.Exe, env.Autostart)
	if env.StartInstalled != nil {
		c.StartInstalledWith(env.StartInstalled)
	}
	return c
}

// OpenSSH opens another machine's service through ssh.
func OpenSSH(u *url.URL, name string, env Env) (client.Sessions, error) {
	s, err := ParseSSH(u)
	if err != nil {
		return nil, err
	}
	s.Name = name
	s.Command = env.SSHCommand
	s.Version = env.Version
	if env.Home != "" {
		s.ControlDir = client.SSHControlDir(env.Home)
	}
	return client.NewRemote(s, env.Autostart), nil
}

// K8sHelper is the program that reaches Kubernetes clusters: it links
// client-go, which agentctl does not (its start-up would cost every
// command), and is installed beside agentctl.
const K8sHelper = "agentctl-k8s"

// OpenK8s opens one namespace of a Kubernetes cluster, reached through
// K8sHelper beside env's agentctl (else on PATH). Without the helper the
// host opens, and every request to it fails saying so: in a view over
// several hosts it is one host that does not answer.
func OpenK8s(u *url.URL, name string, env Env) (client.Sessions, error) {
	k, err := ParseK8s(u)
	if err != nil {
		return nil, err
	}
	exe := ""
	if env.Exe != "" {
		if p := filepath.Join(filepath.Dir(env.Exe), K8sHelper); isExecutable(p) {
			exe = p
		}
	}
	if exe == "" {
		if exe, err = exec.LookPath(K8sHelper); err != nil {
			return failing{fmt.Errorf("host %s (%s) is a Kubernetes cluster, reached through %s, which is neither beside agentctl nor on PATH: install it beside agentctl (make build builds both)", name, u.Redacted(), K8sHelper)}, nil
		}
	}
	return k8shelper.New(exe, k8shelper.Target{
		Kubeconfig: k.Kubeconfig, Context: k.Context, Namespace: k.Namespace,
		Image: k.Image, PullPolicy: k.PullPolicy, Volume: k.Volume, HostNetwork: k.HostNetwork,
	}), nil
}

// failing is a host every request to which fails with err.
type failing struct{ err error }

func (f failing) Launch(context.Context, api.RunRequest) (api.Session, error) {
	return api.Session{}, f.err
}
func (f failing) List(context.Context, api.ListOptions) (api.SessionList, error) {
	return api.SessionList{}, f.err
}
func (f failing) Get(context.Context, string) (api.Session, error) { return api.Session{}, f.err }
func (f failing) Stop(context.Context, string, api.StopRequest) (api.Session, error) {
	return api.Session{}, f.err
}
func (f failing) Input(context.Context, string, []byte) (api.Session, error) {
	return api.Session{}, f.err
}
func (f failing) Transcript(context.Context, string, int) (api.Transcript, error) {
	return api.Transcript{}, f.err
}
func (f failing) Logs(context.Context, string, api.LogOptions, func(api.LogChunk) error) error {
	return f.err
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}

// ParseSSH reads ssh://[user@]host[:port][?agentctl=PATH]: agentctl names
// the far side's binary when it is not on the remote PATH.
func ParseSSH(u *url.URL) (*client.SSH, error) {
	if u.Scheme != "ssh" {
		return nil, fmt.Errorf("host URL %q: not ssh://", u)
	}
	if u.Path != "" && u.Path != "/" {
		return nil, fmt.Errorf("host URL %q: an ssh host has no path (to name the remote agentctl, add ?agentctl=/path/to/agentctl)", u)
	}
	if _, set := u.User.Password(); set {
		return nil, fmt.Errorf("host URL %q: no password in the URL: ssh's own authentication (keys, agent) applies", u.Redacted())
	}
	s := &client.SSH{Host: u.Hostname(), Port: u.Port(), User: u.User.Username()}
	if strings.HasPrefix(s.Host, "-") {
		return nil, fmt.Errorf("host URL %q: a host cannot start with '-'", u)
	}
	// What ssh would be handed is checked here, not left to OpenSSH
	// (whose refusals vary by version, and some of which a shell or a
	// ProxyCommand would see first).
	if bad := strings.IndexFunc(s.Host, func(r rune) bool { return !sshHostRune(r) }); bad >= 0 || s.Host == "" {
		return nil, fmt.Errorf("host URL %q: host %q: a host name (letters, digits, '.', '-', '_') or an IP address", u.Redacted(), s.Host)
	}
	if strings.HasPrefix(s.User, "-") || strings.IndexFunc(s.User, func(r rune) bool { return !sshUserRune(r) }) >= 0 {
		return nil, fmt.Errorf("host URL %q: user %q: a user name is letters, digits, '.', '_', '-', '@', '+', '\\' and '$', not starting with '-'", u.Redacted(), s.User)
	}
	for k, v := range u.Query() {
		switch k {
		case "agentctl":
			s.Agentctl = v[len(v)-1]
		default:
			return nil, fmt.Errorf("host URL %q: unknown parameter %q (known: agentctl)", u, k)
		}
	}
	return s, nil
}

// sshHostRune is a character of a host name or an IP address (IPv6 with
// its zone).
func sshHostRune(r rune) bool {
	return asciiAlnum(r) || strings.ContainsRune(".-_:%", r)
}

// sshUserRune is a character of a user name as systems spell them
// (DOMAIN\user, user@realm, a machine account's trailing $).
func sshUserRune(r rune) bool {
	return asciiAlnum(r) || strings.ContainsRune("._-@+\\$", r)
}

func asciiAlnum(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
}

// K8s is a Kubernetes cluster as a host: one namespace of one kubeconfig
// context, and how sessions are made there.
type K8s struct {
	// Context is the kubeconfig context ("" its current one); Namespace
	// where sessions live ("" the context's own).
	Context, Namespace string
	// Kubeconfig is the kubeconfig file ("" follows KUBECONFIG, then
	// ~/.kube/config, as kubectl does).
	Kubeconfig string
	// Image is the sessions' container image, PullPolicy its pull policy
	// ("" IfNotPresent), Volume what is mounted at the working directory
	// (pvc:NAME, host:/PATH, "" an empty folder).
	Image, PullPolicy, Volume string
	// HostNetwork runs the sessions' pods on their node's network
	// (network=host; meant for one-node clusters).
	HostNetwork bool
}

// ParseK8s reads k8s://CONTEXT/NAMESPACE[?image=IMAGE&pull=POLICY&
// volume=pvc:NAME&kubeconfig=PATH&context=NAME&network=host]: k8s:///NAMESPACE is the
// current context, and context= names one that is no URL host (an EKS
// ARN).
func ParseK8s(u *url.URL) (K8s, error) {
	if u.Scheme != "k8s" {
		return K8s{}, fmt.Errorf("host URL %q: not k8s://", u)
	}
	if u.User != nil || u.Port() != "" {
		return K8s{}, fmt.Errorf("host URL %q: a cluster is k8s://CONTEXT/NAMESPACE (a kubeconfig context, no user or port)", u.Redacted())
	}
	k := K8s{Context: u.Host, Namespace: strings.Trim(u.Path, "/")}
	if strings.Contains(k.Namespace, "/") {
		return K8s{}, fmt.Errorf("host URL %q: one namespace after the context (k8s://CONTEXT/NAMESPACE)", u)
	}
	if k.Namespace != "" && !dnsLabel(k.Namespace) {
		return K8s{}, fmt.Errorf("host URL %q: namespace %q: a namespace is a DNS label (at most 63 lower-case letters, digits and '-', starting and ending with a letter or digit)", u, k.Namespace)
	}
	for key, v := range u.Query() {
		val := v[len(v)-1]
		if strings.ContainsFunc(val, unicode.IsControl) {
			return K8s{}, fmt.Errorf("host URL %q: %s=%q: no control characters", u, key, val)
		}
		switch key {
		case "context":
			if k.Context != "" && k.Context != val {
				return K8s{}, fmt.Errorf("host URL %q: two contexts (%s and %s)", u, k.Context, val)
			}
			k.Context = val
		case "kubeconfig":
			k.Kubeconfig = val
		case "image":
			k.Image = val
		case "pull":
			switch val {
			case "Always", "IfNotPresent", "Never":
			default:
				return K8s{}, fmt.Errorf("host URL %q: pull=%q: want Always, IfNotPresent or Never", u, val)
			}
			k.PullPolicy = val
		case "volume":
			if kind, arg, _ := strings.Cut(val, ":"); !(kind == "pvc" && arg != "" || kind == "host" && strings.HasPrefix(arg, "/")) {
				return K8s{}, fmt.Errorf("host URL %q: volume=%q: want pvc:CLAIM or host:/PATH", u, val)
			}
			k.Volume = val
		case "network":
			if val != "host" && val != "" {
				return K8s{}, fmt.Errorf("host URL %q: network=%q: want host (the node's network) or nothing (the pod's own)", u, val)
			}
			k.HostNetwork = val == "host"
		default:
			return K8s{}, fmt.Errorf("host URL %q: unknown parameter %q (known: context, image, kubeconfig, network, pull, volume)", u, key)
		}
	}
	return k, nil
}

// dnsLabel reports whether s is a DNS-1123 label, as Kubernetes names
// namespaces.
func dnsLabel(s string) bool {
	if len(s) == 0 || len(s) > 63 {
		return false
	}
	for i, r := range s {
		ok := r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' && i > 0 && i < len(s)-1
		if !ok {
			return false
		}
	}
	return true
}

// CheckName refuses a name a host cannot have: "local" and "all" are
// taken, and a name must fit in a handle (NAME/ID) and a file name.
func CheckName(name string) error {
	switch {
	case name == Local || name == All:
		return fmt.Errorf("host name %q is reserved", name)
	case name == "":
		return fmt.Errorf("a host needs a name")
	case strings.HasPrefix(name, "-") || strings.HasPrefix(name, "."):
		return fmt.Errorf("host name %q: must start with a letter or digit", name)
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return fmt.Errorf("host name %q: only letters, digits, '-', '_' and '.'", name)
		}
	}
	return nil
}

// Resolver turns what a user types (a host name, a URL, "local") into
// hosts, given the named ones of config.json.
type Resolver struct {
	Schemes Registry
	// Named maps names to URLs.
	Named map[string]string
	Env   Env
}

// Host opens one host: "" or "local" is this machine's service.
func (r Resolver) Host(spec string) (Host, error) {
	switch {
	case spec == "" || spec == Local:
		return OpenLocal(r.Env), nil
	case r.Named[spec] != "":
		return r.Schemes.Open(spec, r.Named[spec], r.Env)
	case strings.Contains(spec, "://"):
		return r.Schemes.Open("", spec, r.Env)
	}
	return Host{}, fmt.Errorf("unknown host %q: neither a named host (%s) nor a URL (ssh://[user@]host[:port], unix:///path, k8s://CONTEXT/NAMESPACE); add it with `agentctl host add %s ssh://…`",
		spec, strings.Join(r.names(), ", "), spec)
}

// Hosts opens a selection: "all" (the local host and every named one) or
// a comma-separated list of names and URLs.
func (r Resolver) Hosts(spec string) ([]Host, error) {
	var specs []string
	if spec == All {
		specs = r.names()
	} else {
		for _, s := range strings.Split(spec, ",") {
			if s = strings.TrimSpace(s); s != "" && !slices.Contains(specs, s) {
				specs = append(specs, s)
			}
		}
	}
	if len(specs) == 0 {
		return nil, fmt.Errorf("no host in %q", spec)
	}
	out := make([]Host, 0, len(specs))
	for _, s := range specs {
		h, err := r.Host(s)
		if err != nil {
			return nil, err
		}
		if slices.ContainsFunc(out, func(o Host) bool { return o.Name == h.Name }) {
			return nil, fmt.Errorf("hosts %q: two hosts are called %s; name them (agentctl host add)", spec, h.Name)
		}
		out = append(out, h)
	}
	return out, nil
}

// names is "local" and the named hosts, sorted.
func (r Resolver) names() []string {
	out := []string{Local}
	for n := range r.Named {
		out = append(out, n)
	}
	slices.Sort(out[1:])
	return out
}

// IsHost reports whether name is a host a handle may start with.
func (r Resolver) IsHost(name string) bool {
	return name == Local || r.Named[name] != ""
}

// SplitHandle splits a handle NAME/ID whose NAME is a host isHost knows;
// any other handle is the default host's (ok false).
func SplitHandle(handle string, isHost func(string) bool) (host, id string, ok bool) {
	h, rest, found := strings.Cut(handle, "/")
	if !found || rest == "" || !isHost(h) {
		return "", handle, false
	}
	return h, rest, true
}

// Handle is a session's handle on host name.
func Handle(name, id string) string { return name + "/" + id }
