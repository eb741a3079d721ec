package main

import (
	"fmt"
	"io"
	"os"

	"golang.org/x/term"

	"github.com/agentctl/agentctl/home"
	"github.com/agentctl/agentctl/internal/text"
)

// cli is what a command needs of the world around it: its streams, the
// environment it reads, this machine's agentctl home and binary. Every
// command is built from one (newXCmd(cli)) and reaches hosts and clients
// only through its methods (cli.newClient, cli.defaultHost, cli.hostFor…),
// so a test builds a cli with buffers and a home whose service runs in the
// test, and checks a command's output in-process. main builds the real one
// (newCLI).
type cli struct {
	in     io.Reader
	out    io.Writer
	errOut io.Writer
	// lookupEnv and environ read the environment (a launch carries the
	// whole of it to the service); setenv sets a variable for the command
	// and what it runs (-H sets AGENTCTL_HOST for a pager's or top's own
	// agentctl).
	lookupEnv func(key string) (string, bool)
	environ   func() []string
	setenv    func(key, value string) error
	// home is this machine's agentctl home ($AGENTCTL_HOME, else
	// ~/.agentctl); exe the agentctl binary that starts the service.
	home func() (home.Home, error)
	exe  func() (string, error)
	// askable says whether a person answers on in: rm and prune ask
	// before removing what a selection reached only then.
	askable func() bool
}

// newCLI is the cli of the agentctl process: its standard streams and
// environment.
func newCLI() *cli {
	return &cli{
		in: os.Stdin, out: os.Stdout, errOut: os.Stderr,
		lookupEnv: os.LookupEnv, environ: os.Environ, setenv: os.Setenv,
		home:    home.Default,
		askable: func() bool { return term.IsTerminal(int(os.Stdin.Fd())) },
		exe: func() (string, error) {
			exe, err := os.Executable()
			if err != nil {
				return "", fmt.Errorf("find the agentctl binary: %w", err)
			}
			return exe, nil
		},
	}
}

// getenv is the value of the environment variable key, "" when unset.
func (cli *cli) getenv(key string) string {
	v, _ := cli.lookupEnv(key)
	return v
}

// userHome is this machine's agentctl home.
func (cli *cli) userHome() (home.Home, error) { return cli.home() }

// warn prints a warning, cleaned: warnings carry other hosts' words.
func (cli *cli) warn(format string, a ...any) {
	fmt.Fprintln(cli.errOut, "agentctl: warning: "+text.CleanLines(fmt.Sprintf(format, a...)))
}

// fdOf is the file descriptor behind a stream, -1 when it is no file (a
// test's buffer): term.IsTerminal(-1) is false.
func fdOf(stream any) int {
	if f, ok := stream.(interface{ Fd() uintptr }); ok {
		return int(f.Fd())
	}
	return -1
}
