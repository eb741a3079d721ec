package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/client"
	"github.com/agentctl/agentctl/hosts"
	"github.com/agentctl/agentctl/internal/text"
)

// selection is how a command that acts on several sessions names them:
// handles (ids, unique prefixes, names), or --all, --group, --label.
type selection struct {
	all    bool
	group  string
	labels []string
	// confirm, when set, is asked before acting on the n sessions a
	// selection chose.
	confirm func(n int) (bool, error)
}

func (s *selection) register(cli *cli, cmd *cobra.Command, all string) {
	fl := cmd.Flags()
	fl.BoolVar(&s.all, "all", false, all)
	fl.StringVar(&s.group, "group", "", "every such session of group `G`")
	fl.StringArrayVar(&s.labels, "label", nil, "every such session with label `KEY=VALUE` (repeatable)")
	cmd.ValidArgsFunction = cli.completeSessions
	cmd.RegisterFlagCompletionFunc("group", cli.completeGroups)
}

// any reports whether a flag selects sessions.
func (s *selection) any() bool { return s.all || s.group != "" || len(s.labels) > 0 }

// targets returns the handles to act on: those given, or the launched
// sessions the flags select that want accepts. Giving both is a usage
// error, as is giving neither.
func (s *selection) targets(ctx context.Context, c client.Sessions, cmd *cobra.Command, given []string, want func(api.Session) bool) ([]string, error) {
	switch {
	case len(given) > 0 && s.any():
		return nil, usageError{fmt.Errorf("%s: give session ids or --all/--group/--label, not both", commandName(cmd))}
	case len(given) > 0:
		return given, nil
	case !s.any():
		return nil, usageError{fmt.Errorf("%s: which sessions? give one or more ids or names, or --all, --group G, --label K=V", commandName(cmd))}
	}
	for _, l := range s.labels {
		if k, _, ok := strings.Cut(l, "="); !ok || k == "" {
			return nil, usageError{fmt.Errorf("--label %q: want KEY=VALUE", l)}
		}
	}
	// Ended sessions of every age: --since reaches back a century.
	list, err := c.List(ctx, api.ListOptions{All: true, Group: s.group, Labels: s.labels, Since: 100 * 365 * 24 * time.Hour})
	if err != nil {
		return nil, err
	}
	var ids []string
	skipped := map[api.Status]int{}
	for _, sess := range list.Sessions {
		// Only what agentctl launched: an agent someone started in a
		// terminal is theirs.
		if sess.Origin != api.OriginLaunched {
			continue
		}
		if want(sess) {
			ids = append(ids, sess.ID)
		} else {
			skipped[sess.Status]++
		}
	}
	if len(ids) == 0 && len(skipped) > 0 {
		// Selected, but none in a state this command acts on: say so,
		// rather than "no session matches" and success.
		var parts []string
		n := 0
		for _, st := range slices.Sorted(maps.Keys(skipped)) {
			parts = append(parts, fmt.Sprintf("%d %s", skipped[st], st))
			n += skipped[st]
		}
		msg := fmt.Sprintf("%s: none of the %d sessions selected can be acted on (%s)", commandName(cmd), n, strings.Join(parts, ", "))
		if h := selectionHint(cmd.Name()); h != "" {
			msg += ": " + h
		}
		return nil, errors.New(msg)
	}
	return ids, nil
}

// selectionHint says which sessions a command given --all, --group or
// --label acts on, when none of those selected is one.
func selectionHint(cmdName string) string {
	switch cmdName {
	case "rm":
		return "rm removes ended sessions; --force stops running ones first"
	case "stop", "kill":
		return cmdName + " acts on running sessions"
	}
	return ""
}

// result is what one target's action gave.
type result struct {
	handle string
	sess   api.Session
	err    error
}

// forEach runs act on every target, a few at a time, and reports them in
// the order given: one failure does not stop the others. It returns an
// error naming every failed target (exit 1), after printing each failure.
func forEach(ctx context.Context, cli *cli, verb string, handles []string, act func(context.Context, string) (api.Session, error), show func(result)) error {
	if len(handles) == 0 {
		fmt.Fprintf(cli.errOut, "agentctl: %s: no session matches\n", verb)
		return nil
	}
	results := make([]result, len(handles))
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for i, h := range handles {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			sess, err := act(ctx, h)
			results[i] = result{handle: h, sess: sess, err: err}
		}()
	}
	wg.Wait()
	var failed []string
	var first error
	for _, r := range results {
		if r.err != nil {
			fmt.Fprintln(cli.errOut, text.CleanLines(fmt.Sprintf("agentctl: %s %s: %v", verb, r.handle, r.err)))
			failed = append(failed, r.handle)
			if first == nil {
				first = r.err
			}
			continue
		}
		show(r)
	}
	if len(failed) == 0 {
		return nil
	}
	if len(handles) == 1 {
		// One target: its error is the answer, with its own exit code.
		return printedError{err: first, quiet: true}
	}
	return printedError{err: fmt.Errorf("%s failed for %d of %d sessions: %s", verb, len(failed), len(handles), strings.Join(failed, " "))}
}

