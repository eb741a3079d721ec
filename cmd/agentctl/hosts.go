package main

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/client"
	"github.com/agentctl/agentctl/config"
	"github.com/agentctl/agentctl/hosts"
	"github.com/agentctl/agentctl/internal/text"
	"github.com/agentctl/agentctl/service"
)

// Environment variables of the hosts.
const (
	// hostEnv names the host commands act on (-H sets it for the
	// command and what it runs): a name, a URL, or for list, events and
	// top several (a,b,local) or all.
	hostEnv = client.HostEnv
	// sshCommandEnv is ssh with the user's options.
	sshCommandEnv = "AGENTCTL_SSH_COMMAND"
)

// hostTimeout is how long a view over several hosts waits for each.
const hostTimeout = 10 * time.Second

// addHostFlag adds -H/--host to every command: it sets AGENTCTL_HOST for
// the command and whatever it runs (top's attach, a pager's logs).
func addHostFlag(cli *cli, root *cobra.Command) {
	var host string
	root.PersistentFlags().StringVarP(&host, "host", "H", "", "the host to act on: a name from 'agentctl host ls', ssh://[user@]host[:port], unix:///path or k8s://CONTEXT/NAMESPACE (default $"+hostEnv+", else this machine); list, events, top and web take several (a,b,local) or all")
	root.RegisterFlagCompletionFunc("host", cli.completeHosts)
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		if cmd.Flags().Changed("host") {
			cli.setenv(hostEnv, host)
		}
		return nil
	}
}

