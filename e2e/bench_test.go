package e2e

import (
	"context"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/client"
	"github.com/agentctl/agentctl/home"
)

// benchEnv is NewEnv for benchmarks: one service for the whole benchmark.
func benchEnv(b *testing.B) (*Env, *client.Client) {
	b.Helper()
	t := &testing.T{}
	homeDir, err := os.MkdirTemp("", "acb")
	if err != nil {
		b.Fatal(err)
	}
	e := &Env{T: t, Home: homeDir, Bin: agentctlBin, Vars: append(os.Environ(), "AGENTCTL_HOME="+homeDir)}
	if out, err := e.Command("daemon", "start").CombinedOutput(); err != nil {
		b.Fatalf("daemon start: %v %s", err, out)
	}
	b.Cleanup(func() {
		e.Command("daemon", "stop").Run()
		os.RemoveAll(homeDir)
	})
	return e, client.New(home.Home(homeDir), agentctlBin, false)
}

// BenchmarkRunRoundTrip: `agentctl run -- true` as a user runs it, process
// start of the CLI included, against a running service.
func BenchmarkRunRoundTrip(b *testing.B) {
	e, _ := benchEnv(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if out, err := e.Command("run", "--", "true").CombinedOutput(); err != nil {
			b.Fatalf("run: %v %s", err, out)
		}
	}
}

// BenchmarkSpawnToExec: one start request on the socket, answered once the
// command has exec'd and launch.json is on disk (no CLI process).
func BenchmarkSpawnToExec(b *testing.B) {
	_, c := benchEnv(b)
	ctx := context.Background()
	cwd, _ := os.Getwd()
	req := api.RunRequest{Command: []string{"true"}, Cwd: cwd, Env: os.Environ()}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := c.Launch(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkOutputThroughput compares a session that cats 32 MiB through its
// pty into output.log with cat of the same bytes straight to a file.
func BenchmarkOutputThroughput(b *testing.B) {
	data := make([]byte, 32<<20)
	rand.New(rand.NewSource(1)).Read(data)
	src := filepath.Join(b.TempDir(), "payload")
	if err := os.WriteFile(src, data, 0o600); err != nil {
		b.Fatal(err)
	}
	b.Run("baseline=cat-to-file", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		dst := filepath.Join(b.TempDir(), "out")
		for i := 0; i < b.N; i++ {
			if err := exec.Command("sh", "-c", "cat "+src+" > "+dst).Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("session-pty-to-log", func(b *testing.B) {
		_, c := benchEnv(b)
		ctx := context.Background()
		cwd, _ := os.Getwd()
		b.SetBytes(int64(len(data)))
		for i := 0; i < b.N; i++ {
			s, err := c.Launch(ctx, api.RunRequest{Command: []string{"sh", "-c", "stty raw -echo -opost; cat " + src}, Cwd: cwd, Env: os.Environ()})
			if err != nil {
				b.Fatal(err)
			}
			for {
				got, err := c.Get(ctx, s.ID)
				if err != nil {
					b.Fatal(err)
				}
				if got.Status.Ended() {
					break
				}
				time.Sleep(2 * time.Millisecond)
			}
		}
	})
}