// printedError is a failure already told on standard error, piece by
// piece: run prints its summary unless quiet, and exits 1 (2 for a
// mistake in the request).
type printedError struct {
	err   error
	quiet bool // nothing more to print
}

func (e printedError) Error() string { return e.err.Error() }
func (e printedError) Unwrap() error { return e.err }

// showSessions prints each result as "ID STATUS", or as JSON: one object
// for one handle given, else {"sessions": [...]}.
// onTargets runs act on every session the arguments and the selection name
// (those pick accepts, for --all, --group and --label), several at once,
// and shows each result: the session, or only its id when idsOnly and not
// JSON. One failure does not stop the others; any makes the error.
func onTargets(cli *cli, cmd *cobra.Command, given []string, sel *selection, pick func(api.Session) bool, verb string, asJSON, idsOnly bool, do act) error {
	def, err := cli.defaultHost()
	if err != nil {
		return err
	}
	handles, err := sel.targets(cmd.Context(), def.API, cmd, given, pick)
	if err != nil {
		return err
	}
	if sel.confirm != nil && len(handles) > 0 {
		ok, err := sel.confirm(len(handles))
		if err != nil {
			return err
		}
		if !ok {
			return printedError{err: errors.New("nothing " + verb + ": not confirmed")}
		}
	}
	show, done := showSessions(cli, asJSON, len(given) == 1)
	if idsOnly && !asJSON {
		show = func(r result) { fmt.Fprintln(cli.out, r.sess.ID) }
	}
	route, err := cli.routeHandles(def, handles)
	if err != nil {
		return err
	}
	err = forEach(cmd.Context(), cli, verb, handles, func(ctx context.Context, h string) (api.Session, error) {
		return do(ctx, route[h].host, route[h].id)
	}, show)
	if derr := done(); err == nil {
		err = derr
	}
	return err
}

// graceTimeout is --timeout as a stop request carries it: "" when not
// given (the default grace), a usage error when negative.
func graceTimeout(cmd *cobra.Command, timeout time.Duration) (string, error) {
	switch f := cmd.Flags().Lookup("timeout"); {
	case timeout < 0:
		return "", usageError{fmt.Errorf("--timeout %s: a grace period cannot be negative (0 kills at once)", timeout)}
	case f.Changed:
		return timeout.String(), nil
	}
	return "", nil
}

func showSessions(cli *cli, asJSON, one bool) (func(result), func() error) {
	var all []api.Session
	show := func(r result) {
		if asJSON {
			all = append(all, r.sess)
			return
		}
		line := r.sess.ID + " " + statusText(&r.sess)
		if r.sess.OOM {
			line += " oom"
		}
		if n := r.sess.StoppedProcesses; n != nil {
			// What a stop ended: every process the session had.
			line += fmt.Sprintf(" (%d %s ended)", *n, map[bool]string{true: "process", false: "processes"}[*n == 1])
		}
		fmt.Fprintln(cli.out, line)
	}
	done := func() error {
		if !asJSON {
			return nil
		}
		if one {
			if len(all) == 1 {
				return printJSON(cli.out, all[0])
			}
			return nil
		}
		if all == nil {
			all = []api.Session{}
		}
		return printJSON(cli.out, api.SessionList{Sessions: all})
	}
	return show, done
}

func running(s api.Session) bool { return !s.Status.Ended() }

