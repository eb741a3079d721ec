package main

import (
	"errors"
	"os"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/cmd/agentctl/internal/top"
	"github.com/agentctl/agentctl/hosts"
)

func newTopCmd(cli *cli) *cobra.Command {
	var o top.Options
	var since time.Duration
	var hostList string
	cmd := &cobra.Command{
		Use:   "top",
		Short: "A live, full-screen view of every session",
		Long: `A live view of every session: one row per session (sessions waiting for a
person first, then running ones, then those that ended), the status and
activity the service derives, CPU and memory, age and last activity, model,
tokens, cost, directory and group; a detail pane with the selected session's output,
followed live, or its last messages; and the actions: enter attaches (Ctrl-] comes
back), s stops (after y/n), r resumes with a message, i sends a line, l opens
the whole log in a pager, / filters, g groups, a shows ended sessions, ?
lists every key, q quits.

It reads one snapshot, then follows the service's event stream over one
connection, and reconnects by itself when the service restarts. The whole
list is read again every --refresh for what changes without an event
(tokens, cost, last activity, CPU and memory; the second line is the
machine's load and memory and what the running sessions take). Colours follow the terminal; NO_COLOR turns
them off (every state is also spelt out).

--hosts all (or -H a,b,local) shows the sessions of several hosts in one
view, each row's id HOST/ID; a host that does not answer is a warning, and
the sessions it had running when last seen show as unknown.`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			hs, several, err := cli.targetHosts(hostList)
			if err != nil {
				return err
			}
			svc, service := hs[0].API.(hosts.Service)
			if several || !service {
				// Another kind of host, alone, is a view over one host.
				view := &hosts.View{Hosts: hs, Cache: cli.lastSeen(), Timeout: hostTimeout}
				if _, err := view.List(cmd.Context(), api.ListOptions{}); err != nil {
					return err
				}
				o.Src = view
			} else {
				// The first request starts the service when allowed; after
				// that the view never starts one itself: a service stopped
				// on purpose stays stopped, and the view says it is
				// reconnecting.
				c := svc.ServiceClient()
				if _, err := c.List(cmd.Context(), api.ListOptions{}); err != nil {
					return err
				}
				o.Src = c.WithoutAutostart()
			}
			exe, err := cli.exe()
			if err != nil {
				return err
			}
			o.Exe = exe
			o.List = api.ListOptions{All: true, Since: since, Resources: true}
			o.Colour = cli.getenv("NO_COLOR") == "" && cli.getenv("TERM") != "dumb"
			o.Home, _ = os.UserHomeDir()
			if !term.IsTerminal(fdOf(cli.out)) || !term.IsTerminal(fdOf(cli.in)) {
				return usageError{errors.New("agentctl top needs a terminal; `agentctl list -w` works in a pipe")}
			}
			return top.Run(cmd.Context(), o)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&hostList, "hosts", "", "show the sessions of several hosts: `all` (this machine and every named host) or a comma-separated list; ids are then HOST/ID")
	cmd.RegisterFlagCompletionFunc("hosts", cli.completeHosts)
	fl.BoolVarP(&o.ShowEnded, "all", "a", false, "show ended sessions from the start (the a key toggles them)")
	fl.DurationVar(&since, "since", 24*time.Hour, "ended sessions of this recent past")
	fl.DurationVar(&o.Refresh, "refresh", 5*time.Second, "read the whole list again this often (0: only on events)")
	fl.StringVar(&o.Pager, "pager", "", "the pager for l (default: $PAGER, else less -R)")
	return cmd
}
