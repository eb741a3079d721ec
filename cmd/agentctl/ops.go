package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/user"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/client"
	"github.com/agentctl/agentctl/hosts"
	"github.com/agentctl/agentctl/internal/text"
)

func newLockCmd(cli *cli) *cobra.Command {
	var by, reason string
	var force bool
	cmd := &cobra.Command{
		Use:   "lock DIR",
		Short: "Lock a directory so agents are not launched into it",
		Long: `Take a manual lock on DIR (symlinks resolved, so every spelling of it is one
lock). While it holds, launching a session into DIR fails with a message
naming you and your reason, unless the launch passes --force. A manual lock
never expires: 'agentctl unlock DIR' releases it.

Sessions take automatic locks on their directory themselves (agents always,
plain commands with run --lock); those are released the moment the session's
process is gone.`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			dir, err := absPath(a[0])
			if err != nil {
				return err
			}
			if by == "" {
				if u, err := user.Current(); err == nil {
					by = u.Username
				}
			}
			c, err := cli.newClient()
			if err != nil {
				return err
			}
			l, err := c.Lock(cmd.Context(), api.LockRequest{Directory: dir, By: by, Reason: reason, Force: force})
			if err != nil {
				return err
			}
			fmt.Fprintf(cli.out, "Locked: %s\n", text.Clean(l.Directory))
			return nil
		},
	}
	cmd.Flags().StringVar(&by, "by", "", "who holds the lock (default: your user name)")
	cmd.Flags().StringVar(&reason, "reason", "", "why, shown to whoever is refused")
	cmd.Flags().BoolVar(&force, "force", false, "replace another manual lock on the directory")
	return cmd
}

func newUnlockCmd(cli *cli) *cobra.Command {
	return &cobra.Command{
		Use:   "unlock DIR",
		Short: "Release a directory's manual lock",
		Args:  args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			dir, err := absPath(a[0])
			if err != nil {
				return err
			}
			c, err := cli.newClient()
			if err != nil {
				return err
			}
			l, err := c.Unlock(cmd.Context(), dir)
			if err != nil {
				return err
			}
			fmt.Fprintf(cli.out, "Unlocked: %s\n", text.Clean(l.Directory))
			return nil
		},
	}
}

func newLocksCmd(cli *cli) *cobra.Command {
	return readCmd(cli, "locks", "List directory locks", (*client.Client).Locks, printLocks)
}

// readCmd is a read command without arguments: ask the service, then print
// JSON with --json or a table.
func readCmd[T any](cli *cli, use, short string, fetch func(*client.Client, context.Context) (T, error), table func(io.Writer, T, time.Time, tableOptions)) *cobra.Command {
	var asJSON bool
	var to tableOptions
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := cli.newClient()
			if err != nil {
				return err
			}
			v, err := fetch(c, cmd.Context())
			if err != nil {
				return err
			}
			if asJSON {
				// A list is an object naming what it holds, as list's
				// {"sessions": [...]}: {"locks": [...]}.
				return printJSON(cli.out, map[string]any{jsonListKey(use): v})
			}
			table(cli.out, v, time.Now(), to)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	to.register(cmd)
	return cmd
}

func printLocks(w io.Writer, ls []api.Lock, now time.Time, to tableOptions) {
	if len(ls) == 0 {
		if !to.noHeaders {
			fmt.Fprintln(w, "No active locks")
		}
		return
	}
	tw := to.newTable(w)
	tw.header("DIRECTORY\tTYPE\tLOCKED BY\tREASON\tSINCE")
	for _, l := range ls {
		who := l.LockedBy
		if l.Type == "auto" {
			who = fmt.Sprintf("session %s (pid %d)", shortID(l.SessionID), l.PID)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", text.Clean(l.Directory), text.Clean(l.Type), dash(text.Clean(who)), dash(text.Clean(l.Reason)), ago(now, l.LockedAt))
	}
	tw.Flush()
}

func newFuseCmd(cli *cli) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "fuse",
		Short: "Set, extend or cancel a directory's fuse (a timer that runs a script or posts a webhook)",
		Long: `A fuse is a timer on a directory, one per directory. When it runs out, its
script runs in the directory (through /bin/sh -c, at most 2 minutes, output in
$AGENTCTL_HOME/fuses.log) and/or its webhook is posted, and a fuse.expired
event goes out (and to the configured webhook_url). Fuses survive a service
restart with their remaining time; one that ran out while the service was down
fires when it starts. Each fuse fires once.`,
	}
	cmd.AddCommand(newFuseSetCmd(cli), newFuseExtendCmd(cli), newFuseCancelCmd(cli), newFusesCmd(cli, "list"))
	return cmd
}

