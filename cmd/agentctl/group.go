package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/config"
	"github.com/agentctl/agentctl/hosts"
	"github.com/agentctl/agentctl/internal/text"
	"github.com/agentctl/agentctl/orchestrate"
)

// groupFlags are the launch and run flags that start several members, or
// one member in a worktree.
type groupFlags struct {
	// members are the --adapter flags in order, each with the --model that
	// followed it.
	members     []orchestrate.Member
	matrix      string
	worktree    string
	branch      string
	baseBranch  string
	group       string
	files       []string
	spec        string
	maxFileSize string
}

// adapterFlag is --adapter: each one starts a member.
type adapterFlag struct{ f *runFlags }

func (a adapterFlag) String() string { return "" }
func (a adapterFlag) Type() string   { return "name" }
func (a adapterFlag) Set(v string) error {
	if v == "" || strings.HasPrefix(v, "-") {
		return fmt.Errorf("--adapter needs an adapter name")
	}
	a.f.group.members = append(a.f.group.members, orchestrate.Member{Adapter: v})
	return nil
}

// modelFlag is --model: the model of the --adapter before it, or of the
// only adapter when none came before.
type modelFlag struct{ f *runFlags }

func (m modelFlag) String() string { return m.f.model }
func (m modelFlag) Type() string   { return "model" }
func (m modelFlag) Set(v string) error {
	if v == "" || strings.HasPrefix(v, "-") {
		return fmt.Errorf("--model needs a model name")
	}
	list := m.f.group.members
	if len(list) == 0 {
		if m.f.model != "" {
			return fmt.Errorf("--model given twice (%s, %s); for several models repeat --adapter before each", m.f.model, v)
		}
		m.f.model = v
		return nil
	}
	last := &list[len(list)-1]
	if last.Model != "" {
		return fmt.Errorf("--model given twice for --adapter %s; repeat --adapter %s before each model", last.Adapter, last.Adapter)
	}
	last.Model = v
	return nil
}

// registerGroup adds the flags that start groups and worktrees.
func (f *runFlags) registerGroup(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.Var(adapterFlag{f}, "adapter", "an agent to start, by `NAME` (repeatable: several start a group, each in its own worktree)")
	fl.StringVar(&f.group.matrix, "matrix", "", "a YAML matrix `FILE`: the prompt and the adapters × models to start as a group")
	fl.StringVar(&f.group.worktree, "worktree", "", "give the session(s) their own git worktree and branch of the repository `REPO`")
	fl.StringVar(&f.group.branch, "branch", "", "with --worktree and one member: its branch `NAME` (default try/<group>/<member>)")
	fl.StringVar(&f.group.baseBranch, "base-branch", "", "start new branches from `BRANCH` (origin's when the repository has an origin; default HEAD)")
	fl.StringVar(&f.group.group, "group", "", "tag the session(s) with group `ID` (default for several members: a new g-xxxxxx)")
	fl.StringArrayVar(&f.group.files, "file", nil, "add the contents of the file at `PATH` to the prompt (repeatable)")
	fl.StringVar(&f.group.spec, "spec", "", "add the contents of the specification file at `PATH` to the prompt, first")
	fl.StringVar(&f.group.maxFileSize, "max-file-size", "", "`SIZE` limit per --file/--spec, in bytes or with k/M (default 50k)")
}

// dispatch starts what run or launch was asked for: one session, one
// session in a worktree, or a group of members each in its own worktree.
// positional is launch's ADAPTER argument, defaultAdapter the adapter when
// none is named, command run's COMMAND. The plan is orchestrate's; this
// parses the flags into it and prints what it started.
func (f *runFlags) dispatch(cli *cli, cmd *cobra.Command, cfg config.Config, positional, defaultAdapter string, command []string) error {
	g := &f.group
	h, _ := os.UserHomeDir()
	f.remote = cli.remoteTarget()
	plan, err := orchestrate.NewPlan(orchestrate.PlanInput{
		Command: cmd.Name(), Positional: positional, DefaultAdapter: defaultAdapter,
		Adapters: g.members, Model: f.model, Matrix: g.matrix, Home: h,
		Args: command, Prompt: f.prompt, PermissionMode: f.permissionMode,
		Worktree: g.worktree, CwdGiven: f.cwd != "", Branch: g.branch, BaseBranch: g.baseBranch, Group: g.group,
		Spec: g.spec, Files: g.files, MaxFileSize: g.maxFileSize, Wait: f.wait, Remote: f.remote,
	})
	for _, w := range plan.Warnings {
		cli.warn("%s", w)
	}
	if err != nil {
		return planError(err)
	}
	f.adapter, f.model, f.prompt = plan.Adapter, plan.Model, plan.Prompt
	req, err := f.request(cli, cfg)
	if err != nil {
		return err
	}
	oreq, err := plan.Request(req)
	if err != nil {
		return planError(err)
	}
	if plan.Group {
		// A group beyond the service's caps queues its excess: members
		// start as slots free, rather than fail.
		oreq.Template.Queue = true
	}
	if !plan.Worktrees {
		return start(cli, cmd, f, oreq.Template)
	}
	return f.startInWorktrees(cli, cmd, plan, oreq)
}

