package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/debug"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/client"
	"github.com/agentctl/agentctl/cmd/agentctl/internal/serve"
	"github.com/agentctl/agentctl/proc"
)

func newDaemonCmd(cli *cli) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "daemon",
		Short: "Run or manage the agentctl service",
		Long: `The agentctl service spawns and supervises sessions. 'daemon run' runs it in
the foreground (what a systemd or launchd unit executes); 'daemon start',
'stop', 'restart' and 'status' manage a background instance. Stopping or
restarting the service never stops a session.`,
	}
	cmd.AddCommand(newDaemonRunCmd(cli), newDaemonStartCmd(cli), newDaemonStopCmd(cli), newDaemonRestartCmd(cli), newDaemonStatusCmd(cli))
	thisMachineOnly(cli, cmd, "run")
	return cmd
}

// serviceGCPercent is the service's GOGC unless the environment sets one.
const serviceGCPercent = 50

func newDaemonRunCmd(cli *cli) *cobra.Command {
	return &cobra.Command{
		Use:   "run",
		Short: "Run the service in the foreground",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			h, err := cli.userHome()
			if err != nil {
				return err
			}
			// The service lives long and keeps the stores' parsed data:
			// its heap may grow to half again what it holds, not twice (a
			// 50,000-session store: 210 MB rather than 256, for a few ms
			// more per list). GOGC, when set, decides.
			if _, set := os.LookupEnv("GOGC"); !set {
				debug.SetGCPercent(serviceGCPercent)
			}
			logger := slog.New(slog.NewTextHandler(cli.errOut, nil))
			return serve.Service(cmd.Context(), h, buildVersion(), logger)
		},
	}
}

func newDaemonStartCmd(cli *cli) *cobra.Command {
	return &cobra.Command{
		Use:   "start",
		Short: "Start the service in the background (if it is not running)",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return startDaemon(cli, cmd)
		},
	}
}

func newDaemonStopCmd(cli *cli) *cobra.Command {
	return &cobra.Command{
		Use:   "stop",
		Short: "Stop the service; sessions keep running",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return stopDaemon(cli, cmd)
		},
	}
}

// startDaemon starts the service (through its unit when one is installed)
// and says which pid runs it.
func startDaemon(cli *cli, cmd *cobra.Command) error {
	c, err := cli.newClient()
	if err != nil {
		return err
	}
	started, err := c.Start(cmd.Context())
	if err != nil {
		return err
	}
	st, err := c.DaemonStatus(cmd.Context())
	if err != nil {
		return err
	}
	if !started {
		fmt.Fprintf(cli.out, "agentctl service already running, pid %d\n", st.PID)
		return nil
	}
	fmt.Fprintf(cli.out, "agentctl service running, pid %d\n", st.PID)
	return nil
}

func stopDaemon(cli *cli, cmd *cobra.Command) error {
	h, err := cli.userHome()
	if err != nil {
		return err
	}
	c := client.New(h, "", false)
	st, err := c.DaemonStatus(cmd.Context())
	if err != nil {
		if errors.Is(err, client.ErrNoService) {
			fmt.Fprintln(cli.out, "agentctl service is not running")
			return nil
		}
		return err
	}
	// Its identity before it goes: the lock is let go just before the
	// process ends, and stop returns once it has.
	svc, lookErr := proc.Lookup(st.PID)
	if _, err := c.Shutdown(cmd.Context()); err != nil {
		return err
	}
	ctx, cancel := contextWithTimeout(cmd, 15*time.Second)
	defer cancel()
	err = c.WaitStopped(ctx)
	if err == nil && lookErr == nil {
		err = proc.WaitExit(ctx, svc.Identity)
	}
	if err != nil {
		return fmt.Errorf("the service (pid %d) did not exit within 15s", st.PID)
	}
	fmt.Fprintf(cli.out, "agentctl service stopped (pid %d); sessions keep running\n", st.PID)
	return nil
}

func newDaemonRestartCmd(cli *cli) *cobra.Command {
	return &cobra.Command{
		Use:   "restart",
		Short: "Restart the service; sessions keep running",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := stopDaemon(cli, cmd); err != nil {
				return err
			}
			return startDaemon(cli, cmd)
		},
	}
}