func newFuseSetCmd(cli *cli) *cobra.Command {
	var req api.FuseRequest
	var ttl time.Duration
	cmd := &cobra.Command{
		Use:   "set DIR --ttl D",
		Short: "Set DIR's fuse, replacing the one it had",
		Args:  args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			if ttl <= 0 {
				return usageError{errors.New("fuse set: --ttl is required and must be positive (e.g. --ttl 30m)")}
			}
			dir, err := absPath(a[0])
			if err != nil {
				return err
			}
			req.Directory, req.TTL = dir, ttl.String()
			c, err := cli.newClient()
			if err != nil {
				return err
			}
			f, err := c.SetFuse(cmd.Context(), req)
			if err != nil {
				return err
			}
			printFuseLine(cli, "Fuse set", f)
			return nil
		},
	}
	fl := cmd.Flags()
	fl.DurationVar(&ttl, "ttl", 0, "time until the fuse expires (e.g. 30m, 2h)")
	fl.StringVar(&req.Script, "on-expire-script", "", "command run by /bin/sh -c in DIR when the fuse expires")
	fl.StringVar(&req.Webhook, "on-expire-webhook", "", "URL posted when the fuse expires")
	fl.StringVar(&req.Label, "label", "", "a label shown in 'agentctl fuses' and events")
	fl.StringVar(&req.SessionID, "session", "", "a session id the fuse is about (informational)")
	return cmd
}

func newFuseExtendCmd(cli *cli) *cobra.Command {
	var ttl time.Duration
	cmd := &cobra.Command{
		Use:   "extend DIR [--ttl D]",
		Short: "Re-arm DIR's fuse from now, for --ttl or its own ttl",
		Args:  args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			if ttl < 0 {
				return usageError{errors.New("fuse extend: --ttl must be positive")}
			}
			dir, err := absPath(a[0])
			if err != nil {
				return err
			}
			req := api.FuseRequest{Directory: dir}
			if ttl > 0 {
				req.TTL = ttl.String()
			}
			c, err := cli.newClient()
			if err != nil {
				return err
			}
			f, err := c.ExtendFuse(cmd.Context(), req)
			if err != nil {
				return err
			}
			printFuseLine(cli, "Fuse extended", f)
			return nil
		},
	}
	cmd.Flags().DurationVar(&ttl, "ttl", 0, "new time until the fuse expires (default: the fuse's own ttl)")
	return cmd
}

func newFuseCancelCmd(cli *cli) *cobra.Command {
	return &cobra.Command{
		Use:   "cancel DIR",
		Short: "Remove DIR's fuse without firing it",
		Args:  args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			dir, err := absPath(a[0])
			if err != nil {
				return err
			}
			c, err := cli.newClient()
			if err != nil {
				return err
			}
			f, err := c.CancelFuse(cmd.Context(), dir)
			if err != nil {
				return err
			}
			fmt.Fprintf(cli.out, "Fuse cancelled: %s\n", text.Clean(f.Directory))
			return nil
		},
	}
}

func printFuseLine(cli *cli, what string, f api.Fuse) {
	fmt.Fprintf(cli.out, "%s: %s expires in %s (at %s)\n", what, text.Clean(f.Directory), fuseRemaining(time.Until(f.ExpiresAt)), f.ExpiresAt.Local().Format(time.RFC3339))
}

// jsonListKey names the list a read command prints.
func jsonListKey(use string) string {
	if use == "list" { // fuse list
		return "fuses"
	}
	return use
}

func newFusesCmd(cli *cli, use string) *cobra.Command {
	return readCmd(cli, use, "List fuses, soonest first", (*client.Client).Fuses, printFuses)
}

