package main

import (
	"context"
	"fmt"
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentctl/agentctl/client"
)

// Help groups: what --help lists the commands under.
var helpGroups = []*cobra.Group{
	{ID: "sessions", Title: "Sessions:"},
	{ID: "agents", Title: "Agents:"},
	{ID: "directories", Title: "Directories:"},
	{ID: "service", Title: "Service:"},
}

// commandHelp places each top-level command in a group and gives it an
// example where its own definition has none.
var commandHelp = map[string]struct{ group, example string }{
	"run": {"sessions", `  agentctl run -- npm test
  agentctl run --name web -- python3 -m http.server
  agentctl run -it -- bash`},
	"list":    {"sessions", ""},
	"top":     {"sessions", "  agentctl top\n  agentctl top --hosts all"},
	"stats":   {"sessions", ""},
	"status":  {"sessions", "  agentctl status web\n  agentctl status k3x9 --json\n  agentctl status --why k3x9"},
	"explain": {"sessions", ""},
	"inspect": {"sessions", ""},
	"wait":    {"sessions", ""},
	"logs":    {"sessions", "  agentctl logs web\n  agentctl logs -f k3x9\n  agentctl logs --raw -n 0 k3x9 > out.log"},
	"attach":  {"sessions", "  agentctl attach web        # Ctrl-] detaches"},
	"send":    {"sessions", "  agentctl send web 'npm run build'\n  echo 'y' | agentctl send -n web -"},
	"stop":    {"sessions", ""},
	"kill":    {"sessions", ""},
	"rename":  {"sessions", ""},
	"restart": {"sessions", ""},
	"rm":      {"sessions", ""},
	"prune":   {"sessions", ""},
	"events":  {"sessions", "  agentctl events\n  agentctl events --type 'session.*' | jq .type"},
	"limits":  {"agents", "  agentctl limits\n  agentctl limits --json"},
	"launch": {"agents", `  agentctl launch claude -p 'fix the failing test'
  agentctl launch codex -p 'add a changelog entry' --name notes
  agentctl launch pi -t                 # Pi's own interface, attached`},
	"resume":    {"agents", "  agentctl resume k3x9 'now run the tests'"},
	"peek":      {"agents", "  agentctl peek k3x9\n  agentctl peek -n 3 web"},
	"approve":   {"agents", "  agentctl list --waiting\n  agentctl approve k3x9"},
	"deny":      {"agents", "  agentctl deny k3x9 --reason 'not on main'"},
	"answer":    {"agents", "  agentctl answer k3x9 'use the staging database'"},
	"web":       {"agents", "  agentctl web\n  agentctl web --listen 127.0.0.1:0"},
	"integrate": {"agents", "  agentctl integrate claude\n  agentctl integrate --status\n  agentctl integrate --remove"},
	"group":     {"directories", `  agentctl group status review`},
	"worktree": {"directories", `  agentctl worktree list
  agentctl worktree clean --group review`},
	"lock":       {"directories", "  agentctl lock . --by 'release in progress'"},
	"unlock":     {"directories", "  agentctl unlock ."},
	"locks":      {"directories", "  agentctl locks --json"},
	"fuse":       {"directories", "  agentctl fuse set . --ttl 2h"},
	"fuses":      {"directories", "  agentctl fuses"},
	"daemon":     {"service", "  agentctl daemon status\n  agentctl daemon restart"},
	"service":    {"service", "  agentctl service install\n  agentctl service status"},
	"version":    {"service", "  agentctl version\n  agentctl --version"},
	"completion": {"service", "  source <(agentctl completion bash)"},
	"host":       {"service", ""},
}

// organizeHelp puts the commands in their groups, with their examples,
// and adds the version command. Commands not named above are listed under
// "Additional Commands".
func organizeHelp(cli *cli, root *cobra.Command) {
	root.AddGroup(helpGroups...)
	root.SetHelpCommand(newHelpCmd(cli, root))
	root.SetHelpCommandGroupID("service")
	root.SetCompletionCommandGroupID("service")
	// main suggests (suggestFor): cobra's distance counts a transposition
	// (lsit) as two edits, as many as an unrelated word (bogus → logs).
	root.DisableSuggestions = true
	root.SetVersionTemplate(`{{printf "agentctl %s\n" .Version}}` + versionDetails())
	for _, c := range root.Commands() {
		h, ok := commandHelp[c.Name()]
		if !ok {
			continue
		}
		c.GroupID = h.group
		if c.Example == "" {
			c.Example = h.example
		}
	}
}

// versionInfo is what a build says of itself.
type versionInfo struct {
	Version  string `json:"version"`
	Commit   string `json:"commit,omitempty"`
	Modified bool   `json:"modified,omitempty"`
	Go       string `json:"go"`
	Platform string `json:"platform"`
	// Service is the version this machine's running service says it has.
	Service string `json:"service,omitempty"`
}