func newStopCmd(cli *cli) *cobra.Command {
	var req api.StopRequest
	var timeout time.Duration
	var asJSON bool
	var sel selection
	cmd := &cobra.Command{
		Use:   "stop ID|NAME... | --all | --group G | --label K=V",
		Short: "Stop sessions and every process they started",
		Long: `Stop sessions: the agent's own graceful signal to its process group (SIGTERM
for most; SIGINT for Codex), then SIGKILL to the group and every descendant
after the grace period (--timeout), including tool commands that moved to
sessions of their own; where the session has a cgroup of its own (daemon
status says whether sessions get one), everything in it, whatever it did to
leave the tree. Returns once no process of the session remains, and says how
many processes it ended. --force kills at once.

Several sessions are stopped side by side; one that fails does not stop the
others, and the exit status is 1 if any failed (each is named). --all,
--group and --label select running sessions agentctl launched.`,
		Example: `  agentctl stop k3x9
  agentctl stop build-bot k3x9 q7rm
  agentctl stop --group review
  agentctl stop $(agentctl list -q --label team=infra)`,
		Args: args(cobra.ArbitraryArgs),
		RunE: func(cmd *cobra.Command, a []string) error {
			var err error
			if req.Timeout, err = graceTimeout(cmd, timeout); err != nil {
				return err
			}
			return onTargets(cli, cmd, a, &sel, running, "stop", asJSON, false, stopOn(req))
		},
	}
	cmd.Flags().BoolVar(&req.Force, "force", false, "SIGKILL at once")
	cmd.Flags().DurationVar(&timeout, "timeout", 10*time.Second, "grace period before SIGKILL (0: kill at once)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	sel.register(cli, cmd, "every running session agentctl launched")
	return cmd
}

// act is what a command does to one session of a host.
type act func(ctx context.Context, h hosts.Host, id string) (api.Session, error)

// stopOn stops a session, on any kind of host.
func stopOn(req api.StopRequest) act {
	return func(ctx context.Context, h hosts.Host, id string) (api.Session, error) {
		return h.API.Stop(ctx, id, req)
	}
}

// removeOn removes a session's records, where the host keeps any.
func removeOn(force bool) act {
	return func(ctx context.Context, h hosts.Host, id string) (api.Session, error) {
		r, ok := h.API.(hosts.Remover)
		if !ok {
			return api.Session{}, cannot(h, "remove sessions")
		}
		return r.Remove(ctx, id, force)
	}
}

// restartOn runs a session again, where the host can.
func restartOn(cli *cli, req api.RestartRequest) act {
	return func(ctx context.Context, h hosts.Host, id string) (api.Session, error) {
		r, ok := h.API.(hosts.Restarter)
		if !ok {
			return api.Session{}, cannot(h, "restart sessions")
		}
		s, err := r.Restart(ctx, id, req)
		if err == nil && len(s.EnvSet) > 0 {
			fmt.Fprintf(cli.errOut, "agentctl: %s runs with the --env of %s: %s\n", shortID(s.ID), id, strings.Join(s.EnvSet, ", "))
		}
		return s, err
	}
}

func newRmCmd(cli *cli) *cobra.Command {
	var force, asJSON, yes bool
	var sel selection
	cmd := &cobra.Command{
		Use:     "rm ID|NAME... | --all | --group G | --label K=V",
		Aliases: []string{"remove"},
		Short:   "Remove ended sessions' folders (records and logs)",
		Long: `Remove sessions' folders: their launch and exit records and their output log.
A running session is refused unless --force, which stops it first (SIGKILL
at once). Sessions agentctl did not launch have no folder here; their agent's
own store keeps them.

--all, --group and --label select ended sessions agentctl launched (with
--force, running ones too). One failure does not stop the others; the exit
status is 1 if any failed.`,
		Example: `  agentctl rm k3x9 q7rm
  agentctl rm --force build-bot
  agentctl rm --group review`,
		Args: args(cobra.ArbitraryArgs),
		RunE: func(cmd *cobra.Command, a []string) error {
			removable := func(s api.Session) bool { return force || s.Status.Ended() }
			if sel.any() && !yes && cli.askable() {
				// As prune does: a selection may reach many sessions.
				sel.confirm = func(n int) (bool, error) {
					return confirm(cmd.Context(), cli.in, cli.errOut, fmt.Sprintf("Remove the folders and logs of %d sessions?", n))
				}
			}
			return onTargets(cli, cmd, a, &sel, removable, "rm", asJSON, true, removeOn(force))
		},
	}
	cmd.Flags().BoolVarP(&force, "force", "f", false, "stop a running session first, then remove it")
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "do not ask (--all, --group, --label ask on a terminal)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the removed sessions as JSON")
	sel.register(cli, cmd, "every ended session agentctl launched")
	return cmd
}

