package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/client"
	"github.com/agentctl/agentctl/internal/text"
)

// idCommand is how a command takes session handles: all its arguments
// (several) or the first one only, and whether only running sessions are
// worth offering (the command acts on nothing else).
type idCommand struct{ many, runningOnly bool }

// idCommandOf says how the command called name takes session handles.
func idCommandOf(name string) (idCommand, bool) {
	switch name {
	case "status", "inspect", "explain", "peek", "resume", "rename":
		return idCommand{}, true
	case "attach", "send", "approve", "deny", "answer":
		return idCommand{runningOnly: true}, true
	case "rm", "restart", "wait", "logs", "stats":
		return idCommand{many: true}, true
	case "stop", "kill":
		return idCommand{many: true, runningOnly: true}, true
	}
	return idCommand{}, false
}

// addCompletions makes every command that takes a session complete ids and
// names, described by the session's name or prompt, and every --adapter
// the adapters' names.
func addCompletions(cli *cli, root *cobra.Command) {
	for _, c := range root.Commands() {
		if c.Flags().Lookup("adapter") != nil {
			c.RegisterFlagCompletionFunc("adapter", completeAdapters(c.Name() != "list"))
		}
		if c.Name() == "launch" && c.ValidArgsFunction == nil {
			c.ValidArgsFunction = func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
				if len(args) > 0 {
					return nil, cobra.ShellCompDirectiveNoFileComp
				}
				return api.Agents(), cobra.ShellCompDirectiveNoFileComp
			}
		}
		how, ok := idCommandOf(c.Name())
		if !ok {
			continue
		}
		all := c.ValidArgsFunction
		if all == nil {
			all = func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
				if !how.many && len(args) > 0 {
					return nil, cobra.ShellCompDirectiveNoFileComp
				}
				return cli.completeSessions(cmd, args, toComplete)
			}
		}
		if how.runningOnly {
			c.ValidArgsFunction = func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
				if !how.many && len(args) > 0 {
					return nil, cobra.ShellCompDirectiveNoFileComp
				}
				return cli.completeRunning(cmd, args, toComplete)
			}
			continue
		}
		c.ValidArgsFunction = all
	}
}

// completeAdapters offers the agents' names, and exec (a plain command)
// where a session of it can be started or listed.
func completeAdapters(launch bool) cobra.CompletionFunc {
	return func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
		names := append(api.Agents(), api.ExecAdapter)
		if !launch {
			names = append(names, "openclaw")
		}
		return names, cobra.ShellCompDirectiveNoFileComp
	}
}

// completeRunning is cli.completeSessions for commands that act on running
// sessions only.
func (cli *cli) completeRunning(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	return cli.listCompletions(cmd, args, toComplete, true)
}

// completeSessions lists the sessions whose id or name starts with what was
// typed (any case). It never starts the service: a completion that hangs
// for seconds is worse than none.
func (cli *cli) completeSessions(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	return cli.listCompletions(cmd, args, toComplete, false)
}

func (cli *cli) listCompletions(cmd *cobra.Command, args []string, toComplete string, runningOnly bool) ([]string, cobra.ShellCompDirective) {
	h, err := cli.userHome()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	exe, _ := cli.exe()
	c := client.New(h, exe, false)
	ctx, cancel := context.WithTimeout(cmd.Context(), 2*time.Second)
	defer cancel()
	list, err := c.List(ctx, api.ListOptions{All: !runningOnly})
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveError
	}
	sessions := list.Sessions
	if runningOnly {
		sessions = slices.DeleteFunc(sessions, func(s api.Session) bool { return s.Status.Ended() })
	}
	return sessionCompletions(sessions, args, toComplete), cobra.ShellCompDirectiveNoFileComp
}

// sessionCompletions are the candidates "HANDLE\tDESCRIPTION": ids, then
// names, not already given, that start with typed. Running sessions first.
func sessionCompletions(sessions []api.Session, given []string, typed string) []string {
	done := map[string]bool{}
	for _, a := range given {
		done[strings.ToLower(a)] = true
	}
	// A session given by its name is given by its id too, and the
	// reverse.
	for _, s := range sessions {
		if done[strings.ToLower(s.ID)] || (s.Name != "" && done[strings.ToLower(s.Name)]) {
			done[strings.ToLower(s.ID)] = true
			if s.Name != "" {
				done[strings.ToLower(s.Name)] = true
			}
		}
	}
	low := strings.ToLower(typed)
	var out, ended []string
	add := func(s api.Session, cand, desc string) {
		if done[strings.ToLower(cand)] || !strings.HasPrefix(strings.ToLower(cand), low) {
			return
		}
		line := cand + "\t" + desc
		if s.Status.Ended() {
			ended = append(ended, line)
		} else {
			out = append(out, line)
		}
	}
	// A name reused over time is offered once: for the session it reaches
	// (the running one, else the latest).
	named := map[string]api.Session{}
	for _, s := range sessions {
		if s.Name == "" {
			continue
		}
		if prev, ok := named[s.Name]; !ok || prev.Status.Ended() && (!s.Status.Ended() || s.CreatedAt.After(prev.CreatedAt)) {
			named[s.Name] = s
		}
	}
	for i := len(sessions) - 1; i >= 0; i-- {
		s := sessions[i]
		desc := statusText(&s) + " " + oneLine(text.Clean(label(&s)), 60)
		add(s, s.ID, desc)
		if s.Name != "" && named[s.Name].ID == s.ID {
			add(s, s.Name, statusText(&s)+" "+s.ID)
		}
	}
	return append(out, ended...)
}

// completeGroups lists the groups of the sessions the service knows.
func (cli *cli) completeGroups(cmd *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	h, err := cli.userHome()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	exe, _ := cli.exe()
	ctx, cancel := context.WithTimeout(cmd.Context(), 2*time.Second)
	defer cancel()
	list, err := client.New(h, exe, false).List(ctx, api.ListOptions{All: true})
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveError
	}
	count := map[string]int{}
	var groups []string
	for _, s := range list.Sessions {
		if s.Group == "" || !strings.HasPrefix(s.Group, toComplete) {
			continue
		}
		if count[s.Group] == 0 {
			groups = append(groups, s.Group)
		}
		count[s.Group]++
	}
	out := make([]string, 0, len(groups))
	for _, g := range groups {
		out = append(out, fmt.Sprintf("%s\t%d sessions", g, count[g]))
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}