// runningServiceVersion asks this machine's service, if one runs (it is
// not started for this), which version it is.
func runningServiceVersion(ctx context.Context, cli *cli) (version string, pid int, ok bool) {
	h, err := cli.userHome()
	if err != nil {
		return "", 0, false
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	st, err := client.New(h, "", false).DaemonStatus(ctx)
	if err != nil {
		return "", 0, false
	}
	return st.Version, st.PID, true
}

// commit is set at build time with -ldflags "-X main.commit=..." (make
// build does); else the Go toolchain's VCS stamp says it, where it made one.
var commit = ""

func buildInfo() versionInfo {
	v := versionInfo{Version: buildVersion(), Commit: commit, Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				if v.Commit == "" {
					v.Commit = s.Value
				}
			case "vcs.modified":
				v.Modified = s.Value == "true"
			}
		}
	}
	if v.Commit == "" {
		v.Commit = pseudoCommit(v.Version)
	}
	return v
}

// pseudo matches a Go pseudo-version: v0.0.0-20260101120000-abcdef123456.
// Compiled on first use: package init runs at every CLI start.
var pseudo = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^v\d+\.\d+\.\d+-(?:\d+\.)?\d{14}-([0-9a-f]{12})(?:\+dirty)?$`)
})

// pseudoCommit is the commit a pseudo-version names, or "".
func pseudoCommit(version string) string {
	if m := pseudo().FindStringSubmatch(version); m != nil {
		return m[1]
	}
	return ""
}

func versionDetails() string {
	v := buildInfo()
	commit := v.Commit
	if commit == "" {
		commit = "unknown"
	}
	if v.Modified {
		commit += " (modified)"
	}
	return fmt.Sprintf("commit:   %s\ngo:       %s\nplatform: %s\n", commit, v.Go, v.Platform)
}

func newVersionCmd(cli *cli) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print agentctl's version, commit and Go version",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			info := buildInfo()
			if v, _, ok := runningServiceVersion(cmd.Context(), cli); ok {
				info.Service = v
			}
			if asJSON {
				return printJSON(cli.out, info)
			}
			fmt.Fprintf(cli.out, "agentctl %s\n%s", buildVersion(), versionDetails())
			if v, pid, ok := runningServiceVersion(cmd.Context(), cli); ok {
				fmt.Fprintf(cli.out, "service:  %s (pid %d)\n", v, pid)
			} else {
				fmt.Fprintln(cli.out, "service:  not running")
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// isUnknownCommand reports cobra's "unknown command" error: a usage
// mistake.
func isUnknownCommand(err error) bool {
	return err != nil && strings.HasPrefix(err.Error(), "unknown command ")
}

// newHelpCmd is cobra's help command, except that a topic that names no
// command is a usage mistake (exit 2), not a help page and success.
func newHelpCmd(cli *cli, root *cobra.Command) *cobra.Command {
	return &cobra.Command{
		Use:   "help [command]",
		Short: "Help about any command",
		Long:  "Help for any command: agentctl help COMMAND [SUBCOMMAND].",
		ValidArgsFunction: func(c *cobra.Command, a []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
			cmd, _, err := root.Find(a)
			if err != nil || cmd == nil {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			var out []cobra.Completion
			for _, sub := range cmd.Commands() {
				if sub.IsAvailableCommand() && strings.HasPrefix(sub.Name(), toComplete) {
					out = append(out, cobra.CompletionWithDesc(sub.Name(), sub.Short))
				}
			}
			return out, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(c *cobra.Command, a []string) error {
			cmd, rest, err := root.Find(a)
			if err != nil || cmd == nil || len(rest) > 0 {
				return usageError{fmt.Errorf("help: no command %q (see 'agentctl --help')", strings.Join(a, " "))}
			}
			cmd.InitDefaultHelpFlag()
			cmd.InitDefaultVersionFlag()
			return cmd.Help()
		},
	}
}

// suggestFor names the commands a mistyped name may have meant: those one
// edit away (a transposition counts as one) or that it begins.
func suggestFor(root *cobra.Command, typed string) []string {
	var out []string
	for _, c := range root.Commands() {
		if !c.IsAvailableCommand() {
			continue
		}
		for _, name := range append([]string{c.Name()}, c.Aliases...) {
			if osaDistance(typed, name) <= 1 || len(typed) > 1 && strings.HasPrefix(name, typed) {
				out = append(out, c.Name())
				break
			}
		}
	}
	return out
}

// osaDistance is the optimal string alignment distance between a and b:
// insertions, deletions, substitutions and transpositions of neighbours.
func osaDistance(a, b string) int {
	x, y := []rune(a), []rune(b)
	d := make([][]int, len(x)+1)
	for i := range d {
		d[i] = make([]int, len(y)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(x); i++ {
		for j := 1; j <= len(y); j++ {
			cost := 1
			if x[i-1] == y[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && x[i-1] == y[j-2] && x[i-2] == y[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(x)][len(y)]
}
