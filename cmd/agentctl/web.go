package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/agentctl/agentctl/client"
	"github.com/agentctl/agentctl/home"
	"github.com/agentctl/agentctl/hosts"
	"github.com/agentctl/agentctl/web"
)

func newWebCmd(cli *cli) *cobra.Command {
	cfg := web.Config{}
	var printURL bool
	var hostList string
	cmd := &cobra.Command{
		Use:   "web",
		Short: "Serve a dashboard to a browser: sessions, output, answers, terminals",
		Long: `Serve agentctl's dashboard on 127.0.0.1: the live session list (those that
need you first, with their answer buttons), each session's output, evidence and
last messages, its terminal, and a launch form. It works on a phone screen.

Open the address it prints: it carries a random token (kept in
$AGENTCTL_HOME/web.token, mode 0600) that the first load trades for a cookie
and removes from the address bar. Every request's Host and Origin are checked,
every change is a POST with a CSRF token, and answers are recorded in the
session's decisions.jsonl as "web from ADDRESS" beside this process. A change
from a process of this machine is relayed to the service with that process,
held to the rules of approve, send and attach: a session that reads the token
still cannot answer itself through the dashboard. One whose process this user
cannot see (another user's, or sshd's at an SSH tunnel's end) is refused.

From another device, tunnel to its socket (--socket PATH, then
ssh -L 7387:PATH HOST; a tunnel to its port shows everything but changes
nothing) or, to bind beyond loopback, give TLS (--tls-cert/--tls-key, or
--tls-generate, whose fingerprint is printed) and --expose.

To keep it on, let the service serve it: "web": {"listen": "127.0.0.1:7387"}
in config.json (with allow_hosts, tls_cert, tls_key, tls_generate, expose,
socket as the flags). 'agentctl web' then prints the address to open the service's
dashboard and exits (--url prints just that), unless --listen or TLS flags ask
for one of its own.

--hosts all (or -H a,b,local) shows the sessions of several hosts in one list,
each naming its host; a session's page is /s/HOST/ID and what is done there
goes to its host; a host that does not answer is a warning.`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			h, err := cli.userHome()
			if err != nil {
				return err
			}
			cfg.Home = h
			hs, several, err := cli.targetHosts(hostList)
			if err != nil {
				return err
			}
			svc, isService := hs[0].API.(hosts.Service)
			if several || !isService {
				// Several hosts as one: ids HOST/ID, each answer sent to
				// its session's host, a host that does not answer a
				// warning.
				cfg.Client = &hosts.View{Hosts: hs, Cache: cli.lastSeen(), Timeout: hostTimeout}
				// A view starts nothing; a restart from it carries this
				// environment, as `agentctl restart` does to any host.
				cfg.Env = cli.environ()
				return serveWeb(ctx, cli.out, cli.errOut, cfg)
			}
			c := svc.ServiceClient()
			cfg.Client = c
			if c.Remote() {
				if printURL {
					return usageError{fmt.Errorf("--url prints this machine's service's dashboard; for host %s, run it there", hs[0].Name)}
				}
				return serveWeb(ctx, cli.out, cli.errOut, cfg)
			}
			// Sessions started from the page get this environment, as
			// from `agentctl run`; another host's service uses its own.
			cfg.Env = cli.environ()
			own := cmd.Flags().Changed("listen") || cmd.Flags().Changed("tls-cert") || cmd.Flags().Changed("tls-generate") || cmd.Flags().Changed("expose") || cmd.Flags().Changed("socket")
			if printURL || !own {
				served, err := servedWeb(ctx, cli.out, cli.errOut, c, h, printURL)
				if served || err != nil {
					return err
				}
			}
			return serveWeb(ctx, cli.out, cli.errOut, cfg)
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Listen, "listen", web.DefaultListen, "address to listen on (port 0 picks one)")
	f.StringSliceVar(&cfg.AllowHosts, "allow-host", nil, "a further name the browser uses to reach it (a tailnet name, a tunnel's localhost:PORT)")
	f.StringVar(&cfg.TLSCert, "tls-cert", "", "serve HTTPS with this certificate (PEM)")
	f.StringVar(&cfg.TLSKey, "tls-key", "", "the certificate's key (PEM)")
	f.BoolVar(&cfg.TLSGenerate, "tls-generate", false, "serve HTTPS with a self-signed certificate made once under $AGENTCTL_HOME")
	f.BoolVar(&cfg.Expose, "expose", false, "allow --listen beyond loopback (needs TLS)")
	f.StringVar(&cfg.Socket, "socket", "", "serve it on this unix socket too, for an SSH tunnel to forward to (ssh -L 7387:SOCKET HOST)")
	f.BoolVar(&printURL, "url", false, "print the address to open the dashboard the service serves (config.json \"web\"), and exit")
	f.StringVar(&hostList, "hosts", "", "show the sessions of several hosts: `all` (this machine and every named host) or a comma-separated list; ids are then HOST/ID")
	return cmd
}

// servedWeb prints the address to open the dashboard the service of home h
// serves (config.json's "web"), with the token: served says it does, and
// nothing more is to be done. With only, that address is all that is
// printed, and a service that serves none is an error.
func servedWeb(ctx context.Context, out, errOut io.Writer, c *client.Client, h home.Home, only bool) (served bool, err error) {
	st, err := c.DaemonStatus(ctx)
	if err != nil {
		if only {
			return false, err
		}
		// No service to ask (AGENTCTL_NO_AUTOSTART): the pages say so.
		return false, nil
	}
	switch {
	case st.Web != nil && st.Web.URL != "":
	case only && st.Web != nil:
		return false, fmt.Errorf("the service does not serve the dashboard: %s", st.Web.Error)
	case only:
		return false, errors.New(`the service does not serve the dashboard: add "web": {"listen": "127.0.0.1:7387"} to config.json and restart it (agentctl daemon restart), or run agentctl web`)
	default:
		if st.Web != nil {
			fmt.Fprintf(errOut, "agentctl web: the service's dashboard is not served (%s); serving one here\n", st.Web.Error)
		}
		return false, nil
	}
	u, err := web.OpenURL(st.Web.URL, h)
	if err != nil {
		return false, err
	}
	if only {
		fmt.Fprintln(out, u)
		return true, nil
	}
	fmt.Fprintf(out, "agentctl web: the service serves the dashboard: open %s\n", u)
	if fp := st.Web.Fingerprint; fp != "" {
		fmt.Fprintf(out, "agentctl web: certificate SHA-256 fingerprint %s\n", fp)
	}
	return true, nil
}

// serveWeb runs the dashboard until ctx ends, printing where to open it
// on out and its request log on logw.
func serveWeb(ctx context.Context, out, logw io.Writer, cfg web.Config) error {
	cfg.Log = slog.New(slog.NewTextHandler(logw, nil))
	s, err := web.New(cfg)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "agentctl web: open %s\n", s.URL())
	if fp := s.Fingerprint(); fp != "" {
		fmt.Fprintf(out, "agentctl web: certificate SHA-256 fingerprint %s\n", fp)
	}
	return s.Run(ctx)
}