// planError is a plan's refusal as the CLI reports it: a usage error when
// the command line is at fault.
func planError(err error) error {
	if errors.Is(err, orchestrate.ErrUsage) {
		return usageError{err}
	}
	return err
}

// startInWorktrees starts the plan's members in their worktrees and prints
// them: one member like a single session, a group as a table.
func (f *runFlags) startInWorktrees(cli *cli, cmd *cobra.Command, plan orchestrate.Plan, oreq orchestrate.Request) error {
	c, err := cli.newClient()
	if err != nil {
		return err
	}
	labels := make([]string, len(oreq.Members))
	for i, m := range oreq.Members {
		labels[i] = m.Label()
	}
	progress := newProgress(cli, labels)
	res, err := orchestrate.Launch(cmd.Context(), c, oreq, progress)
	progress.Close()
	if err != nil {
		return err
	}
	if !plan.Group {
		m := res.Members[0]
		if m.Err != nil {
			return m.Err
		}
		how := "created"
		if m.Reused {
			how = "reused"
		}
		fmt.Fprintf(cli.errOut, "agentctl: worktree %s %s on branch %s (group %s)\n", m.Worktree, how, m.Branch, res.Group)
		// Worktrees are made on this machine (refused for another host).
		return showStarted(cli, cmd, f, hosts.Host{Name: hosts.Local, API: c}, *m.Session)
	}
	if f.asJSON {
		if err := printJSON(cli.out, res); err != nil {
			return err
		}
	} else {
		printLaunchedGroup(cli.out, res)
	}
	if failed := res.Failed(); len(failed) > 0 {
		fmt.Fprintf(cli.errOut, "agentctl: %d of %d members did not start:\n", len(failed), len(res.Members))
		for _, m := range failed {
			fmt.Fprintln(cli.errOut, text.CleanLines(fmt.Sprintf("  %s: %s", m.Label(), m.Error)))
		}
		return exitError{code: 1}
	}
	return nil
}

// progressView is a Progress that can be put away when the launch is done.
type progressView interface {
	orchestrate.Progress
	Close()
}

type lineView struct{ *orchestrate.LineProgress }

func (lineView) Close() {}

// newProgress shows progress on standard error: redrawn in place on a
// terminal, one line per change otherwise.
func newProgress(cli *cli, labels []string) progressView {
	fd := fdOf(cli.errOut)
	if term.IsTerminal(fd) {
		w, _, err := term.GetSize(fd)
		if err != nil {
			w = 80
		}
		return orchestrate.NewTerminalProgress(cli.errOut, labels, w)
	}
	return lineView{orchestrate.NewLineProgress(cli.errOut, labels)}
}

// printLaunchedGroup lists a group's members with their sessions and
// worktrees.
func printLaunchedGroup(w io.Writer, res orchestrate.Result) {
	started := len(res.Members) - len(res.Failed())
	fmt.Fprintf(w, "group %s: %d of %d members started", res.Group, started, len(res.Members))
	if res.Repo != "" {
		fmt.Fprintf(w, " in worktrees of %s", res.Repo)
	}
	fmt.Fprintln(w)
	tw := newTable(w)
	fmt.Fprintln(tw, "  MEMBER\tADAPTER\tMODEL\tSESSION\tBRANCH\tWORKTREE")
	for _, m := range res.Members {
		id := "failed"
		if m.Session != nil {
			id = m.Session.ID
			if m.Session.Status == api.StatusQueued {
				id += " (queued)"
			}
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\n", m.Suffix, m.Adapter, dash(m.Model), id, dash(m.Branch), dash(m.Worktree))
	}
	tw.Flush()
	if started > 0 {
		fmt.Fprintf(w, "compare them with: agentctl group status %s\n", res.Group)
	}
}

// foreverAgo asks list for ended sessions however old: a group's comparison
// covers all its members.
const foreverAgo = 100 * 365 * 24 * time.Hour

func newGroupCmd(cli *cli) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "group",
		Short: "Compare the sessions of a group started together",
		Long: `A group is the sessions one launch or run started side by side (several
--adapter flags, or --matrix): the same task for each agent or model, each in
its own git worktree and branch, all tagged with the group id (g-xxxxxx).`,
	}
	cmd.AddCommand(newGroupStatusCmd(cli), newGroupListCmd(cli))
	return cmd
}

