package main

import (
	"bytes"
	"os"
	"sync"
	"testing"

	"github.com/agentctl/agentctl/home"
)

// fakeCLI is a cli for tests (docker/cli's FakeCli): its output goes to
// buffers, its input is empty, its environment is env alone (none of the
// process's, so tests run in parallel), and its home is h. A command built
// from it runs in-process against whatever service answers in h.
type fakeCLI struct {
	*cli
	stdout, stderr bytes.Buffer
	// stdin is what a person types; asks says one is there to answer.
	stdin *bytes.Reader
	asks  bool
	mu    sync.Mutex
	env   map[string]string
}

func newFakeCLI(t *testing.T, h home.Home, env map[string]string) *fakeCLI {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeCLI{env: map[string]string{"AGENTCTL_NO_AUTOSTART": "1"}, stdin: bytes.NewReader(nil)}
	for k, v := range env {
		f.env[k] = v
	}
	f.cli = &cli{
		in: f.stdin, out: &f.stdout, errOut: &f.stderr,
		lookupEnv: func(k string) (string, bool) {
			f.mu.Lock()
			defer f.mu.Unlock()
			v, ok := f.env[k]
			return v, ok
		},
		environ: func() []string {
			f.mu.Lock()
			defer f.mu.Unlock()
			out := make([]string, 0, len(f.env))
			for k, v := range f.env {
				out = append(out, k+"="+v)
			}
			return out
		},
		setenv: func(k, v string) error {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.env[k] = v
			return nil
		},
		home: func() (home.Home, error) { return h, nil },
		exe:  func() (string, error) { return exe, nil },
		askable: func() bool {
			f.mu.Lock()
			defer f.mu.Unlock()
			return f.asks
		},
	}
	return f
}

// answering has a person type answer at the fakeCLI's prompts.
func (f *fakeCLI) answering(answer string) *fakeCLI {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asks = true
	f.stdin.Reset([]byte(answer))
	return f
}

// testCLI is a fakeCLI in a home of its own, for tests that only build
// commands or look at what they refuse.
func testCLI(t *testing.T) *cli {
	t.Helper()
	return newFakeCLI(t, home.Home(t.TempDir()), nil).cli
}