func newDaemonStatusCmd(cli *cli) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show whether the service runs, its pid, version, uptime and how it watches the agents' stores",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			h, err := cli.userHome()
			if err != nil {
				return err
			}
			c := client.New(h, "", false)
			st, err := c.DaemonStatus(cmd.Context())
			if err != nil {
				if errors.Is(err, client.ErrNoService) {
					if asJSON {
						printJSON(cli.out, map[string]any{"running": false, "socket": h.Socket()})
					} else {
						fmt.Fprintf(cli.out, "agentctl service is not running (socket %s)\n", h.Socket())
					}
					return exitError{code: 1}
				}
				return err
			}
			if asJSON {
				return printJSON(cli.out, struct {
					Running bool `json:"running"`
					apiDaemonStatus
				}{true, apiDaemonStatus(st)})
			}
			fmt.Fprintf(cli.out, "agentctl service running\n  pid      %d\n  version  %s\n  socket   %s\n  uptime   %s\n  sessions %d running\n",
				st.PID, st.Version, st.Socket, (time.Duration(st.UptimeS) * time.Second).String(), st.SessionsRunning)
			if st.Watch != nil {
				printWatchStatus(cli.out, *st.Watch)
			}
			if st.Cgroups != nil {
				fmt.Fprintf(cli.out, "  per-session cgroups: %s\n", st.Cgroups.Summary)
			}
			printWebStatus(cli.out, st.Web)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// printWebStatus says where the service serves the web dashboard (never
// with its token: agentctl web prints the address to open), or why not.
func printWebStatus(w io.Writer, st *api.WebStatus) {
	switch {
	case st == nil:
	case st.URL != "":
		fmt.Fprintf(w, "  web      %s (open it with: agentctl web)\n", st.URL)
		if st.Fingerprint != "" {
			fmt.Fprintf(w, "           certificate SHA-256 fingerprint %s\n", st.Fingerprint)
		}
	default:
		fmt.Fprintf(w, "  web      not served: %s\n", st.Error)
	}
}

// printWatchStatus says how the service follows the agents' stores, and
// which folders it reads by stat on every query instead.
func printWatchStatus(w io.Writer, ws api.WatchStatus) {
	if ws.Mode != "inotify" {
		reason := ""
		if ws.Reason != "" {
			reason = ": " + ws.Reason
		}
		fmt.Fprintf(w, "  stores   read by stat on every query%s\n", reason)
		return
	}
	limit := ""
	if ws.Limit > 0 {
		limit = fmt.Sprintf(" (limit %d per user)", ws.Limit)
	}
	fmt.Fprintf(w, "  stores   %d folders watched (inotify)%s\n", ws.Folders, limit)
	if ws.Unwatched > 0 {
		fmt.Fprintf(w, "           %d folders not watched, read by stat on every query:\n", ws.Unwatched)
		for _, f := range ws.Failures {
			fmt.Fprintf(w, "             %s: %s\n", f.Folder, f.Reason)
		}
		if n := ws.Unwatched - len(ws.Failures); n > 0 {
			fmt.Fprintf(w, "             and %d more\n", n)
		}
	}
	if ws.Overflows > 0 {
		last := ""
		if ws.LastOverflow != nil {
			last = ", last at " + ws.LastOverflow.Local().Format(time.DateTime)
		}
		fmt.Fprintf(w, "           the event queue overflowed %d times%s (every folder read again by stat once)\n", ws.Overflows, last)
	}
}

func newPodSessionCmd(cli *cli) *cobra.Command {
	var specFile string
	var transcript int
	var explain bool
	cmd := &cobra.Command{
		Use:   "pod-session SESSION_DIR",
		Short: "A cluster session as its pod sees it (run in the pod through the API's exec)",
		Long: `A cluster session as the agentctl in its pod derives it: the launch record,
the agent's liveness and the agent's own session files there, read with the
agent's environment (the container's, and the launch spec's in --spec).
Printed as one JSON object; the Kubernetes helper runs it through the API's
exec for status, explain and peek of an agent on a cluster.`,
		Hidden: true,
		Args:   args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			return serve.PodSession(cmd.Context(), cli.out, a[0], specFile, transcript, explain)
		},
	}
	cmd.Flags().StringVar(&specFile, "spec", "", "the launch spec `FILE` (the agent's environment)")
	cmd.Flags().IntVar(&transcript, "transcript", 0, "add the last `N` messages of the agent's transcript")
	cmd.Flags().BoolVar(&explain, "explain", false, "add the evidence of the status")
	cmd.MarkFlagRequired("spec")
	return cmd
}

func newShimCmd(cli *cli) *cobra.Command {
	var specFile string
	cmd := &cobra.Command{
		Use:   "shim SESSION_DIR",
		Short: "Per-session monitor (started by the service, or as a container's entry point)",
		Long: `Per-session monitor, started by the service.

With --spec FILE it is a container's entry point (PID 1): it reads the launch
spec from FILE, keeps SESSION_DIR inside the container, copies the agent's
output to its standard output, and exits with the agent's exit code.`,
		Hidden: true,
		Args:   args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			code := 0
			if specFile != "" {
				code = serve.ShimInContainer(a[0], specFile)
			} else {
				code = serve.Shim(a[0])
			}
			if code != 0 {
				return exitError{code: code}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&specFile, "spec", "", "run as a container's entry point with the launch spec in `FILE`")
	return cmd
}
