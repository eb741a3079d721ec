package agenttest

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/agentctl/agentctl/adapters"
	"github.com/agentctl/agentctl/internal/fakemodel"
	"github.com/agentctl/agentctl/spawn"
)

// RunPTY starts spec in dir under a pty, in its own session and process
// group as agentctl's monitor does, and returns its exit code (128+signal
// when a signal ended it) and its terminal output. onStart, when set, runs
// while the agent is alive, with its pid and the time just before the
// start. The whole group is killed after limit.
func RunPTY(t testing.TB, spec adapters.LaunchSpec, dir string, limit time.Duration, onStart func(pid int, since time.Time)) (int, string) {
	t.Helper()
	path, err := spawn.LookPath(spec.Argv[0], spec.Env, dir)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(path, spec.Argv[1:]...)
	cmd.Args[0] = spec.Argv[0]
	cmd.Env = spec.Env
	cmd.Dir = dir
	since := time.Now()
	ptmx, err := pty.Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	defer ptmx.Close()
	var out bytes.Buffer
	copied := make(chan struct{})
	go func() {
		io.Copy(&out, ptmx) // ends with EIO once every holder of the terminal is gone
		close(copied)
	}()
	if onStart != nil {
		onStart(cmd.Process.Pid, since)
	}
	timer := time.AfterFunc(limit, func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	defer timer.Stop()
	err = cmd.Wait()
	<-copied
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			code = 128 + int(ws.Signal())
		}
	} else if err != nil {
		t.Fatal(err)
	}
	return code, out.String()
}

// Session discovers a's sessions and returns the one with native id id,
// failing the test when it is not there.
func Session(t testing.TB, a adapters.Adapter, id string) adapters.NativeSession {
	t.Helper()
	ss, err := a.Discover(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range ss {
		if s.NativeID == id {
			return s
		}
	}
	t.Fatalf("session %s not discovered (%d sessions)", id, len(ss))
	return adapters.NativeSession{}
}

// FakeModel starts the project's fake model server on 127.0.0.1 for the
// length of the test.
func FakeModel(t testing.TB) *fakemodel.Server {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	srv, err := fakemodel.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}
