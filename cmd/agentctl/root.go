package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"runtime/debug"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/agentctl/agentctl/client"
	"github.com/agentctl/agentctl/service"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = ""

func buildVersion() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

func newRootCmd(cli *cli) *cobra.Command {
	root := &cobra.Command{
		Use:   "agentctl",
		Short: "One control plane for the coding agents on this machine",
		Long: `agentctl runs coding agents (Claude Code, Codex, OpenCode, Pi) and any other
command under a supervising service, each in its own session and process group
under a pty, and answers what is running, what happened and what it said from
ground truth: the process table and each agent's own session records.

The service starts by itself the first time a command needs it (set
AGENTCTL_NO_AUTOSTART=1 to prevent that), or runs as a systemd / launchd unit
after 'agentctl service install'. State lives in $AGENTCTL_HOME (default
~/.agentctl).

Other hosts' services are reached over ssh: -H NAME or -H ssh://user@host
(or AGENTCTL_HOST) on any command, --hosts all on list, events, top and web, and
HOST/ID handles; see 'agentctl host --help'.`,
		Version:       buildVersion(),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	// Cobra's own help and usage go to the cli's streams too.
	root.SetIn(cli.in)
	root.SetOut(cli.out)
	root.SetErr(cli.errOut)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usageError{fmt.Errorf("%w (see '%s --help')", err, c.CommandPath())}
	})
	root.AddCommand(
		newRunCmd(cli), newLaunchCmd(cli), newListCmd(cli), newTopCmd(cli), newStatsCmd(cli), newStatusCmd(cli), newInspectCmd(cli), newWaitCmd(cli), newLogsCmd(cli),
		newPeekCmd(cli), newExplainCmd(cli), newStopCmd(cli), newKillCmd(cli), newRenameCmd(cli), newAttachCmd(cli), newSendCmd(cli), newResumeCmd(cli),
		newPruneCmd(cli), newRmCmd(cli), newRestartCmd(cli), newDaemonCmd(cli), newShimCmd(cli), newPodSessionCmd(cli),
		newGroupCmd(cli), newWorktreeCmd(cli),
		newLockCmd(cli), newUnlockCmd(cli), newLocksCmd(cli), newFuseCmd(cli), newFusesCmd(cli, "fuses"), newEventsCmd(cli), newLimitsCmd(cli),
		newServiceCmd(cli), newVersionCmd(cli),
		newApproveCmd(cli), newDenyCmd(cli), newAnswerCmd(cli), newHookCmd(cli), newIntegrateCmd(cli),
		newHostCmd(cli), newDialStdioCmd(cli), newWebCmd(cli),
	)
	root.AddCommand(buildCommands(cli)...)
	addHostFlag(cli, root)
	addCompletions(cli, root)
	organizeHelp(cli, root)
	return root
}

// args wraps a positional-argument check so its failure is a usage error.
func args(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, a []string) error {
		if err := check(cmd, a); err != nil {
			return usageError{fmt.Errorf("%s: %w", commandName(cmd), err)}
		}
		return nil
	}
}

// commandName is cmd's path without the program's name ("group status"):
// what an error names, since main prints every error after "agentctl: ".
func commandName(cmd *cobra.Command) string {
	return strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" ")
}

// newClient returns a client for the target host (-H, AGENTCTL_HOST), by
// default the user's home on this machine, starting the service on demand
// unless AGENTCTL_NO_AUTOSTART=1.
func (cli *cli) newClient() (*client.Client, error) {
	if cli.remoteTarget() {
		h, err := cli.targetHost()
		if err != nil {
			return nil, err
		}
		return h.Client()
	}
	return cli.localClient()
}

// localClient is the client of this machine's service in the user's home.
func (cli *cli) localClient() (*client.Client, error) {
	h, err := cli.userHome()
	if err != nil {
		return nil, err
	}
	exe, err := cli.exe()
	if err != nil {
		return nil, err
	}
	c := client.New(h, exe, cli.autostart())
	c.StartInstalledWith(service.StartInstalled)
	c.OnServiceVersion(cli.warnVersionSkew)
	return c, nil
}

// warnVersionSkew says that this machine's service runs another version
// than this CLI (an upgrade replaced the binary, not the running service).
func (cli *cli) warnVersionSkew(service string) {
	if mine := buildVersion(); service != mine {
		cli.warn("the service runs %s, this is %s; 'agentctl daemon restart' to upgrade it", service, mine)
	}
}

// table writes aligned columns, buffered: tabwriter writes each cell on
// its own, which unbuffered is a system call per cell (40,000 for a list of
// 2,000 sessions) to a terminal or a pipe.
type table struct {
	*tabwriter.Writer
	buf *bufio.Writer
	// noHeaders drops the header line (--no-headers): rows for scripts.
	noHeaders bool
}

func newTable(w io.Writer) *table {
	buf := bufio.NewWriterSize(w, 64<<10)
	return &table{Writer: tabwriter.NewWriter(buf, 0, 4, 2, ' ', 0), buf: buf}
}

// header writes the table's header line, unless --no-headers asked for none.
func (t *table) header(line string) {
	if !t.noHeaders {
		fmt.Fprintln(t, line)
	}
}

// tableOptions are the flags every table command has.
type tableOptions struct{ noHeaders bool }

func (o *tableOptions) register(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&o.noHeaders, "no-headers", false, "print no header line")
}

func (o tableOptions) newTable(w io.Writer) *table {
	t := newTable(w)
	t.noHeaders = o.noHeaders
	return t
}

// Flush aligns and writes out what was written.
func (t *table) Flush() error {
	if err := t.Writer.Flush(); err != nil {
		return err
	}
	return t.buf.Flush()
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