func newRestartCmd(cli *cli) *cobra.Command {
	var req api.RestartRequest
	var timeout time.Duration
	var asJSON bool
	var sel selection
	cmd := &cobra.Command{
		Use:   "restart ID|NAME... | --all | --group G | --label K=V",
		Short: "Run sessions again: same command, directory, adapter and labels, new id",
		Long: `Run each session again as a new session: the same command (or agent and
prompt), working directory, model, name, group and labels, in your current
environment plus the --env values the session was given (kept in its folder,
readable by you alone; it says which). A running session is stopped first,
as 'stop' does.
The new session's restart_of names the old one. Prints the new ids.

--all, --group and --label select running sessions agentctl launched. One
failure does not stop the others; the exit status is 1 if any failed.`,
		Example: `  agentctl restart build-bot
  agentctl restart --group review`,
		Args: args(cobra.ArbitraryArgs),
		RunE: func(cmd *cobra.Command, a []string) error {
			var err error
			if req.Stop.Timeout, err = graceTimeout(cmd, timeout); err != nil {
				return err
			}
			req.Env = cli.environ()
			return onTargets(cli, cmd, a, &sel, running, "restart", asJSON, true, restartOn(cli, req))
		},
	}
	cmd.Flags().BoolVar(&req.Stop.Force, "force", false, "stop a running session with SIGKILL at once")
	cmd.Flags().DurationVar(&timeout, "timeout", 10*time.Second, "grace period before SIGKILL when stopping (0: kill at once)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the new sessions as JSON")
	sel.register(cli, cmd, "every running session agentctl launched")
	return cmd
}

func newPruneCmd(cli *cli) *cobra.Command {
	var older time.Duration
	var yes, dryRun, asJSON bool
	cmd := &cobra.Command{
		Use:   "prune",
		Short: "Remove ended sessions' folders",
		Long: `Remove the folders (records and logs) of sessions that ended more than
--older-than ago (default: all ended sessions). Running sessions are never
touched. On a terminal it says how many it would remove and asks first,
unless --yes; --dry-run names them and removes nothing. The service also
prunes sessions ended over 7 days ago by itself.`,
		Example: `  agentctl prune --dry-run
  agentctl prune --older-than 24h --yes`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := cli.newClient()
			if err != nil {
				return err
			}
			req := api.PruneRequest{DryRun: dryRun}
			if older > 0 {
				req.OlderThan = older.String()
			}
			if !yes && !dryRun && cli.askable() {
				req.DryRun = true
				would, err := c.PruneSessions(cmd.Context(), req)
				if err != nil {
					return err
				}
				if len(would.Removed) == 0 {
					fmt.Fprintln(cli.out, "no ended sessions to remove")
					return nil
				}
				ok, err := confirm(cmd.Context(), cli.in, cli.errOut, fmt.Sprintf("Remove the folders and logs of %d ended sessions?", len(would.Removed)))
				if err != nil {
					return err
				}
				if !ok {
					return printedError{err: errors.New("nothing removed")}
				}
				req.DryRun = false
			}
			res, err := c.PruneSessions(cmd.Context(), req)
			if err != nil {
				return err
			}
			switch {
			case asJSON:
				return printJSON(cli.out, res)
			case dryRun:
				for _, id := range res.Removed {
					fmt.Fprintln(cli.out, id)
				}
				fmt.Fprintf(cli.errOut, "would remove %d ended sessions (dry run: nothing removed)\n", len(res.Removed))
			default:
				fmt.Fprintf(cli.out, "removed %d ended sessions\n", len(res.Removed))
			}
			return nil
		},
	}
	cmd.Flags().DurationVar(&older, "older-than", 0, "only sessions that ended longer ago than this")
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "do not ask")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "name what would be removed; remove nothing")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// confirm asks a yes/no question; only "y" or "yes" is yes. Ctrl-C (ctx
// ending) answers at once, without waiting for Enter.
func confirm(ctx context.Context, in io.Reader, out io.Writer, question string) (bool, error) {
	fmt.Fprintf(out, "%s [y/N] ", question)
	type answer struct {
		line string
		err  error
	}
	got := make(chan answer, 1)
	go func() {
		line, err := bufio.NewReader(in).ReadString('\n')
		got <- answer{line, err}
	}()
	var a answer
	select {
	case <-ctx.Done():
		fmt.Fprintln(out)
		return false, ctx.Err()
	case a = <-got:
	}
	if a.err != nil && !errors.Is(a.err, io.EOF) {
		return false, fmt.Errorf("read the answer: %w", a.err)
	}
	switch strings.ToLower(strings.TrimSpace(a.line)) {
	case "y", "yes":
		return true, nil
	}
	return false, nil
}