func newGroupStatusCmd(cli *cli) *cobra.Command {
	var asJSON bool
	var to tableOptions
	cmd := &cobra.Command{
		Use:   "status GROUP",
		Short: "Each member side by side: status, duration, tokens, cost, and diff size",
		Long: `Show every session of GROUP side by side: its status, how long it ran, its
tokens and cost (where the agent records them), and the size of its changes:
git diff of its worktree (commits, edits and new files) against the commit its
branch started from.`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			c, err := cli.newClient()
			if err != nil {
				return err
			}
			list, err := c.List(cmd.Context(), api.ListOptions{All: true, Group: a[0], Since: foreverAgo})
			if err != nil {
				return err
			}
			for _, w := range list.Warnings {
				cli.warn("%s", w)
			}
			if len(list.Sessions) == 0 {
				return api.Errorf(api.CodeNotFound, "no sessions in group %s", a[0])
			}
			rows := orchestrate.GroupStatus(cmd.Context(), list.Sessions, time.Now())
			if asJSON {
				return printJSON(cli.out, struct {
					Group   string                     `json:"group"`
					Members []orchestrate.MemberStatus `json:"members"`
				}{a[0], rows})
			}
			printGroupStatus(cli.out, a[0], rows, to)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	to.register(cmd)
	return cmd
}

func printGroupStatus(w io.Writer, group string, rows []orchestrate.MemberStatus, to tableOptions) {
	count := map[api.Status]int{}
	for _, r := range rows {
		count[r.Session.Status]++
	}
	var parts []string
	for _, st := range []api.Status{api.StatusRunning, api.StatusQueued, api.StatusExited, api.StatusKilled, api.StatusLost, api.StatusEnded, api.StatusUnknown} {
		if count[st] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", count[st], st))
		}
	}
	if !to.noHeaders {
		fmt.Fprintf(w, "group %s: %d sessions (%s)\n", group, len(rows), strings.Join(parts, ", "))
	}
	tw := to.newTable(w)
	tw.header("MEMBER\tID\tADAPTER\tMODEL\tSTATUS\tDURATION\tTOKENS\tCOST\tDIFF\tWORKTREE")
	for _, r := range rows {
		s := r.Session
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n",
			dash(r.Member), shortID(s.ID), s.Adapter, dash(s.Model), statusText(&s),
			dash(durationText(r.DurationS)), dash(tokensText(&s)), dash(sessionCostText(&s)),
			diffText(r), dash(r.Worktree))
	}
	tw.Flush()
}

func durationText(secs *float64) string {
	if secs == nil {
		return ""
	}
	d := time.Duration(*secs * float64(time.Second)).Round(time.Second)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
}

func diffText(r orchestrate.MemberStatus) string {
	switch {
	case r.Diff != nil:
		d := r.Diff
		files := "files"
		if d.Files == 1 {
			files = "file"
		}
		return fmt.Sprintf("%d %s +%d -%d", d.Files, files, d.Insertions, d.Deletions)
	case r.DiffError == "worktree removed":
		return "(worktree removed)"
	case r.Worktree != "":
		return "unknown"
	}
	return "-"
}

func newGroupListCmd(cli *cli) *cobra.Command {
	var asJSON bool
	var to tableOptions
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List groups: their members and how many still run",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := cli.newClient()
			if err != nil {
				return err
			}
			list, err := c.List(cmd.Context(), api.ListOptions{All: true})
			if err != nil {
				return err
			}
			for _, w := range list.Warnings {
				cli.warn("%s", w)
			}
			type groupRow struct {
				Group    string    `json:"group"`
				Sessions int       `json:"sessions"`
				Running  int       `json:"running"`
				Adapters []string  `json:"adapters"`
				Created  time.Time `json:"created_at"`
			}
			byGroup := map[string]*groupRow{}
			var order []*groupRow
			for _, s := range list.Sessions {
				if s.Group == "" {
					continue
				}
				r := byGroup[s.Group]
				if r == nil {
					r = &groupRow{Group: s.Group, Created: s.CreatedAt}
					byGroup[s.Group] = r
					order = append(order, r)
				}
				r.Sessions++
				if s.Status == api.StatusRunning {
					r.Running++
				}
				r.Adapters = append(r.Adapters, s.Adapter)
				if s.CreatedAt.Before(r.Created) {
					r.Created = s.CreatedAt
				}
			}
			sort.Slice(order, func(i, j int) bool { return order[i].Created.After(order[j].Created) })
			if asJSON {
				if order == nil {
					order = []*groupRow{}
				}
				return printJSON(cli.out, map[string]any{"groups": order})
			}
			if len(order) == 0 {
				fmt.Fprintln(cli.out, "no groups")
				return nil
			}
			tw := to.newTable(cli.out)
			tw.header("GROUP\tSESSIONS\tRUNNING\tAGE\tADAPTERS")
			now := time.Now()
			for _, r := range order {
				fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\n", r.Group, r.Sessions, r.Running, dash(ago(now, r.Created)), strings.Join(r.Adapters, ","))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	to.register(cmd)
	return cmd
}