// completeHosts offers the named hosts, local and all.
func (cli *cli) completeHosts(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	out := []string{hosts.Local, hosts.All}
	if r, err := cli.hostResolver(); err == nil {
		for n, u := range r.Named {
			out = append(out, n+"\t"+u)
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// thisMachineOnly makes the subcommands of cmd (but skip) refuse another
// host: they manage this machine's service, and with -H would manage the
// wrong one without a word.
func thisMachineOnly(cli *cli, cmd *cobra.Command, skip ...string) {
	for _, sub := range cmd.Commands() {
		if slices.Contains(skip, sub.Name()) || sub.RunE == nil {
			continue
		}
		runE := sub.RunE
		sub.RunE = func(c *cobra.Command, a []string) error {
			if cli.remoteTarget() {
				return usageError{fmt.Errorf("%s acts on this machine's service; for host %s, run it there (ssh HOST agentctl %s)", c.CommandPath(), cli.hostSpec(), strings.TrimPrefix(c.CommandPath(), "agentctl "))}
			}
			return runE(c, a)
		}
	}
}

// hostSpec is the host (or hosts) this command was told to act on.
func (cli *cli) hostSpec() string { return strings.TrimSpace(cli.getenv(hostEnv)) }

// remoteTarget reports whether commands act on a host other than this
// machine's service.
func (cli *cli) remoteTarget() bool {
	s := cli.hostSpec()
	return s != "" && s != hosts.Local
}

func (cli *cli) autostart() bool { return cli.getenv("AGENTCTL_NO_AUTOSTART") != "1" }

// hostResolver knows the named hosts of config.json and how to open
// every kind of host.
func (cli *cli) hostResolver() (hosts.Resolver, error) {
	h, err := cli.userHome()
	if err != nil {
		return hosts.Resolver{}, err
	}
	exe, err := cli.exe()
	if err != nil {
		return hosts.Resolver{}, err
	}
	// Warnings about config.json are run's to give; here only the hosts
	// matter.
	cfg, _, err := config.Load(config.Path(string(h)))
	if err != nil {
		return hosts.Resolver{}, err
	}
	return hosts.Resolver{
		Schemes: hosts.Schemes(),
		Named:   cfg.Hosts,
		Env: hosts.Env{
			Home: h, Exe: exe, Autostart: cli.autostart(), StartInstalled: service.StartInstalled,
			SSHCommand:       strings.Fields(cli.getenv(sshCommandEnv)),
			Version:          buildVersion(),
			OnServiceVersion: cli.warnVersionSkew,
		},
	}, nil
}

// targetHost opens the one host a command acts on.
func (cli *cli) targetHost() (hosts.Host, error) {
	spec := cli.hostSpec()
	if spec == hosts.All || strings.Contains(spec, ",") {
		return hosts.Host{}, usageError{fmt.Errorf("--host %s names several hosts; this command acts on one (only list, events, top and web take several)", spec)}
	}
	r, err := cli.hostResolver()
	if err != nil {
		return hosts.Host{}, err
	}
	return r.Host(spec)
}

// targetHosts opens the hosts a view shows: --hosts, else -H or
// AGENTCTL_HOST, else this machine alone. several says whether the view
// is over several (and so names each session's host).
func (cli *cli) targetHosts(flag string) (hs []hosts.Host, several bool, err error) {
	spec := flag
	if spec == "" {
		spec = cli.hostSpec()
	}
	if spec == "" || spec == hosts.Local {
		h, err := cli.localHost()
		if err != nil {
			return nil, false, err
		}
		return []hosts.Host{h}, false, nil
	}
	r, err := cli.hostResolver()
	if err != nil {
		return nil, false, err
	}
	hs, err = r.Hosts(spec)
	if err != nil {
		return nil, false, usageError{err}
	}
	return hs, spec == hosts.All || len(hs) > 1, nil
}

// localHost is this machine's service in the user's home, started on
// demand unless AGENTCTL_NO_AUTOSTART=1: no configuration to read.
func (cli *cli) localHost() (hosts.Host, error) {
	c, err := cli.localClient()
	if err != nil {
		return hosts.Host{}, err
	}
	return hosts.Host{Name: hosts.Local, API: c}, nil
}

// defaultHost is the host commands act on (-H, AGENTCTL_HOST), by
// default this machine's service.
func (cli *cli) defaultHost() (hosts.Host, error) {
	if cli.remoteTarget() {
		return cli.targetHost()
	}
	return cli.localHost()
}

// hostFor returns the host a session handle names (HOST/ID, HOST a named
// host or "local"), and the handle on that host; any other handle is the
// default host's.
func (cli *cli) hostFor(handle string) (hosts.Host, string, error) {
	if err := nonEmptyHandle(handle); err != nil {
		return hosts.Host{}, "", err
	}
	if name, _, found := strings.Cut(handle, "/"); found && name != "" {
		r, err := cli.hostResolver()
		if err != nil {
			return hosts.Host{}, "", err
		}
		if name, id, ok := hosts.SplitHandle(handle, r.IsHost); ok {
			h, err := r.Host(name)
			return h, id, err
		}
	}
	h, err := cli.defaultHost()
	return h, handle, err
}

// nonEmptyHandle refuses an empty session handle ("" from an unset shell
// variable), which would otherwise reach the service as a malformed path.
func nonEmptyHandle(handle string) error {
	if strings.TrimSpace(handle) == "" {
		return usageError{errors.New("a session id is empty: give an id, a unique prefix or a name (see agentctl list)")}
	}
	return nil
}

// routed is where a handle goes: its host and the handle there.
type routed struct {
	host hosts.Host
	id   string
}

// routeHandles routes each handle: HOST/ID to its host (each host opened
// once), any other to def. Every host opens before anything is done, so a
// host that cannot open fails the command before it acts.
func (cli *cli) routeHandles(def hosts.Host, handles []string) (map[string]routed, error) {
	out := make(map[string]routed, len(handles))
	var r *hosts.Resolver
	opened := map[string]hosts.Host{}
	for _, h := range handles {
		if err := nonEmptyHandle(h); err != nil {
			return nil, err
		}
		out[h] = routed{host: def, id: h}
		if !strings.Contains(h, "/") {
			continue
		}
		if r == nil {
			res, err := cli.hostResolver()
			if err != nil {
				return nil, err
			}
			r = &res
		}
		name, id, ok := hosts.SplitHandle(h, r.IsHost)
		if !ok {
			continue
		}
		host, seen := opened[name]
		if !seen {
			var err error
			if host, err = r.Host(name); err != nil {
				return nil, err
			}
			opened[name] = host
		}
		out[h] = routed{host: host, id: id}
	}
	return out, nil
}

// cannot is the one-line answer of a host that cannot do what a command
// asks: it names the host and its kind.
func cannot(h hosts.Host, what string) error {
	where := h.Name
	if h.URL != "" {
		where += " (" + h.URL + ")"
	}
	return fmt.Errorf("host %s cannot %s", where, what)
}

// lastSeen is the cache of each host's sessions seen running.
func (cli *cli) lastSeen() hosts.Cache {
	h, err := cli.userHome()
	if err != nil {
		return hosts.Cache{}
	}
	return hosts.Cache{Dir: filepath.Join(string(h), "hosts")}
}

func newHostCmd(cli *cli) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "host",
		Short: "Name the other hosts agentctl reaches (add, rm, ls)",
		Long: `Name other hosts, kept under "hosts" in config.json: agentctl reaches each
host's own service over ssh (the system's ssh, with your ~/.ssh/config, agent,
ProxyJump and known_hosts), running 'agentctl dial-stdio' there. Nothing
listens on the network. A named host is then --host NAME (or
AGENTCTL_HOST=NAME), and its sessions' handles are NAME/ID.

URLs: ssh://[user@]host[:port], with ?agentctl=/path/to/agentctl when agentctl
is not on the remote PATH of a non-interactive login; unix:///path for another
local home. AGENTCTL_SSH_COMMAND replaces "ssh" (and may add options).

k8s://CONTEXT/NAMESPACE is a namespace of a Kubernetes cluster (a kubeconfig
context; KUBECONFIG honoured), each session a Job, reached through the
agentctl-k8s helper installed beside agentctl. A plain command (run) and an
agent (launch, resume) both start there; the agentctl in the pod builds an
agent's command line and reads its store. Options: image=, pull=Always|
IfNotPresent|Never, volume=pvc:CLAIM or host:/PATH, kubeconfig=, context=,
network=host (the pods on their node's network; for one-node clusters).`,
		Example: `  agentctl host add build ssh://me@build01
  agentctl host add gpu 'ssh://gpu-1:2222?agentctl=/opt/agentctl/bin/agentctl'
  agentctl host add cl 'k8s://prod/agents?image=registry.example/agent:1'
  agentctl list --hosts all
  agentctl logs -f build/01m8`,
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "add NAME URL",
		Short: "Name a host (or change the URL of a named one)",
		Args:  args(cobra.ExactArgs(2)),
		RunE: func(cmd *cobra.Command, a []string) error {
			if err := hosts.CheckName(a[0]); err != nil {
				return usageError{err}
			}
			r, err := cli.hostResolver()
			if err != nil {
				return err
			}
			// The URL must open: a typo is told now, not at first use.
			if _, err := r.Schemes.Open(a[0], a[1], r.Env); err != nil {
				return usageError{err}
			}
			named := map[string]string{}
			for k, v := range r.Named {
				named[k] = v
			}
			named[a[0]] = a[1]
			return config.SetHosts(config.Path(string(r.Env.Home)), named)
		},
	}, &cobra.Command{
		Use:     "rm NAME",
		Aliases: []string{"remove"},
		Short:   "Forget a named host",
		Args:    args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			r, err := cli.hostResolver()
			if err != nil {
				return err
			}
			if _, ok := r.Named[a[0]]; !ok {
				return fmt.Errorf("no host is named %q (see agentctl host ls)", a[0])
			}
			named := map[string]string{}
			for k, v := range r.Named {
				if k != a[0] {
					named[k] = v
				}
			}
			return config.SetHosts(config.Path(string(r.Env.Home)), named)
		},
	}, newHostLsCmd(cli))
	return cmd
}

