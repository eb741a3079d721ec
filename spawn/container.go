package spawn

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/agentctl/agentctl/home"
	"github.com/agentctl/agentctl/internal/envvar"
	"github.com/agentctl/agentctl/logs"
)

// RunContainer is the monitor as a container's entry point (its PID 1): it
// reads the Spec from the file specPath (a mounted Secret, so the prompt
// and the environment's values stay out of the pod's spec), starts the
// agent under a pty with dir as the session folder (log, exit record,
// attach socket), copies the output to its standard output as well (the
// cluster's log stream), writes what it reads on its standard input to the
// terminal (the cluster's attach), reaps every orphan as a PID 1 must, and
// returns the agent's exit code (128+n for a signal n) so the container's
// termination state carries it. Its own messages go to the folder's
// shim.log, never into the agent's output.
//
// hooks let the caller complete the spec where the agent runs (an agent's
// command line, built by its adapter) and hear of the started agent.
func RunContainer(dir, specPath string, hooks ContainerHooks) int {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		fmt.Fprintf(os.Stderr, "agentctl monitor: session folder: %v\n", err)
		return 125
	}
	logf, err := logs.OpenAppend(filepath.Join(dir, home.ShimLog))
	if err != nil {
		fmt.Fprintf(os.Stderr, "agentctl monitor: %v\n", err)
		return 125
	}
	defer logf.Close()
	logger := slog.New(slog.NewTextHandler(logf, nil)).With("session", filepath.Base(dir))
	b, err := os.ReadFile(specPath)
	if err != nil {
		fmt.Fprintf(os.Stderr, "agentctl monitor: read launch spec: %v\n", err)
		return 125
	}
	var spec Spec
	if err := json.Unmarshal(b, &spec); err != nil {
		fmt.Fprintf(os.Stderr, "agentctl monitor: parse launch spec %s: %v\n", specPath, err)
		return 125
	}
	// The agent runs with the container's environment (PATH, HOME) and the
	// spec's on top.
	spec.Env = envvar.Merge(os.Environ(), spec.Env...)
	var started func(Record)
	if hooks.Prepare != nil {
		if started, err = hooks.Prepare(&spec, dir); err != nil {
			fmt.Fprintf(os.Stderr, "agentctl monitor: %v\n", err)
			os.WriteFile(hooks.terminationLog(), []byte(err.Error()), 0o644)
			return 127
		}
	}
	s, err := startShim(dir, spec, logger, os.Stdout)
	if err != nil {
		// Said on stderr: the container's log and its termination message
		// are where the cluster's user looks.
		fmt.Fprintf(os.Stderr, "agentctl monitor: %v\n", err)
		os.WriteFile(hooks.terminationLog(), []byte(err.Error()), 0o644)
		return 127
	}
	go s.typeStdin(os.Stdin)
	if started != nil {
		go started(s.rec)
	}
	s.run()
	s.mu.Lock()
	exit := *s.exit
	s.mu.Unlock()
	var last []string
	if exit.Signal != "" {
		// The exit code alone cannot tell a signal from an agent that
		// exited 128+n: the termination message says which.
		last = append(last, TerminationSignal+exit.Signal)
	}
	nativeID := s.rec.NativeID
	if nativeID == "" && hooks.NativeID != nil {
		nativeID = hooks.NativeID(dir)
	}
	if nativeID != "" {
		// Once the container ended its files cannot be read: the native
		// id a resume needs stays in its termination state.
		last = append(last, TerminationNativeID+nativeID)
	}
	if len(last) > 0 {
		os.WriteFile(hooks.terminationLog(), []byte(strings.Join(last, "\n")), 0o644)
	}
	return exitCode(exit)
}

// ContainerHooks are what a container's monitor asks its caller.
type ContainerHooks struct {
	// Prepare completes the spec before the start (in the session folder
	// dir); the returned function, when not nil, is called with the
	// record of the started agent, in a goroutine of its own.
	Prepare func(spec *Spec, dir string) (started func(Record), err error)
	// NativeID, when set, is the native id learned after the start and
	// recorded in the session folder dir ("" when none).
	NativeID func(dir string) string
	// TerminationLog is where the last words go; default TerminationLog.
	TerminationLog string
}

// typeStdin writes what arrives on r to the terminal until r ends. A
// container without stdin has /dev/null there, which ends at once.
func (s *shim) typeStdin(r io.Reader) {
	buf := make([]byte, 4096)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			select {
			case <-s.finished:
				return
			default:
			}
			if _, werr := s.master.Write(buf[:n]); werr != nil {
				return
			}
			s.term.input()
		}
		if err != nil {
			return
		}
	}
}

// exitCode is the code a process ends with to carry e: the agent's own
// code, or 128+n for a signal n, as a shell reports it.
func exitCode(e ExitRecord) int {
	switch {
	case e.ExitCode != nil:
		return *e.ExitCode
	case e.Signal != "":
		if n := unix.SignalNum(e.Signal); n != 0 {
			return 128 + int(n)
		}
	}
	return 128
}

func (h ContainerHooks) terminationLog() string {
	if h.TerminationLog != "" {
		return h.TerminationLog
	}
	return TerminationLog
}
