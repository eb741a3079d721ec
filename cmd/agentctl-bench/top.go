package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/client"
	"github.com/agentctl/agentctl/home"
)

// topResult is what the live view costs with many sessions on screen.
type topResult struct {
	sessions, running int
	// latencies run from a session's exit (its exit record's time) to its
	// changed row on the terminal's screen; fromEvent from the service's
	// publishing of the session.stopped event to the same.
	latencies, fromEvent []time.Duration
	rssMB, hwmMB         float64
	screenPollGap        time.Duration
}

// topRunning is how many of the sessions keep running during the
// measure; the others have ended (the view shows them with -a).
const topRunning = 20

// topSamples is how many exits are timed.
const topSamples = 10

// measureTop runs `agentctl top -a` in a real terminal (a tmux server of
// its own) over n sessions, times from a session's exit to its changed row
// on the screen (the event stream's latency plus the redraw, read with
// capture-pane), and reads the view's memory.
func measureTop(ctx context.Context, o options, work string, n int) (topResult, error) {
	res := topResult{sessions: n, running: topRunning}
	if _, err := exec.LookPath("tmux"); err != nil {
		return res, errors.New("tmux is not installed: the live view is measured in a real terminal")
	}
	homeDir := filepath.Join(work, "top")
	// Only the sessions started here: no agent store of the machine's
	// user is read.
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(k, "AGENTCTL_") && !strings.HasPrefix(k, "XDG_") && !slices.Contains([]string{"HOME", "CLAUDE_CONFIG_DIR", "CODEX_HOME", "PI_CODING_AGENT_DIR", "OPENCODE_CONFIG_DIR"}, k) {
			env = append(env, kv)
		}
	}
	env = append(env, "AGENTCTL_HOME="+homeDir, "HOME="+filepath.Join(work, "top-user"))
	cli := func(args ...string) error {
		cmd := exec.CommandContext(ctx, o.bin, args...)
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("agentctl %v: %w: %s", args, err, out)
		}
		return nil
	}
	if err := os.MkdirAll(filepath.Join(work, "top-user"), 0o700); err != nil {
		return res, err
	}
	if err := cli("daemon", "start"); err != nil {
		return res, err
	}
	defer cli("daemon", "stop")
	c := client.New(home.Home(homeDir), o.bin, false)
	cwd, _ := os.Getwd()
	pathEnv := []string{"PATH=" + os.Getenv("PATH")}
	fmt.Fprintf(os.Stderr, "top: starting %d sessions\n", n)
	ended, errs := launchMany(ctx, c, n-topRunning, func(i int) api.RunRequest {
		return api.RunRequest{Command: []string{"sh", "-c", "exit " + strconv.Itoa(i%3)}, Cwd: cwd, Env: pathEnv, Name: "done-" + strconv.Itoa(i)}
	})
	if errs > 0 {
		return res, fmt.Errorf("%d of %d sessions failed to start", errs, n-topRunning)
	}
	if _, err := checkExitCodes(ctx, c, ended); err != nil {
		return res, err
	}
	running, errs := launchMany(ctx, c, topRunning-1, func(i int) api.RunRequest {
		return api.RunRequest{Command: []string{"sleep", "3600"}, Cwd: cwd, Env: pathEnv, Name: "run-" + strconv.Itoa(i)}
	})
	defer stopMany(context.WithoutCancel(ctx), c, running)
	if errs > 0 {
		return res, fmt.Errorf("%d sessions failed to start", errs)
	}

	dir, err := os.MkdirTemp("", "tm")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "s")
	tmux := func(args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, "tmux", append([]string{"-S", sock}, args...)...)
		cmd.Env = append(slices.Clone(env), "TERM=xterm-256color")
		out, err := cmd.CombinedOutput()
		if err != nil {
			return "", fmt.Errorf("tmux %s: %w: %s", args[0], err, out)
		}
		return string(out), nil
	}
	if _, err := tmux("-f", "/dev/null", "new-session", "-d", "-x", "200", "-y", "50", "-s", "top", o.bin, "top", "-a", "--refresh", "0"); err != nil {
		return res, err
	}
	defer tmux("kill-server")
	screen := func() string { s, _ := tmux("capture-pane", "-p", "-t", "top"); return s }
	waitScreen := func(what string, cond func(string) bool) error {
		deadline := time.Now().Add(30 * time.Second)
		for !cond(screen()) {
			if time.Now().After(deadline) {
				return fmt.Errorf("timed out waiting for %s on the view's screen:\n%s", what, screen())
			}
			time.Sleep(2 * time.Millisecond)
		}
		return nil
	}
	if err := waitScreen("the table", func(s string) bool {
		return strings.Contains(s, fmt.Sprintf("%d running", topRunning-1)) && strings.Contains(s, fmt.Sprintf("%d ended today", n-topRunning))
	}); err != nil {
		return res, err
	}
	// How long one look at the screen takes bounds the resolution.
	t0 := time.Now()
	screen()
	res.screenPollGap = time.Since(t0)

	// The service's own record of when it published each end, read from
	// the same event stream the view follows.
	published := make(chan api.Event, topSamples*4)
	ectx, ecancel := context.WithCancel(ctx)
	defer ecancel()
	go c.Events(ectx, client.EventOptions{Types: []string{api.EventSessionStopped}}, nil, func(e api.Event) error {
		select {
		case published <- e:
		default:
		}
		return nil
	})
	for i := range topSamples {
		name := fmt.Sprintf("probe-%d", i)
		s, err := c.Launch(ctx, api.RunRequest{Command: []string{"sh", "-c", "read x; exit 7"}, Cwd: cwd, Env: pathEnv, Name: name})
		if err != nil {
			return res, err
		}
		rowHas := func(text string) func(string) bool {
			return func(scr string) bool {
				for _, l := range strings.Split(scr, "\n") {
					if f := strings.Fields(strings.TrimPrefix(strings.TrimSpace(l), "›")); len(f) > 2 && f[0] == name && strings.Contains(l, text) {
						return true
					}
				}
				return false
			}
		}
		if err := waitScreen(name+" running", rowHas("running")); err != nil {
			return res, err
		}
		if _, err := c.Input(ctx, s.ID, []byte("\r")); err != nil {
			return res, err
		}
		if err := waitScreen(name+" exited", rowHas("exited(7)")); err != nil {
			return res, err
		}
		seen := time.Now()
		s, err = c.Get(ctx, s.ID)
		if err != nil {
			return res, err
		}
		if s.EndedAt == nil {
			return res, fmt.Errorf("%s ended without an end time", s.ID)
		}
		res.latencies = append(res.latencies, seen.Sub(*s.EndedAt))
	wait:
		for {
			select {
			case e := <-published:
				if e.SessionID == s.ID {
					res.fromEvent = append(res.fromEvent, seen.Sub(e.Timestamp))
					break wait
				}
			case <-time.After(5 * time.Second):
				return res, fmt.Errorf("no session.stopped event for %s", s.ID)
			}
		}
	}
	pidText, err := tmux("display-message", "-p", "-t", "top", "#{pane_pid}")
	if err != nil {
		return res, err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(pidText))
	if err != nil {
		return res, fmt.Errorf("the view's pid: %q", pidText)
	}
	res.rssMB = procStatusKB(pid, "VmRSS:") / 1024
	res.hwmMB = procStatusKB(pid, "VmHWM:") / 1024
	return res, nil
}

func printTop(w io.Writer, r topResult) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "agentctl top -a, %d sessions (%d running)\t\n", r.sessions, r.running)
	for _, l := range []struct {
		what string
		d    []time.Duration
	}{{"exit → changed row on screen", r.latencies}, {"event published → changed row on screen", r.fromEvent}} {
		lat := slices.Clone(l.d)
		slices.Sort(lat)
		if len(lat) > 0 {
			fmt.Fprintf(tw, "%s, median of %d / worst\t%s / %s ms\n", l.what, len(lat), ms(lat[len(lat)/2]), ms(lat[len(lat)-1]))
		}
	}
	fmt.Fprintf(tw, "one screen read (tmux capture-pane), the resolution\t%s ms\n", ms(r.screenPollGap))
	fmt.Fprintf(tw, "the view's RSS / peak RSS\t%.1f / %.1f MB\n", r.rssMB, r.hwmMB)
	tw.Flush()
}
