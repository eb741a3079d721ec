package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/client"
	"github.com/agentctl/agentctl/internal/text"
)

// idCommands take session handles: all their arguments (several), or the
// first one only.
var idCommands = map[string]bool{
	"status": false, "explain": false, "logs": false, "peek": false, "attach": false, "send": false, "resume": false,
	"stop": true, "rm": true, "restart": true,
}

// addCompletions makes every command that takes a session complete ids and
// names, described by the session's name or prompt.
func addCompletions(root *cobra.Command) {
	for _, c := range root.Commands() {
		many, ok := idCommands[c.Name()]
		if !ok || c.ValidArgsFunction != nil {
			continue
		}
		if many {
			c.ValidArgsFunction = completeSessions
			continue
		}
		c.ValidArgsFunction = func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
			if len(args) > 0 {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			return completeSessions(cmd, args, toComplete)
		}
	}
}

// completeSessions lists the sessions whose id or name starts with what was
// typed (any case). It never starts the service: a completion that hangs
// for seconds is worse than none.
func completeSessions(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	h, err := userHome()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	exe, _ := os.Executable()
	c := client.New(h, exe, false)
	ctx, cancel := context.WithTimeout(cmd.Context(), 2*time.Second)
	defer cancel()
	list, err := c.List(ctx, api.ListOptions{All: true})
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveError
	}
	return sessionCompletions(list.Sessions, args, toComplete), cobra.ShellCompDirectiveNoFileComp
}

// sessionCompletions are the candidates "HANDLE\tDESCRIPTION": ids, then
// names, not already given, that start with typed. Running sessions first.
func sessionCompletions(sessions []api.Session, given []string, typed string) []string {
	done := map[string]bool{}
	for _, a := range given {
		done[strings.ToLower(a)] = true
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
	for i := len(sessions) - 1; i >= 0; i-- {
		s := sessions[i]
		desc := statusText(&s) + " " + oneLine(text.Clean(label(&s)), 60)
		add(s, s.ID, desc)
		if s.Name != "" {
			add(s, s.Name, statusText(&s)+" "+s.ID)
		}
	}
	return append(out, ended...)
}

// completeGroups lists the groups of the sessions the service knows.
func completeGroups(cmd *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	h, err := userHome()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	exe, _ := os.Executable()
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
