package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/agentctl/agentctl/hosts"
)

func newRenameCmd(cli *cli) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "rename ID|NAME NEWNAME",
		Short: "Give a session a new name",
		Long: `Give a session agentctl started, running or ended, a new name: every command
then reaches it by that name, and list shows it. The name is checked as
run --name checks one: no running session may have it, and it may not be
how another session's id begins (its handle in a list). A restart keeps it.`,
		Example: `  agentctl rename k3x9 web
  agentctl rename web web-old`,
		Args: args(cobra.ExactArgs(2)),
		RunE: func(cmd *cobra.Command, a []string) error {
			h, id, err := cli.hostFor(a[0])
			if err != nil {
				return err
			}
			r, ok := h.API.(hosts.Renamer)
			if !ok {
				return cannot(h, "rename sessions")
			}
			s, err := r.Rename(cmd.Context(), id, a[1])
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(cli.out, s)
			}
			fmt.Fprintf(cli.out, "%s %s\n", s.ID, s.Name)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the session as JSON")
	return cmd
}
