package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/hosts"
	"github.com/agentctl/agentctl/internal/text"
)

func newListCmd(cli *cli) *cobra.Command {
	var o api.ListOptions
	var out outputFlags
	var watch, queued bool
	var hostList string
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls", "ps"},
		Short:   "List sessions (running and unknown ones; -a adds ended ones)",
		Long: `List sessions: those agentctl launched and those the adapters find in the
agents' own stores (origin "discovered"). Status is derived now, from exit
records, process liveness (pid + start time) and the agents' own records.

Statuses: running, exited, killed (by a signal), lost (gone without an exit
record), ended (the agent's store says it is over), unknown (nobody can vouch
for it right now).

Without -a the list shows every session that may be live: running ones, and
unknown ones (each with a warning saying why; see agentctl explain ID).
--status running shows running ones only.

The table fits the terminal: the ID column shows each session's shortest
unique handle (any command takes it, or the session's --name), empty columns
are left out and the working directory and prompt are shortened; -o wide
shows everything.

Activity (of running sessions): busy, idle, or "waiting: permission|question|
input|dialog" when the agent waits for a person, as first-hand evidence says
(the agent's hooks, its own records, a notification on its terminal); "-"
when nothing says. --waiting lists only the waiting ones, longest waiting
first; answer them with approve, deny or answer (a dialog: attach).

The first list after the service started with nothing cached reads every
agent's store, which on a large one takes seconds; meanwhile, on a terminal,
a line on standard error says how far it got ("reading 7,000 sessions…
3,200"). --json prints the service's answer as it came (indented).

--hosts all (or -H build,gpu,local) asks every host at once and adds a HOST
column; handles are then HOST/ID, which every command takes. A host that does
not answer within 10s is a warning naming it, and the sessions it had running
(or unknown) when it last answered are listed as unknown.`,
		Example: `  agentctl list
  agentctl list --hosts all
  agentctl list -a --status exited
  agentctl list -o wide --group review
  agentctl list --waiting
  agentctl stop $(agentctl list -q --label team=infra)`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := out.check(); err != nil {
				return err
			}
			if queued {
				if o.Status != "" && o.Status != string(api.StatusQueued) {
					return usageError{fmt.Errorf("--queued and --status %s: choose one", o.Status)}
				}
				o.Status = string(api.StatusQueued)
			}
			if err := checkStatus(o.Status); err != nil {
				return err
			}
			// The wide table has the CPU and memory of running sessions.
			o.Resources = out.format == "wide"
			hs, several, err := cli.targetHosts(hostList)
			if err != nil {
				return err
			}
			if several {
				if watch {
					return usageError{errors.New("list -w follows one host; over several, use agentctl top --hosts")}
				}
				return listSeveral(cmd.Context(), cli, hs, o, out)
			}
			h := hs[0]
			if watch {
				src, ok := h.API.(watchSource)
				if !ok {
					return cannot(h, "be watched (it has no event stream)")
				}
				return watchList(cmd.Context(), cli, src, o, out.asJSON, out.format == "wide", cli.out)
			}
			if out.asJSON {
				if il, ok := h.API.(indentedLister); ok {
					return listJSON(cmd.Context(), il, o, cli.out)
				}
			}
			// The table (not -q, nor -o wide) asks for what it shows alone.
			o.Table = !out.asJSON && !out.quiet && out.format != "wide"
			var list api.SessionList
			get := func() (err error) {
				list, err = h.API.List(cmd.Context(), o)
				return err
			}
			// A wait for a first read of the stores says how far it got,
			// on a terminal, never in JSON.
			if src, ok := h.API.(readingSource); ok && !out.asJSON && term.IsTerminal(fdOf(cli.errOut)) {
				err = readingProgress{w: cli.errOut, src: src, after: progressAfter, every: progressEvery}.run(cmd.Context(), get)
			} else {
				err = get()
			}
			if err != nil {
				return err
			}
			return printList(cli, list, out, func(s api.Session) string { return s.ID })
		},
	}
	fl := cmd.Flags()
	fl.BoolVarP(&o.All, "all", "a", false, "include ended sessions")
	fl.StringVar(&o.Status, "status", "", "only sessions with this status: running, queued, exited, killed, lost, ended or unknown")
	fl.BoolVar(&queued, "queued", false, "only queued sessions (the same as --status queued), with their place and why they wait")
	fl.StringVar(&o.Adapter, "adapter", "", "only sessions of this adapter")
	fl.StringVar(&o.Group, "group", "", "only sessions of this group")
	fl.StringArrayVar(&o.Labels, "label", nil, "only sessions with label KEY=VALUE (repeatable)")
	fl.DurationVar(&o.Since, "since", 0, "with -a, ended sessions of this recent past (default 168h)")
	fl.BoolVar(&o.Waiting, "waiting", false, "only sessions waiting for a person, longest waiting first")
	fl.StringVar(&hostList, "hosts", "", "list the sessions of several hosts: `all` (this machine and every named host) or a comma-separated list (build,gpu,local); the same as -H with several")
	cmd.RegisterFlagCompletionFunc("hosts", cli.completeHosts)
	fl.BoolVarP(&watch, "watch", "w", false, "redraw the table on every change (in place on a terminal; a new table per change in a pipe)")
	out.register(cmd)
	cmd.RegisterFlagCompletionFunc("group", cli.completeGroups)
	cmd.RegisterFlagCompletionFunc("status", cobra.FixedCompletions([]string{"running", "queued", "exited", "killed", "lost", "ended", "unknown"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// indentedLister is a host whose list's answer can be printed as it
// came, re-indented (client.Client), without decoding it.
type indentedLister interface {
	ListIndented(ctx context.Context, o api.ListOptions) ([]byte, error)
}

// listJSON is `list --json` of one host: what printList prints, written
// from the service's answer without decoding it.
func listJSON(ctx context.Context, l indentedLister, o api.ListOptions, w io.Writer) error {
	b, err := l.ListIndented(ctx, o)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// listSeveral is list over several hosts: each asked at once, the answers
// merged with the host of each session. It fails only when no host
// answered.
func listSeveral(ctx context.Context, cli *cli, hs []hosts.Host, o api.ListOptions, out outputFlags) error {
	answers := hosts.ListAll(ctx, hs, o, hostTimeout)
	list := hosts.Merge(answers, cli.lastSeen(), o, time.Now())
	failed := hosts.Failed(answers)
	if len(failed) == len(hs) {
		for _, w := range list.Warnings {
			cli.warn("%s", w)
		}
		return printedError{err: fmt.Errorf("no host answered (%s)", strings.Join(failed, ", "))}
	}
	return printList(cli, list, out, func(s api.Session) string { return hosts.Handle(s.Host, s.ID) })
}

// printList prints a list as its flags say: JSON, one handle a line (-q),
// or the table, the warnings on standard error.
func printList(cli *cli, list api.SessionList, out outputFlags, handle func(api.Session) string) error {
	if out.asJSON {
		return printJSON(cli.out, list)
	}
	for _, w := range list.Warnings {
		cli.warn("%s", w)
	}
	if out.quiet {
		for _, s := range list.Sessions {
			fmt.Fprintln(cli.out, handle(s))
		}
		return nil
	}
	if len(list.Sessions) == 0 {
		if !out.noHeaders {
			fmt.Fprintln(cli.errOut, "no sessions")
		}
		return nil
	}
	printSessionTable(cli.out, list.Sessions, tableWidth(cli, cli.out), out.format == "wide", !out.noHeaders)
	return nil
}

func shortID(id string) string {
	if len(id) > 14 {
		return id[:14]
	}
	return id
}

func statusText(s *api.Session) string {
	st := string(s.Status)
	switch {
	case s.Status == api.StatusExited && s.ExitCode != nil:
		st = fmt.Sprintf("exited(%d)", *s.ExitCode)
	case s.Status == api.StatusKilled && s.Signal != "":
		// A cluster's stopped session whose pod is gone names no signal.
		st = "killed(" + s.Signal + ")"
	case s.Status == api.StatusQueued && s.Queue != nil && s.Queue.Position > 0:
		st = fmt.Sprintf("queued(#%d)", s.Queue.Position)
	}
	return st
}

// limitsText names a session's limits: "memory 512 MiB, 1.5 CPUs, 100 pids".
func limitsText(l *api.Limits) string {
	if l == nil {
		return ""
	}
	var parts []string
	if l.MemoryMaxBytes > 0 {
		parts = append(parts, "memory "+text.Bytes(l.MemoryMaxBytes))
	}
	if l.CPUs > 0 {
		parts = append(parts, strconv.FormatFloat(l.CPUs, 'f', -1, 64)+" CPUs")
	}
	if l.PidsMax > 0 {
		parts = append(parts, fmt.Sprint(l.PidsMax)+" pids")
	}
	return strings.Join(parts, ", ")
}

func pidText(pid int) string {
	if pid == 0 {
		return ""
	}
	return fmt.Sprint(pid)
}

func ago(now, t time.Time) string { return text.Ago(now, t) }

func tokensText(s *api.Session) string {
	if s.TotalsPending {
		return text.Pending
	}
	return text.Tokens(s.TokensIn, s.TokensOut)
}

// sessionCostText is a session's cost, pending while its totals are.
func sessionCostText(s *api.Session) string {
	if s.TotalsPending {
		return text.Pending
	}
	return costText(s.CostUSD)
}

func costText(c *float64) string { return text.Cost(c) }

func label(s *api.Session) string {
	switch {
	case s.Name != "":
		return s.Name
	case s.Prompt != "":
		return s.Prompt
	}
	return strings.Join(s.Command, " ")
}

// oneLine is s with its runs of white space made one space, cut to n runes
// with an ellipsis. It stops reading s once past n runes: a list shows
// thousands of long prompts.
func oneLine(s string, n int) string {
	// ASCII, the most of what a list shows, byte by byte: the runes'
	// way took a fifth of a large table's layout.
	t := strings.TrimSpace(s)
	// Most prompts are one line of ASCII with single spaces: t itself, or
	// its first n-1 bytes and the ellipsis, without a copy to build.
	clean := 0
	for clean < len(t) && clean <= n {
		c := t[clean]
		if c >= 0x80 || c < ' ' || clean > 0 && c == ' ' && t[clean-1] == ' ' {
			break
		}
		clean++
	}
	switch {
	case clean == len(t) && len(t) <= n:
		return t
	case clean > n:
		return t[:n-1] + "…"
	}
	out := make([]byte, 0, min(n, len(t))+1)
	space := false
	for i := 0; i < len(t); i++ {
		c := t[i]
		switch c {
		case ' ', '\t', '\n', '\v', '\f', '\r':
			space = true
			continue
		}
		if c >= 0x80 { // not ASCII
			return oneLineRunes(s, n)
		}
		if space {
			out = append(out, ' ')
			space = false
		}
		out = append(out, c)
		if len(out) > n {
			return string(out[:n-1]) + "…"
		}
	}
	return string(out)
}

// oneLineRunes is oneLine for any text.
func oneLineRunes(s string, n int) string {
	out := make([]rune, 0, min(n, len(s))+1)
	space := false
	for _, r := range strings.TrimSpace(s) {
		if unicode.IsSpace(r) {
			space = true
			continue
		}
		if space {
			out = append(out, ' ')
			space = false
		}
		out = append(out, r)
		if len(out) > n {
			return string(out[:n-1]) + "…"
		}
	}
	return string(out)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func newStatusCmd(cli *cli) *cobra.Command {
	var asJSON, why bool
	cmd := &cobra.Command{
		Use:   "status ID",
		Short: "Show one session (by id, unique id prefix or name)",
		Long: `Show one session, by its id, a unique prefix of it, its name, or the id its
agent gave it (the ids list prints, OpenClaw's agent:main:dashboard:… keys
included). --why adds the evidence behind its status, as explain does.`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			if why {
				return explain(cmd.Context(), cli, a[0], asJSON)
			}
			h, id, err := cli.hostFor(a[0])
			if err != nil {
				return err
			}
			s, err := h.API.Get(cmd.Context(), id)
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(cli.out, s)
			}
			printSession(cli.out, s)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().BoolVar(&why, "why", false, "add the evidence behind the status (as explain)")
	return cmd
}

func newExplainCmd(cli *cli) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "explain ID",
		Short: "Show the evidence behind a session's status",
		Long: `Show why a session has the status it has: the rule that applies and the
evidence it read. For a session agentctl started: its launch record, its exit
record (written by the agent's own parent), and the check of its process and
monitor by pid and start stamp. For a session an agent's store holds: what
that file, database or server says, which live process was tied to it and by
which evidence (the agent's registry, its command line, a file it holds open,
the marker agentctl set), the processes that may own it (it stays unknown
while one lives), and the candidates turned down and why.`,
		Example: `  agentctl explain k3x9
  agentctl status --why k3x9
  agentctl explain --json agent:main:dashboard:7f3e2b1c-5a4d-4e6f-9b8a-0c1d2e3f4a5b`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			return explain(cmd.Context(), cli, a[0], asJSON)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// explain prints the evidence behind a session's status, where the host
// can tell it.
func explain(ctx context.Context, cli *cli, handle string, asJSON bool) error {
	h, id, err := cli.hostFor(handle)
	if err != nil {
		return err
	}
	e, ok := h.API.(hosts.Explainer)
	if !ok {
		return cannot(h, "explain a status")
	}
	ex, err := e.Explain(ctx, id)
	if err != nil {
		return err
	}
	if asJSON {
		return printJSON(cli.out, ex)
	}
	printSession(cli.out, ex.Session)
	printExplanation(cli.out, ex)
	return nil
}

// printExplanation writes the rule, the reason and each piece of evidence,
// one a line: its kind, then what it says, then its source.
func printExplanation(w io.Writer, ex api.Explanation) {
	fmt.Fprintf(w, "\nwhy (%s rule): %s\n", ex.Rule, text.Clean(ex.Reason))
	tw := newTable(w)
	for _, e := range ex.Evidence {
		says := e.Says
		if e.Source != "" {
			says += " [" + e.Source + "]"
		}
		fmt.Fprintf(tw, "  %s\t%s\n", e.Kind, text.Clean(says))
	}
	tw.Flush()
}

func printSession(w io.Writer, s api.Session) {
	tw := newTable(w)
	row := func(k, v string) {
		if v != "" {
			fmt.Fprintf(tw, "%s\t%s\n", k, text.Clean(v))
		}
	}
	row("id", s.ID)
	row("name", s.Name)
	row("adapter", s.Adapter)
	row("origin", s.Origin)
	row("status", statusText(&s))
	if q := s.Queue; q != nil {
		place := "starting"
		if q.Position > 0 {
			place = fmt.Sprintf("#%d", q.Position)
		}
		row("queue", fmt.Sprintf("%s, queued %s (%s ago)", place, q.Since.Local().Format(time.RFC3339), ago(time.Now(), q.Since)))
		row("  waits for", q.Reason)
	}
	printActivity(row, s)
	row("pid", pidText(s.PID))
	row("pgid", pidText(s.PGID))
	if s.StartTime != nil {
		row("started", s.StartTime.Local().Format(time.RFC3339))
	}
	if !s.CreatedAt.IsZero() {
		row("created", s.CreatedAt.Local().Format(time.RFC3339))
	}
	if s.EndedAt != nil {
		row("ended", s.EndedAt.Local().Format(time.RFC3339))
	}
	if s.ExitCode != nil {
		row("exit code", fmt.Sprint(*s.ExitCode))
	}
	row("signal", s.Signal)
	if s.OOM {
		row("oom", "yes: the kernel's OOM killer ended a process of it (its memory limit)")
	}
	row("limits", limitsText(s.Limits))
	printResources(row, s.Resources)
	row("cwd", s.Cwd)
	row("command", strings.Join(s.Command, " "))
	row("group", s.Group)
	row("native id", s.NativeID)
	row("model", s.Model)
	if s.TotalsPending {
		row("tokens", "being counted")
	} else {
		row("tokens", tokensText(&s))
		row("cost", costText(s.CostUSD))
	}
	if t := s.NativeTotal; t != nil {
		// The native session's, which several runs share: not this run's.
		row("native total", strings.Trim(text.Tokens(t.TokensIn, t.TokensOut)+", "+costText(t.CostUSD), ", -"))
	}
	row("resume of", s.ResumeOf)
	row("restart of", s.RestartOf)
	row("env set", strings.Join(s.EnvSet, ", "))
	row("launched from", strings.Join(s.LaunchedFrom, " "))
	if s.LastActivity != nil {
		row("last activity", s.LastActivity.Local().Format(time.RFC3339))
	}
	row("prompt", oneLine(s.Prompt, 200))
	for _, k := range slices.Sorted(maps.Keys(s.Labels)) {
		row("label", k+"="+s.Labels[k])
	}
	for _, h := range s.Hooks {
		row("hook "+h.Phase, hookText(h))
	}
	for _, wn := range s.Warnings {
		row("warning", wn)
	}
	tw.Flush()
}

// printResources adds what a session costs to status: CPU, memory and
// tasks of a running session, the peak memory of an ended one.
func printResources(row func(k, v string), r *api.Resources) {
	if r == nil {
		return
	}
	if r.CPUPercent != nil || r.CPUSeconds != nil {
		cpu := text.Percent(r.CPUPercent)
		if r.CPUPercent != nil && r.CPUWindowS > 0 {
			cpu += fmt.Sprintf(" over %s", text.Seconds(&r.CPUWindowS))
		}
		if r.CPUSeconds != nil {
			cpu = strings.TrimPrefix(cpu+", "+text.Seconds(r.CPUSeconds)+" in all", ", ")
		}
		row("cpu", cpu)
	}
	mem := text.Size(r.MemoryBytes)
	if r.MemoryPeakBytes != nil {
		mem = strings.TrimPrefix(mem+", peak "+text.Size(r.MemoryPeakBytes), ", ")
	}
	row("memory", mem)
	if r.PIDs != nil {
		tasks := fmt.Sprintf("%d", *r.PIDs)
		if r.Processes != nil {
			tasks += fmt.Sprintf(" (%d processes)", *r.Processes)
		}
		row("pids", tasks)
	}
	if r.IOReadBytes != nil || r.IOWriteBytes != nil {
		row("block i/o", dash(text.Size(r.IOReadBytes))+" read, "+dash(text.Size(r.IOWriteBytes))+" written")
	}
	if r.Source != "" && (r.MemoryBytes != nil || r.CPUSeconds != nil) {
		row("measured", "from the session's "+map[string]string{"cgroup": "cgroup", "processes": "processes, added up"}[r.Source])
	}
}

// screenLines is the terminal's height less a line; off a terminal (a
// pipe, a file) 0, all of it, as docker and kubectl give their logs.
func screenLines(cli *cli) int {
	if _, h, err := term.GetSize(fdOf(cli.out)); err == nil && h > 2 {
		return h - 1
	}
	if term.IsTerminal(fdOf(cli.out)) {
		return 50
	}
	return 0
}

func newPeekCmd(cli *cli) *cobra.Command {
	var n int
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "peek ID",
		Short: "Show the agent's last messages from its own transcript",
		Long: `Show the last N assistant messages of a session from the agent's own records.
For a session whose agent has written nothing readable yet (or a plain command),
it shows the end of the output log instead.`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			h, id, err := cli.hostFor(a[0])
			if err != nil {
				return err
			}
			t, err := h.API.Transcript(cmd.Context(), id, n)
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(cli.out, t)
			}
			for _, w := range t.Warnings {
				cli.warn("%s", w)
			}
			if len(t.Messages) == 0 {
				fmt.Fprintf(cli.out, "%s has no messages yet (status %s)\n", t.Session.ID, statusText(&t.Session))
				return nil
			}
			for i, m := range t.Messages {
				if i > 0 {
					fmt.Fprintln(cli.out)
				}
				if t.Source == "log" {
					fmt.Fprintf(cli.out, "--- output of %s (the agent's transcript has nothing yet)\n", shortID(t.Session.ID))
				} else {
					fmt.Fprintf(cli.out, "--- %s\n", m.Role)
				}
				fmt.Fprintln(cli.out, strings.TrimRight(m.Text, "\n"))
			}
			return nil
		},
	}
	cmd.Flags().IntVarP(&n, "lines", "n", 1, "how many assistant messages")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func newSendCmd(cli *cli) *cobra.Command {
	var noNewline bool
	cmd := &cobra.Command{
		Use:   "send ID TEXT|-",
		Short: "Type text into a session's terminal ('-' reads standard input)",
		Long: `Write TEXT to the session's terminal as if typed, followed by Enter (a carriage
return) unless -n. With '-' the text comes from standard input, sent as is.`,
		Args: args(cobra.ExactArgs(2)),
		RunE: func(cmd *cobra.Command, a []string) error {
			h, id, err := cli.hostFor(a[0])
			if err != nil {
				return err
			}
			var data []byte
			if a[1] == "-" {
				data, err = io.ReadAll(io.LimitReader(cli.in, maxSend+1))
				if err != nil {
					return fmt.Errorf("read standard input: %w", err)
				}
				if len(data) > maxSend {
					return fmt.Errorf("send: standard input is over the limit of %d MiB for one send; send it in parts", maxSend>>20)
				}
			} else {
				data = []byte(a[1])
				if !noNewline {
					data = append(data, '\r')
				}
			}
			_, err = h.API.Input(cmd.Context(), id, data)
			return err
		},
	}
	cmd.Flags().BoolVarP(&noNewline, "no-newline", "n", false, "do not press Enter after TEXT")
	return cmd
}

// maxSend bounds one send (the request carries it whole).
const maxSend = 16 << 20

// hookText says how a lifecycle hook went.
func hookText(h api.HookRun) string {
	out := h.Status
	switch {
	case h.ExitCode != nil:
		out += fmt.Sprintf(" (exit %d)", *h.ExitCode)
	case h.Signal != "":
		out += " (" + h.Signal + ")"
	}
	return out + ": " + oneLine(h.Command, 60)
}