func printFuses(w io.Writer, fs []api.Fuse, now time.Time, to tableOptions) {
	if len(fs) == 0 {
		if !to.noHeaders {
			fmt.Fprintln(w, "No active fuses")
		}
		return
	}
	tw := to.newTable(w)
	tw.header("DIRECTORY\tLABEL\tEXPIRES IN\tON EXPIRE")
	for _, f := range fs {
		action := ""
		if f.OnExpire != nil {
			switch {
			case f.OnExpire.Script != "" && f.OnExpire.Webhook != "":
				action = "script, webhook"
			case f.OnExpire.Script != "":
				action = "script: " + oneLine(f.OnExpire.Script, 40)
			default:
				action = "webhook: " + f.OnExpire.Webhook
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", text.Clean(f.Directory), dash(text.Clean(f.Label)), fuseRemaining(f.ExpiresAt.Sub(now)), dash(text.Clean(action)))
	}
	tw.Flush()
}

// fuseRemaining writes a time left the way the old tool did: "expired",
// "42s", "7m", "2h 5m".
func fuseRemaining(d time.Duration) string {
	switch {
	case d < 0:
		return "expired"
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	}
	return fmt.Sprintf("%dh %dm", int(d.Hours()), int(d.Minutes())%60)
}

func newEventsCmd(cli *cli) *cobra.Command {
	var types []string
	var since, hostList string
	cmd := &cobra.Command{
		Use:   "events",
		Short: "Stream the service's events as NDJSON",
		Long: `Print the service's events, one JSON object per line, as they happen:
session.started, session.stopped (with the exit code or signal in its session
object), session.lost, session.idle and session.busy (where an agent reports
it), session.waiting (a session waits for a person; meta says why),
session.resumed, session.limited (a usage limit ended a session's turn; meta
names the provider, window and resets_at), session.oom (the OOM killer ended a process of a session at
its --memory-max), lock.acquired, lock.released, fuse.set, fuse.extended, fuse.cancelled,
fuse.expired and hook.failed. Each has a seq number; --since SEQ replays the
events after it from the service's journal, --since 10m those of the last ten
minutes. When the service restarts, events reconnects and carries on from the
last event it printed, missing none. A line of type events.gap says events
were no longer in the journal. With --hosts, the streams of several hosts are
merged, each event naming its "host" (and its session's handle HOST/ID); a
host whose stream breaks is a warning, and reconnects by itself.

  agentctl events --type session.stopped | jq -r '.session.exit_code'`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if _, err := api.ParseEventFilter(types); err != nil {
				return usageError{err}
			}
			if since != "" {
				if _, err := api.ParseEventsSince(since, time.Now()); err != nil {
					return usageError{err}
				}
			}
			o := client.EventOptions{Since: since, Types: types}
			hs, several, err := cli.targetHosts(hostList)
			if err != nil {
				return err
			}
			if several {
				return mergedEvents(cmd.Context(), cli, hs, o, cli.out)
			}
			return eventsOn(cmd.Context(), cli, hs[0], o, cli.out)
		},
	}
	cmd.Flags().StringVar(&hostList, "hosts", "", "merge the events of several hosts: `all` or a comma-separated list (build,gpu,local); each event names its host")
	cmd.RegisterFlagCompletionFunc("hosts", cli.completeHosts)
	cmd.Flags().StringArrayVar(&types, "type", nil, "only events of this type, or family (lock.*) (repeatable)")
	cmd.Flags().StringVar(&since, "since", "", "first replay the events after this sequence number, or of this duration (10m), or since this RFC 3339 time")
	cmd.Flags().Bool("json", true, "print NDJSON (the only format; accepted for compatibility)")
	return cmd
}

// eventsOn prints host h's events until ctx ends, the way h streams them.
func eventsOn(ctx context.Context, cli *cli, h hosts.Host, o client.EventOptions, w io.Writer) error {
	switch src := h.API.(type) {
	case hosts.Service:
		return streamEvents(ctx, src.ServiceClient(), o, w)
	case hosts.EventSource:
		// Another kind of host: as a merged stream, which reopens a
		// stream that breaks off by itself.
		return mergedEvents(ctx, cli, []hosts.Host{h}, o, w)
	}
	return cannot(h, "stream events")
}

// mergedEvents prints the events of hosts hs, each naming its host,
// until ctx ends; a host whose stream breaks off is a warning, and is
// reopened.
func mergedEvents(ctx context.Context, cli *cli, hs []hosts.Host, o client.EventOptions, w io.Writer) error {
	enc := json.NewEncoder(w)
	err := hosts.Events(ctx, hs, o, func(e api.Event) error { return enc.Encode(e) },
		func(h hosts.Host, err error) {
			if err != nil {
				cli.warn("host %s: %v; reconnecting", h.Name, err)
			}
		})
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// streamEvents prints events until ctx ends, reconnecting after the last
// event printed whenever the stream breaks (a service restart).
func streamEvents(ctx context.Context, c *client.Client, o client.EventOptions, w io.Writer) error {
	enc := json.NewEncoder(w)
	var last uint64
	known := false
	for {
		err := c.Events(ctx, o, func(after uint64) {
			if !known {
				last, known = after, true
			}
		}, func(e api.Event) error {
			if e.Seq > 0 {
				last = e.Seq
			}
			return enc.Encode(e)
		})
		if ctx.Err() != nil {
			return nil
		}
		if !known {
			return err // never connected: say why
		}
		o.Since = strconv.FormatUint(last, 10)
		if err := waitForService(ctx, c); err != nil {
			return nil
		}
	}
}

// waitForService waits for the service's socket to answer again, without
// starting it: a stopped service is the user's choice.
func waitForService(ctx context.Context, c *client.Client) error {
	probe := c.WithoutAutostart()
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	for {
		if _, err := probe.DaemonStatus(ctx); err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}
