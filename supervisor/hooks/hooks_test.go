package hooks

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentctl/agentctl/proc"
)

func intp(n int) *int { return &n }

func TestVarsEnv(t *testing.T) {
	tests := []struct {
		vars Vars
		want []string
	}{
		{Vars{}, nil},
		{Vars{SessionID: "s1", Cwd: "/w", Adapter: "exec"}, []string{"AGENTCTL_SESSION_ID=s1", "AGENTCTL_CWD=/w", "AGENTCTL_ADAPTER=exec"}},
		{Vars{SessionID: "s1", ExitCode: intp(0), Group: "g", Model: "m", Branch: "b"}, []string{"AGENTCTL_SESSION_ID=s1", "AGENTCTL_EXIT_CODE=0", "AGENTCTL_GROUP=g", "AGENTCTL_MODEL=m", "AGENTCTL_BRANCH=b"}},
	}
	for _, tt := range tests {
		if got := tt.vars.Env(); strings.Join(got, " ") != strings.Join(tt.want, " ") {
			t.Errorf("Env(%+v) = %q, want %q", tt.vars, got, tt.want)
		}
	}
}

func TestRun(t *testing.T) {
	hostile := `$(touch pwned); touch pwned2 "'` // a value that would run code if interpolated
	tests := []struct {
		name    string
		script  string
		vars    Vars
		env     []string
		timeout time.Duration
		dir     string // "" = the test's directory
		outcome string
		exit    *int
		check   func(t *testing.T, dir string, r Result)
	}{
		{
			name:    "values only through the environment",
			script:  `printf '%s|%s|%s|%s|%s' "$AGENTCTL_SESSION_ID" "$AGENTCTL_CWD" "$AGENTCTL_EXIT_CODE" "${AGENTCTL_MODEL-unset}" "$PWD" > out`,
			vars:    Vars{SessionID: hostile, Cwd: "/work dir", ExitCode: intp(3)},
			env:     []string{"PATH=/usr/bin:/bin", "AGENTCTL_MODEL=stale-from-caller"},
			outcome: "ok", exit: intp(0),
			check: func(t *testing.T, dir string, r Result) {
				b, err := os.ReadFile(filepath.Join(dir, "out"))
				if err != nil {
					t.Fatal(err)
				}
				want := hostile + "|/work dir|3|unset|" + dir
				if string(b) != want {
					t.Errorf("hook saw %q, want %q", b, want)
				}
				for _, f := range []string{"pwned", "pwned2"} {
					if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
						t.Errorf("%s exists: a session value was run as code", f)
					}
				}
			},
		},
		{name: "non-zero exit", script: "echo oops >&2; exit 7", outcome: "failed", exit: intp(7),
			check: func(t *testing.T, dir string, r Result) {
				if r.Describe() != "exited 7" {
					t.Errorf("Describe = %q", r.Describe())
				}
			}},
		{name: "killed by a signal", script: "kill -USR1 $$", outcome: "failed",
			check: func(t *testing.T, dir string, r Result) {
				if r.Signal != "SIGUSR1" || r.ExitCode != nil {
					t.Errorf("signal = %q, exit = %v", r.Signal, r.ExitCode)
				}
			}},
		{
			name:    "timeout ends the whole group",
			script:  `sleep 30 & echo $! > bgpid; trap '' TERM; sleep 30`,
			timeout: 300 * time.Millisecond, outcome: "timeout",
			check: func(t *testing.T, dir string, r Result) {
				b, err := os.ReadFile(filepath.Join(dir, "bgpid"))
				if err != nil {
					t.Fatal(err)
				}
				pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
				if info, err := proc.Lookup(pid); err == nil && !info.Zombie {
					t.Errorf("background child %d of the hook survived the timeout", pid)
				}
			},
		},
		{name: "missing directory", script: "true", dir: "/nonexistent/dir", outcome: "error",
			check: func(t *testing.T, dir string, r Result) {
				if !strings.Contains(r.Error, "/nonexistent/dir") {
					t.Errorf("error %q does not name the directory", r.Error)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			runDir := tt.dir
			if runDir == "" {
				runDir = dir
			}
			logPath := filepath.Join(t.TempDir(), LogName)
			env := tt.env
			if env == nil {
				env = []string{"PATH=/usr/bin:/bin"}
			}
			r := Run(context.Background(), Command{Phase: OnComplete, Script: tt.script, Dir: runDir, Env: env, Vars: tt.vars, Timeout: tt.timeout, KillGrace: 200 * time.Millisecond, LogPath: logPath})
			if r.Outcome() != tt.outcome {
				t.Fatalf("outcome = %s (%s), want %s", r.Outcome(), r.Describe(), tt.outcome)
			}
			if tt.exit != nil && (r.ExitCode == nil || *r.ExitCode != *tt.exit) {
				t.Errorf("exit = %v, want %d", r.ExitCode, *tt.exit)
			}
			log, err := os.ReadFile(logPath)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(log), "--- on-complete ") || strings.Count(string(log), "\n--- ") < 1 {
				t.Errorf("log lacks header and footer:\n%s", log)
			}
			if tt.check != nil {
				tt.check(t, dir, r)
			}
		})
	}
}

