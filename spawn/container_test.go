package spawn

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The test binary doubles as the monitor, in a container or started by a
// Starter.
func TestMain(m *testing.M) {
	if len(os.Args) == 4 && os.Args[1] == "container-shim" {
		os.Exit(RunContainer(os.Args[2], os.Args[3], ContainerHooks{TerminationLog: testTerminationLog(os.Args[3])}))
	}
	if len(os.Args) == 4 && os.Args[1] == "container-shim-prepared" {
		os.Exit(RunContainer(os.Args[2], os.Args[3], ContainerHooks{Prepare: prepareForTest, TerminationLog: testTerminationLog(os.Args[3])}))
	}
	if len(os.Args) == 3 && os.Args[1] == "shim" {
		os.Exit(RunShim(os.Args[2]))
	}
	os.Exit(m.Run())
}

// testTerminationLog is a test container's termination log: beside its spec,
// not the machine's /dev.
func testTerminationLog(specPath string) string {
	return filepath.Join(filepath.Dir(specPath), "termination-log")
}

// The monitor as a container's entry point, run here as the PID 1 of a new
// PID namespace when root may make one (unshare): the agent's output on stdout,
// stdin typed into its terminal, an orphan that does not hold the end, and
// the agent's exit code as the monitor's.
func TestRunContainer(t *testing.T) {
	for _, tc := range []struct {
		name   string
		script string
		stdin  string
		code   int
		out    string
		// last is the termination message ("": none written).
		last string
	}{
		{"exit code and orphan", "echo started; sleep 100 & exit 3", "", 3, "started", ""},
		{"stdin typed", "read answer; echo got:$answer; exit 0", "yes\n", 0, "got:yes", ""},
		{"signal", "echo bye; kill -KILL $$", "", 128 + 9, "bye", TerminationSignal + "SIGKILL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			spec := Spec{Record: Record{ID: "c1", Adapter: "exec", Argv: []string{"sh", "-c", tc.script}, Cwd: dir}, Env: []string{"A=1"}}
			b, _ := json.Marshal(spec)
			specPath := filepath.Join(dir, "spec.json")
			os.WriteFile(specPath, b, 0o600)
			exe, _ := os.Executable()
			args := []string{exe, "container-shim", filepath.Join(dir, "session"), specPath}
			// As root, in a PID namespace of its own with its own /proc, as
			// in a container.
			if unshare, err := exec.LookPath("unshare"); err == nil && os.Geteuid() == 0 {
				args = append([]string{unshare, "--fork", "--pid", "--mount-proc", "--kill-child"}, args...)
			}
			cmd := exec.Command(args[0], args[1:]...)
			cmd.Stdin = strings.NewReader(tc.stdin)
			var out bytes.Buffer
			cmd.Stdout = &out
			done := make(chan error, 1)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			go func() { done <- cmd.Wait() }()
			var err error
			select {
			case err = <-done:
			case <-time.After(30 * time.Second):
				cmd.Process.Kill()
				t.Fatalf("the monitor did not end; output %q", out.String())
			}
			var exit *exec.ExitError
			code := 0
			if errors.As(err, &exit) {
				code = exit.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tc.code || !strings.Contains(out.String(), tc.out) {
				t.Fatalf("exit %d, stdout %q; want %d and %q", code, out.String(), tc.code, tc.out)
			}
			rec, err := ReadExit(filepath.Join(dir, "session"))
			if err != nil || rec == nil {
				t.Fatalf("exit record: %v, %v", rec, err)
			}
			if exitCode(*rec) != tc.code {
				t.Fatalf("exit record %+v, want code %d", rec, tc.code)
			}
			if last, _ := os.ReadFile(testTerminationLog(specPath)); string(last) != tc.last {
				t.Errorf("termination message %q, want %q", last, tc.last)
			}
		})
	}
}

// prepareForTest builds the command line the spec left out (as an agent's
// adapter does in a pod), and has it wait for the started hook's file.
func prepareForTest(spec *Spec, dir string) (func(Record), error) {
	mark := filepath.Join(spec.Record.Cwd, "started")
	spec.Record.Argv = []string{"sh", "-c", "while [ ! -e " + mark + " ]; do sleep 0.05; done; cat " + mark + "; exit 7"}
	return func(rec Record) {
		os.WriteFile(mark+".tmp", []byte(fmt.Sprintf("started pid>0:%v\n", rec.Process.PID > 0)), 0o600)
		os.Rename(mark+".tmp", mark)
	}, nil
}

// A monitor whose caller builds the command line: Prepare fills the spec
// before the start, and the started hook hears of the running agent.
func TestRunContainerPrepared(t *testing.T) {
	dir := t.TempDir()
	spec := Spec{Record: Record{ID: "c2", Adapter: "pi", Prompt: "hi", Cwd: dir}}
	b, _ := json.Marshal(spec)
	specPath := filepath.Join(dir, "spec.json")
	os.WriteFile(specPath, b, 0o600)
	exe, _ := os.Executable()
	cmd := exec.Command(exe, "container-shim-prepared", filepath.Join(dir, "session"), specPath)
	var out bytes.Buffer
	cmd.Stdout = &out
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 7 || !strings.Contains(out.String(), "started pid>0:true") {
		t.Fatalf("exit %v, stdout %q: want 7 and the started hook's word", err, out.String())
	}
	rec, err := ReadRecord(filepath.Join(dir, "session"))
	if err != nil || len(rec.Argv) != 3 || rec.Argv[0] != "sh" {
		t.Fatalf("launch record %+v (%v): want the prepared command line", rec, err)
	}
}
