package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/internal/text"
	"github.com/agentctl/agentctl/orchestrate"
)

func newWorktreeCmd(cli *cli) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "worktree",
		Short: "List and remove the git worktrees members of a group work in",
	}
	cmd.AddCommand(newWorktreeListCmd(cli), newWorktreeCleanCmd(cli))
	return cmd
}

func newWorktreeListCmd(cli *cli) *cobra.Command {
	var asJSON bool
	var to tableOptions
	cmd := &cobra.Command{
		Use:   "list [REPO]",
		Short: "List a repository's worktrees (REPO defaults to the current folder)",
		Args:  args(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			dir := "."
			if len(a) == 1 {
				dir = a[0]
			}
			abs, err := absPath(dir)
			if err != nil {
				return err
			}
			repo, err := orchestrate.FindRepo(cmd.Context(), abs)
			if err != nil {
				return err
			}
			list, err := orchestrate.ListWorktrees(cmd.Context(), repo.Root)
			if err != nil {
				return err
			}
			if asJSON {
				if list == nil {
					list = []orchestrate.Worktree{}
				}
				return printJSON(cli.out, map[string]any{"worktrees": list})
			}
			tw := to.newTable(cli.out)
			tw.header("PATH\tBRANCH\tHEAD\tNOTE")
			for _, w := range list {
				var notes []string
				for _, n := range []struct {
					on   bool
					text string
				}{{w.Main, "main"}, {w.Detached, "detached"}, {w.Locked, "locked"}, {w.Prunable, "prunable (folder gone: git worktree prune)"}} {
					if n.on {
						notes = append(notes, n.text)
					}
				}
				head := w.Head
				if len(head) > 8 {
					head = head[:8]
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", w.Path, dash(w.Branch), dash(head), dash(strings.Join(notes, ", ")))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	to.register(cmd)
	return cmd
}

func newWorktreeCleanCmd(cli *cli) *cobra.Command {
	var deleteBranch, force bool
	var group string
	cmd := &cobra.Command{
		Use:   "clean PATH... | --group ID",
		Short: "Remove worktrees (and with --delete-branch their branches)",
		Long: `Remove the linked git worktree at each PATH. It refuses while a session runs in
the worktree (stop it first), and when the worktree has changes that are not
committed (they would be lost); --force removes it anyway. --delete-branch
also deletes the worktree's branch, merged or not, and prints the commit it
pointed to so it can be restored. --group cleans the worktrees of every
member of a group that still has one.`,
		Args: args(cobra.ArbitraryArgs),
		RunE: func(cmd *cobra.Command, a []string) error {
			if (len(a) == 0) == (group == "") {
				return usageError{fmt.Errorf("worktree clean: give worktree paths or --group ID (one of the two)")}
			}
			running, runningErr := runningSessions(cli, cmd)
			if group != "" {
				paths, err := groupWorktrees(cli, cmd, group)
				if err != nil {
					return err
				}
				if len(paths) == 0 {
					fmt.Fprintf(cli.out, "group %s has no worktree left\n", group)
					return nil
				}
				a = paths
			}
			failed := 0
			for _, p := range a {
				if err := cleanWorktree(cli, cmd, p, running, runningErr, deleteBranch, force); err != nil {
					fmt.Fprintln(cli.errOut, "agentctl: "+text.CleanLines(err.Error()))
					failed++
				}
			}
			if failed > 0 {
				return exitError{code: 1}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&deleteBranch, "delete-branch", false, "also delete the worktree's branch")
	cmd.Flags().BoolVar(&force, "force", false, "remove even while a session runs in it or it has uncommitted changes")
	cmd.Flags().StringVar(&group, "group", "", "clean the worktrees of group `ID`'s members")
	return cmd
}

// groupWorktrees lists the worktrees a group's members were started in that
// still exist.
func groupWorktrees(cli *cli, cmd *cobra.Command, group string) ([]string, error) {
	c, err := cli.newClient()
	if err != nil {
		return nil, err
	}
	list, err := c.List(cmd.Context(), api.ListOptions{All: true, Group: group, Since: foreverAgo})
	if err != nil {
		return nil, err
	}
	if len(list.Sessions) == 0 {
		return nil, api.Errorf(api.CodeNotFound, "no sessions in group %s", group)
	}
	var paths []string
	seen := map[string]bool{}
	for _, s := range list.Sessions {
		p := s.Labels[orchestrate.LabelWorktree]
		if p == "" || seen[p] {
			continue
		}
		seen[p] = true
		if _, err := os.Stat(p); err == nil {
			paths = append(paths, p)
		}
	}
	return paths, nil
}

// runningSessions asks the service what runs now: sessions it launched and
// those the adapters find.
func runningSessions(cli *cli, cmd *cobra.Command) ([]api.Session, error) {
	c, err := cli.newClient()
	if err != nil {
		return nil, err
	}
	list, err := c.List(cmd.Context(), api.ListOptions{})
	if err != nil {
		return nil, err
	}
	return list.Sessions, nil
}

func cleanWorktree(cli *cli, cmd *cobra.Command, p string, running []api.Session, runningErr error, deleteBranch, force bool) error {
	ctx := cmd.Context()
	abs, err := absPath(p)
	if err != nil {
		return err
	}
	repo, wt, err := orchestrate.WorktreeOf(ctx, abs)
	if err != nil {
		return err
	}
	var inside []api.Session
	for _, s := range running {
		if s.Status == api.StatusRunning && within(s.Cwd, wt.Path) {
			inside = append(inside, s)
		}
	}
	switch {
	case runningErr != nil && !force:
		return fmt.Errorf("%s: cannot tell whether a session runs there (%w); pass --force to remove it anyway", wt.Path, runningErr)
	case len(inside) > 0 && !force:
		var ids []string
		for _, s := range inside {
			ids = append(ids, fmt.Sprintf("%s (%s, pid %d)", s.ID, s.Adapter, s.PID))
		}
		return fmt.Errorf("%s: not removed: a session runs in it: %s; stop it first (agentctl stop ID) or pass --force", wt.Path, strings.Join(ids, ", "))
	}
	changes, err := orchestrate.Changes(ctx, wt.Path)
	if err != nil {
		return err
	}
	if changes > 0 && !force {
		return fmt.Errorf("%s: not removed: %d uncommitted changes would be lost (see git -C %s status); commit them, or pass --force", wt.Path, changes, wt.Path)
	}
	if err := orchestrate.RemoveWorktree(ctx, repo, wt.Path, force); err != nil {
		return err
	}
	fmt.Fprintf(cli.out, "removed worktree %s\n", wt.Path)
	for _, s := range inside {
		cli.warn("session %s still runs in the removed worktree; stop it with: agentctl stop %s", s.ID, s.ID)
	}
	if deleteBranch && wt.Branch != "" {
		commit, err := orchestrate.DeleteBranch(ctx, repo, wt.Branch)
		if err != nil {
			return err
		}
		fmt.Fprintf(cli.out, "deleted branch %s (was %s)\n", wt.Branch, commit[:min(12, len(commit))])
	}
	return nil
}

// within reports whether path is dir or inside it, symbolic links
// resolved where they can be.
func within(path, dir string) bool {
	if path == "" {
		return false
	}
	resolve := func(p string) string {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return r
		}
		return filepath.Clean(p)
	}
	rel, err := filepath.Rel(resolve(dir), resolve(path))
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}
