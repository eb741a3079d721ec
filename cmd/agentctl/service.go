package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/agentctl/agentctl/service"
)

func newServiceCmd(cli *cli) *cobra.Command {
	var req service.Request
	cmd := &cobra.Command{
		Use:   "service",
		Short: "Install agentctl as a systemd or launchd service",
		Long: `Installs the agentctl service as a unit of the machine's service manager, so
it runs from login (or boot) on and comes back after a crash: a systemd user
unit on Linux, a LaunchAgent on macOS. With --system it is a system unit
(LaunchDaemon) that runs as --user NAME; that needs root.

The unit runs 'agentctl daemon run' with the AGENTCTL_HOME this command sees
($AGENTCTL_HOME, default ~/.agentctl of the account the service runs as), so
the CLI talks to it instead of starting a service of its own. Stopping or
restarting the unit never stops a session.`,
	}
	cmd.PersistentFlags().BoolVar(&req.System, "system", false, "a system service, run as --user NAME (needs root)")
	cmd.PersistentFlags().StringVar(&req.User, "user", "", "with --system: the account the service runs as (default: $SUDO_USER)")
	controller := func() (service.Spec, service.Controller, error) {
		spec, err := service.Resolve(req, service.OSEnvironment())
		if err != nil {
			return spec, nil, usageError{err}
		}
		c, err := service.New(spec)
		return spec, c, err
	}
	cmd.AddCommand(
		newServiceInstallCmd(cli, controller),
		newServiceUninstallCmd(cli, controller),
		newServiceActionCmd(cli, controller, "start", "Start the installed service", service.Controller.Start),
		newServiceActionCmd(cli, controller, "stop", "Stop the installed service; sessions keep running", service.Controller.Stop),
		newServiceActionCmd(cli, controller, "restart", "Restart the installed service; sessions keep running", service.Controller.Restart),
		newServiceStatusCmd(cli, controller),
	)
	thisMachineOnly(cli, cmd)
	return cmd
}

type serviceController func() (service.Spec, service.Controller, error)

func newServiceInstallCmd(cli *cli, controller serviceController) *cobra.Command {
	return &cobra.Command{
		Use:   "install",
		Short: "Install, enable and start the service",
		Long: `Writes the unit (replacing an older one of the same name), enables it, starts
it, and returns once it answers on its socket. An agentctl service already
running on the same AGENTCTL_HOME (auto-started by the CLI) is stopped
first; its sessions keep running. Running install again after moving or
upgrading the binary rewrites the unit.`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, c, err := controller()
			if err != nil {
				return err
			}
			res, err := c.Install(cmd.Context())
			if err != nil {
				return err
			}
			verb := "installed"
			if !res.Changed {
				verb = "already installed"
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "%s %s at %s\n", verb, describeUnit(res.Status), res.Status.UnitPath)
			fmt.Fprintf(w, "running, pid %d; AGENTCTL_HOME %s\n", res.Status.PID, res.Status.Home)
			for _, n := range res.Notes {
				fmt.Fprintf(w, "note: %s\n", n)
			}
			return nil
		},
	}
}

func newServiceUninstallCmd(cli *cli, controller serviceController) *cobra.Command {
	return &cobra.Command{
		Use:   "uninstall",
		Short: "Stop the service and remove its unit; sessions keep running",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, c, err := controller()
			if err != nil {
				return err
			}
			removed, err := c.Uninstall(cmd.Context())
			w := cmd.OutOrStdout()
			for _, p := range removed {
				fmt.Fprintf(w, "removed %s\n", p)
			}
			if err != nil {
				return err
			}
			if len(removed) == 0 {
				fmt.Fprintln(w, "the agentctl service was not installed")
				return nil
			}
			fmt.Fprintln(w, "agentctl service uninstalled; sessions keep running, and the CLI starts a service on demand again")
			return nil
		},
	}
}

func newServiceActionCmd(cli *cli, controller serviceController, name, short string, act func(service.Controller, context.Context) (service.Status, error)) *cobra.Command {
	return &cobra.Command{
		Use:   name,
		Short: short,
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, c, err := controller()
			if err != nil {
				return err
			}
			st, err := act(c, cmd.Context())
			if err != nil {
				return err
			}
			if st.Running {
				fmt.Fprintf(cmd.OutOrStdout(), "%s running, pid %d\n", describeUnit(st), st.PID)
			} else {
				fmt.Fprintf(cmd.OutOrStdout(), "%s %s\n", describeUnit(st), st.State)
			}
			return nil
		},
	}
}

func newServiceStatusCmd(cli *cli, controller serviceController) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show whether the service is installed and running, its unit file and pid",
		Long: `Shows whether the service is installed and running, its unit file, its pid,
and which process answers on the socket of this AGENTCTL_HOME. Exits 0 when
the service runs, 1 otherwise.`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, c, err := controller()
			if err != nil {
				return err
			}
			st, err := c.Status(cmd.Context())
			if err != nil && st.Unit == "" {
				return err
			}
			if asJSON {
				if perr := printJSON(cmd.OutOrStdout(), st); perr != nil {
					return perr
				}
			} else {
				printServiceStatus(cmd.OutOrStdout(), st)
			}
			if err != nil {
				return err
			}
			if !st.Running {
				return exitError{code: 1}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func describeUnit(st service.Status) string {
	kind := "user unit"
	switch {
	case st.Manager == "launchd" && st.Scope == service.ScopeSystem:
		kind = "LaunchDaemon"
	case st.Manager == "launchd":
		kind = "LaunchAgent"
	case st.Scope == service.ScopeSystem:
		kind = "system unit"
	}
	return fmt.Sprintf("%s %s %s", st.Manager, kind, st.Unit)
}

func printServiceStatus(w io.Writer, st service.Status) {
	fmt.Fprintf(w, "agentctl service (%s)\n", describeUnit(st))
	state := string(st.State)
	if st.Installed && st.Enabled {
		state += " (enabled)"
	} else if st.Installed {
		state += " (disabled)"
	}
	row := func(k, v string) { fmt.Fprintf(w, "  %-10s %s\n", k, v) }
	row("state", state)
	if st.PID > 0 {
		row("pid", fmt.Sprint(st.PID))
	}
	if st.UnitPath != "" {
		row("unit file", st.UnitPath)
	}
	if st.Scope == service.ScopeSystem {
		row("runs as", st.User)
	}
	if st.Home != "" {
		row("home", st.Home)
	}
	switch {
	case st.Socket == "":
	case st.SocketPID == 0:
		row("socket", st.Socket+": nobody answers")
	case st.SocketPID == st.PID:
		row("socket", st.Socket+": answered by the service")
	default:
		row("socket", fmt.Sprintf("%s: answered by pid %d, not by the unit (an auto-started service?)", st.Socket, st.SocketPID))
	}
	if st.Restarts != nil && *st.Restarts > 0 {
		row("restarts", fmt.Sprint(*st.Restarts))
	}
	if st.Detail != "" {
		row("detail", st.Detail)
	}
	if st.Installed {
		row("logs", st.Logs)
	}
}
