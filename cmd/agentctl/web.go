package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/agentctl/agentctl/web"
)

func newWebCmd(cli *cli) *cobra.Command {
	cfg := web.Config{}
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
session's decisions.jsonl as "web from ADDRESS" beside this process.

From another device, tunnel to it (ssh -L 7387:127.0.0.1:7387 HOST) or, to bind
beyond loopback, give TLS (--tls-cert/--tls-key, or --tls-generate, whose
fingerprint is printed) and --expose.`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := cli.newClient()
			if err != nil {
				return err
			}
			if cfg.Home, err = cli.userHome(); err != nil {
				return err
			}
			cfg.Client = c
			if !c.Remote() {
				// Sessions started from the page get this environment, as
				// from `agentctl run`; another host's service uses its own.
				cfg.Env = cli.environ()
			}
			return serveWeb(cmd.Context(), cli.out, cli.errOut, cfg)
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Listen, "listen", web.DefaultListen, "address to listen on (port 0 picks one)")
	f.StringSliceVar(&cfg.AllowHosts, "allow-host", nil, "a further name the browser uses to reach it (a tailnet name, a tunnel's localhost:PORT)")
	f.StringVar(&cfg.TLSCert, "tls-cert", "", "serve HTTPS with this certificate (PEM)")
	f.StringVar(&cfg.TLSKey, "tls-key", "", "the certificate's key (PEM)")
	f.BoolVar(&cfg.TLSGenerate, "tls-generate", false, "serve HTTPS with a self-signed certificate made once under $AGENTCTL_HOME")
	f.BoolVar(&cfg.Expose, "expose", false, "allow --listen beyond loopback (needs TLS)")
	return cmd
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