// hostEntry is one host as `host ls --json` prints it.
type hostEntry struct {
	Name string `json:"name"`
	URL  string `json:"url,omitempty"` // none for this machine
}

func newHostLsCmd(cli *cli) *cobra.Command {
	var asJSON bool
	var to tableOptions
	cmd := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List the named hosts",
		Args:    args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			r, err := cli.hostResolver()
			if err != nil {
				return err
			}
			names := make([]string, 0, len(r.Named))
			for n := range r.Named {
				names = append(names, n)
			}
			slices.Sort(names)
			entries := []hostEntry{{Name: hosts.Local}}
			for _, n := range names {
				entries = append(entries, hostEntry{Name: n, URL: r.Named[n]})
			}
			if asJSON {
				return printJSON(cli.out, map[string]any{"hosts": entries})
			}
			tw := to.newTable(cli.out)
			tw.header("NAME\tURL")
			for _, e := range entries {
				fmt.Fprintf(tw, "%s\t%s\n", text.Clean(e.Name), text.Clean(cmp.Or(e.URL, "(this machine)")))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	to.register(cmd)
	return cmd
}

// protocol, when set at build time (-ldflags "-X main.protocol=N"), is
// the API protocol dial-stdio announces instead of api.Protocol: how an
// agentctl of another release is built to test version skew.
var protocol = ""

func dialProtocol() int {
	if n, err := strconv.Atoi(protocol); err == nil {
		return n
	}
	return api.Protocol
}

// newDialStdioCmd is what the CLI of another host runs over ssh: it
// connects its standard input and output to this user's service (started
// first, as any command would), after a greeting line that says so and
// which protocol it speaks.
func newDialStdioCmd(cli *cli) *cobra.Command {
	var noAutostart bool
	cmd := &cobra.Command{
		Use:    "dial-stdio",
		Short:  "Connect standard input and output to the service (run by agentctl over ssh)",
		Hidden: true,
		Args:   args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			h, err := cli.userHome()
			if err != nil {
				return err
			}
			exe, err := cli.exe()
			if err != nil {
				return err
			}
			c := client.New(h, exe, cli.autostart() && !noAutostart)
			c.StartInstalledWith(service.StartInstalled)
			conn, err := c.Dial(cmd.Context())
			if err != nil {
				return err
			}
			defer conn.Close()
			if _, err := io.WriteString(cli.out, api.DialGreeting(dialProtocol(), buildVersion())); err != nil {
				return fmt.Errorf("dial-stdio: %w", err)
			}
			return pipeStdio(cli, conn)
		},
	}
	cmd.Flags().BoolVar(&noAutostart, "no-autostart", false, "do not start the service when it is not running")
	return cmd
}

// pipeStdio copies standard input to conn and conn to standard output
// until the service closes the connection; the end of standard input
// closes conn's writing half, so the service sees it.
func pipeStdio(cli *cli, conn net.Conn) error {
	go func() {
		io.Copy(conn, cli.in)
		if cw, ok := conn.(interface{ CloseWrite() error }); ok {
			cw.CloseWrite()
		}
	}()
	_, err := io.Copy(cli.out, conn)
	// The service is done: whatever stdin still brings has nowhere to go.
	if err != nil && !errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("dial-stdio: %w", err)
	}
	return nil
}
