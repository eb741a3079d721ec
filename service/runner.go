package service

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
)

// commandRunner runs a service manager's command-line tool (systemctl,
// launchctl) and returns its standard output.
type commandRunner interface {
	Run(ctx context.Context, name string, args ...string) (string, error)
}

// CommandError is a tool run that exited non-zero.
type CommandError struct {
	Command  string
	ExitCode int
	Stderr   string
}

func (e *CommandError) Error() string {
	msg := fmt.Sprintf("%s: exit status %d", e.Command, e.ExitCode)
	if s := strings.TrimSpace(e.Stderr); s != "" {
		msg += ": " + strings.Join(strings.Fields(s), " ")
	}
	return msg
}

// exitCode returns the exit code of a failed tool run, or -1.
func exitCode(err error) int {
	var ce *CommandError
	if errors.As(err, &ce) {
		return ce.ExitCode
	}
	return -1
}

type execRunner struct{}

func (execRunner) Run(ctx context.Context, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	line := strings.Join(append([]string{name}, args...), " ")
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.ExitCode() >= 0 {
			return stdout.String(), &CommandError{Command: line, ExitCode: ee.ExitCode(), Stderr: stderr.String()}
		}
		return stdout.String(), fmt.Errorf("run %s: %w", line, err)
	}
	return stdout.String(), nil
}
