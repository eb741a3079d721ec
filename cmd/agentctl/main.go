// Command agentctl is the control plane for the coding agents on a machine:
// a service that spawns them under a pty and keeps their output, and a CLI
// that lists, watches, stops and resumes them from ground truth.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime/pprof"
	"strings"
	"syscall"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/internal/text"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	endProfile := startCPUProfile(os.Getenv("AGENTCTL_CPUPROFILE"))
	code := run(ctx, newCLI(), os.Args[1:])
	stop()
	endProfile()
	os.Exit(code)
}

// startCPUProfile writes a CPU profile of this process to prefix.PID (the
// CLI and the service it starts each write their own) until the returned
// func is called; with no prefix it does nothing. It is how a slow list is
// taken apart: AGENTCTL_CPUPROFILE=/tmp/ac agentctl list -a, then
// go tool pprof on /tmp/ac.*.
func startCPUProfile(prefix string) func() {
	if prefix == "" {
		return func() {}
	}
	f, err := os.Create(fmt.Sprintf("%s.%d", prefix, os.Getpid()))
	if err != nil {
		fmt.Fprintln(os.Stderr, "agentctl: cpu profile:", err)
		return func() {}
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		fmt.Fprintln(os.Stderr, "agentctl: cpu profile:", err)
		f.Close()
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}
}

// run executes the CLI and returns the process exit code: 0 ok, 1 failure,
// 2 usage; a command may choose another (run --wait exits with the agent's).
func run(ctx context.Context, cli *cli, args []string) int {
	root := newRootCmd(cli)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	// Ctrl-C (or SIGTERM) ends a command quietly, as a shell reports it.
	if ctx.Err() != nil && !errors.As(err, new(exitError)) {
		return 130
	}
	if isUnknownCommand(err) {
		msg := "agentctl: " + text.CleanLines(err.Error())
		if len(args) > 0 {
			if s := suggestFor(root, args[0]); len(s) > 0 {
				msg += "\n\nDid you mean this?\n\t" + strings.Join(s, "\n\t") + "\n"
			}
		}
		fmt.Fprintln(cli.errOut, msg)
		return 2
	}
	var exit exitError
	if errors.As(err, &exit) {
		return exit.code
	}
	if p, ok := err.(printedError); !ok || !p.quiet {
		// An error may carry another host's words (its API's message,
		// what its ssh said): cleaned like any text not ours.
		fmt.Fprintln(cli.errOut, "agentctl: "+text.CleanLines(err.Error()))
	}
	var usage usageError
	if errors.As(err, &usage) {
		return 2
	}
	if api.CodeOf(err) == api.CodeInvalid {
		return 2
	}
	return 1
}

// usageError marks a mistake in how the command was called.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// exitError carries an exit code a command chose; its message, if any, was
// already printed.
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }
