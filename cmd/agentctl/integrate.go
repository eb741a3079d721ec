package main

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/integrate"
)

func newIntegrateCmd(cli *cli) *cobra.Command {
	var status, remove bool
	cmd := &cobra.Command{
		Use:   "integrate [claude|codex|opencode|pi|all] [--status] [--remove]",
		Short: "Report the sessions you start by hand to agentctl (the agents' own hooks)",
		Long: `Install, for this user, each agent's own hook, plugin, extension or notify entry
that reports what its sessions do to the agentctl service: the sessions you
start by hand in a terminal then get first-hand evidence like those agentctl
launches. Two sessions in one folder are told apart at once, a permission
prompt reads "waiting: permission", and Claude Code's, OpenCode's and Codex's
can be answered with agentctl approve / deny. (Codex runs its hooks from its
shared background server, so they say what a Codex session does, not which
process runs it: two Codex TUIs in one folder are told apart first-hand when each
runs its own server, codex --no-daemon.)

Your own settings are merged, never replaced: your keys and hooks stay, a
backup of the file is kept under the agentctl home, and --remove gives the
file back byte for byte when nothing else changed it since (else it takes out
only agentctl's entries). The hooks run this agentctl binary by its absolute
path; when the service is down or does not answer they return within
milliseconds and change nothing. A permission prompt waits for an answer
through agentctl at most config.json's integrate.permission_wait (default
10m; "0s" does not wait), while the agent's own prompt stays answerable.

Each goes where its agent reads it in this environment: CLAUDE_CONFIG_DIR
(else ~/.claude), CODEX_HOME (else ~/.codex), XDG_CONFIG_HOME/opencode (else
~/.config/opencode), PI_CODING_AGENT_DIR (else ~/.pi/agent). Set them as the
agents see them.

With no agent, all of them. --status says what is installed, where, and when
the service last heard from each.`,
		Args: args(cobra.MaximumNArgs(1)),
		ValidArgs: func() []string {
			out := []string{"all"}
			for _, i := range integrate.All() {
				out = append(out, i.Agent())
			}
			return out
		}(),
		RunE: func(cmd *cobra.Command, a []string) error {
			which := "all"
			if len(a) == 1 {
				which = a[0]
			}
			if status && remove {
				return fmt.Errorf("--status or --remove, not both")
			}
			return runIntegrate(cmd.Context(), cli, which, status, remove)
		},
	}
	cmd.Flags().BoolVar(&status, "status", false, "say what is installed and when each last reported")
	cmd.Flags().BoolVar(&remove, "remove", false, "take agentctl's entries out again")
	return cmd
}

func runIntegrate(ctx context.Context, cli *cli, which string, status, remove bool) error {
	var chosen []integrate.Integration
	if which == "all" {
		chosen = integrate.All()
	} else if i := integrate.Lookup(which); i != nil {
		chosen = []integrate.Integration{i}
	} else {
		var names []string
		for _, i := range integrate.All() {
			names = append(names, i.Agent())
		}
		return fmt.Errorf("no integration for %q (there are: %s, all)", which, strings.Join(names, ", "))
	}
	env, err := integrationEnv(cli)
	if err != nil {
		return err
	}
	if status {
		return integrationStatus(ctx, cli, env, chosen)
	}
	var failed []string
	for _, i := range chosen {
		var ch integrate.Change
		var err error
		if remove {
			ch, err = i.Remove(ctx, env)
		} else {
			ch, err = i.Install(ctx, env)
		}
		if err != nil {
			fmt.Fprintf(cli.errOut, "%s: %v\n", i.Agent(), err)
			failed = append(failed, i.Agent())
			continue
		}
		switch {
		case remove && len(ch.Files) == 0:
			fmt.Fprintf(cli.out, "%s: not installed\n", i.Agent())
		case remove:
			fmt.Fprintf(cli.out, "%s: removed from %s\n", i.Agent(), strings.Join(ch.Files, ", "))
		case len(ch.Files) == 0:
			fmt.Fprintf(cli.out, "%s: already installed\n", i.Agent())
		default:
			fmt.Fprintf(cli.out, "%s: installed in %s\n", i.Agent(), strings.Join(ch.Files, ", "))
		}
		for _, b := range ch.Backups {
			fmt.Fprintf(cli.out, "  backup of the file as it was: %s\n", b)
		}
		for _, n := range ch.Notes {
			fmt.Fprintf(cli.out, "  %s\n", n)
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("integrate %s failed", strings.Join(failed, ", "))
	}
	return nil
}

// integrationEnv is where the integrations work for this user: their
// home, agentctl's folder for backups, and the hook command (this binary,
// by its absolute path, with this agentctl home).
func integrationEnv(cli *cli) (integrate.Env, error) {
	h, err := cli.userHome()
	if err != nil {
		return integrate.Env{}, err
	}
	exe, err := cli.exe()
	if err != nil {
		return integrate.Env{}, err
	}
	if r, err := filepath.EvalSymlinks(exe); err == nil {
		exe = r
	}
	if exe, err = filepath.Abs(exe); err != nil {
		return integrate.Env{}, fmt.Errorf("find the agentctl binary: %w", err)
	}
	userHome := cli.getenv("HOME")
	if userHome == "" {
		return integrate.Env{}, fmt.Errorf("HOME is not set: the agents' settings are under it")
	}
	wait, err := configOf(cli, h).Integrate.WaitFor("codex")
	if err != nil {
		return integrate.Env{}, err
	}
	return integrate.Env{UserHome: userHome, StateDir: h.IntegrationsDir(), Hook: []string{exe, "hook", "--home", string(h)}, Getenv: cli.getenv,
		CodexPermissionWait: wait}, nil
}

func integrationStatus(ctx context.Context, cli *cli, env integrate.Env, chosen []integrate.Integration) error {
	// The service is asked, never started: a stopped one heard nothing.
	var last map[string]time.Time
	heard := "the service is not running"
	if c, err := cli.localClient(); err == nil {
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		st, err := c.WithoutAutostart().IntegrationStatus(ctx)
		cancel()
		if err == nil {
			last, heard = st.LastReport, "no report since the service started"
		} else if api.CodeOf(err) != api.CodeInternal {
			heard = "the service cannot say: " + err.Error()
		}
	}
	now := time.Now()
	var failed []string
	for _, i := range chosen {
		st, err := i.Status(ctx, env)
		if err != nil {
			fmt.Fprintf(cli.errOut, "%s: %v\n", i.Agent(), err)
			failed = append(failed, i.Agent())
			continue
		}
		state := "not installed"
		if st.Installed {
			state = "installed"
		}
		fmt.Fprintf(cli.out, "%s: %s (%s)\n", i.Agent(), state, strings.Join(slices.Compact(st.Files), ", "))
		if st.Detail != "" {
			fmt.Fprintf(cli.out, "  %s\n", st.Detail)
		}
		if t, ok := last[i.Agent()]; ok {
			fmt.Fprintf(cli.out, "  last report: %s (%s ago)\n", t.Local().Format(time.RFC3339), ago(now, t))
		} else if st.Installed {
			fmt.Fprintf(cli.out, "  last report: none (%s)\n", heard)
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("the status of %s could not be read", strings.Join(failed, ", "))
	}
	return nil
}