func TestRunOutputInLog(t *testing.T) {
	logPath := filepath.Join(t.TempDir(), LogName)
	for _, msg := range []string{"first", "second"} {
		Run(context.Background(), Command{Phase: OnCreate, Script: "echo " + msg + "; echo err-" + msg + " >&2", Dir: t.TempDir(), LogPath: logPath})
	}
	b, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"first\n", "err-first\n", "second\n", "err-second\n", "on-create exited 0"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("log lacks %q:\n%s", want, b)
		}
	}
}

func TestRunCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan struct{})
	var r Result
	done := make(chan struct{})
	go func() {
		defer close(done)
		r = Run(ctx, Command{Phase: OnComplete, Script: "sleep 30", Dir: t.TempDir(), LogPath: filepath.Join(t.TempDir(), LogName), KillGrace: 100 * time.Millisecond,
			OnStart: func(proc.Identity) { close(started) }})
	}()
	<-started
	cancel()
	<-done
	if !strings.HasPrefix(r.Error, "cancelled") || r.Signal != "SIGTERM" {
		t.Fatalf("result = %+v, want cancelled and ended by SIGTERM", r)
	}
}

func TestRunOnce(t *testing.T) {
	sessionDir := t.TempDir()
	counter := filepath.Join(t.TempDir(), "count")
	c := Command{Phase: OnComplete, Script: `echo run >> "$COUNTER"`, Dir: t.TempDir(), Env: []string{"COUNTER=" + counter}, Vars: Vars{SessionID: "s1"}}

	const callers = 10
	var wg sync.WaitGroup
	var mu sync.Mutex
	ranCount := 0
	for range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, ran, err := RunOnce(context.Background(), sessionDir, c)
			if err != nil {
				t.Error(err)
			}
			if ran {
				mu.Lock()
				ranCount++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	b, _ := os.ReadFile(counter)
	if ranCount != 1 || strings.Count(string(b), "run") != 1 {
		t.Fatalf("%d callers ran it and the hook ran %d times, want 1 and 1", ranCount, strings.Count(string(b), "run"))
	}
	rec, err := ReadRecord(sessionDir, OnComplete)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Status() != "ok" || !rec.Finished || rec.PID == 0 {
		t.Fatalf("record = %+v, status %s", rec, rec.Status())
	}
	if _, err := os.Stat(filepath.Join(sessionDir, LogName)); err != nil {
		t.Errorf("hook log not beside the record: %v", err)
	}
	if _, err := ReadRecord(sessionDir, OnCreate); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("record of a phase never run: %v, want ErrNotExist", err)
	}
}

// A run the service claimed but never finished (it died meanwhile) is
// reported and never started again.
func TestRunOnceAfterInterruptedRun(t *testing.T) {
	tests := []struct {
		name   string
		record string
		want   string
	}{
		{"claimed, then crashed before writing", "", "interrupted"},
		{"started, process gone", `{"phase":"on-complete","command":"x","pid":2147483000,"start_ticks":1,"finished":false}`, "interrupted"},
		{"started, process alive", `{"phase":"on-complete","command":"x","pid":` + strconv.Itoa(os.Getpid()) + `,"start_ticks":` + selfTicks(t) + `,"finished":false}`, "running"},
		{"claimed by a live runner, not started yet", `{"phase":"on-complete","command":"x","runner":{"pid":` + strconv.Itoa(os.Getpid()) + `,"start_ticks":` + selfTicks(t) + `},"finished":false}`, "running"},
		{"claimed by a runner that is gone", `{"phase":"on-complete","command":"x","runner":{"pid":2147483000,"start_ticks":1},"finished":false}`, "interrupted"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sessionDir := t.TempDir()
			if err := os.WriteFile(RecordPath(sessionDir, OnComplete), []byte(tt.record), 0o600); err != nil {
				t.Fatal(err)
			}
			marker := filepath.Join(t.TempDir(), "ran")
			rec, ran, err := RunOnce(context.Background(), sessionDir, Command{Phase: OnComplete, Script: "touch " + marker, Dir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			if ran {
				t.Fatal("RunOnce ran a hook that was already claimed")
			}
			if _, err := os.Stat(marker); err == nil {
				t.Fatal("the hook ran again")
			}
			if rec.Status() != tt.want {
				t.Errorf("status = %s, want %s", rec.Status(), tt.want)
			}
		})
	}
}

func selfTicks(t *testing.T) string {
	info, err := proc.Lookup(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	return strconv.FormatUint(info.Start, 10)
}
