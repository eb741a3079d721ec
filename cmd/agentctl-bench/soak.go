package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/client"
	"github.com/agentctl/agentctl/home"
)

// soakRow is the service's state at one point of the soak.
type soakRow struct {
	step                 string
	running              int
	rssMB                float64
	threads, fds         int
	monitorPSSKB, listMS float64
	launchedPerS, errors float64
}

// soakParallel is how many launches and stops are in flight at once.
const soakParallel = 8

// measureSoak runs o.soak sessions at once, started and stopped in waves,
// then o.soakShort short sessions, and reports the service's resident
// set, threads and descriptors, a monitor's proportional memory, list's
// latency, and whether every exit code came out true.
func measureSoak(ctx context.Context, o options, work string) ([]soakRow, error) {
	homeDir := filepath.Join(work, "soak")
	env := append(os.Environ(), "AGENTCTL_HOME="+homeDir, "AGENTCTL_NO_AUTOSTART=")
	cli := func(args ...string) error {
		cmd := exec.CommandContext(ctx, o.bin, args...)
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("agentctl %v: %w: %s", args, err, out)
		}
		return nil
	}
	if err := cli("daemon", "start"); err != nil {
		return nil, err
	}
	defer cli("daemon", "stop")
	c := client.New(home.Home(homeDir), o.bin, false)
	st, err := c.DaemonStatus(ctx)
	if err != nil {
		return nil, err
	}
	cwd, _ := os.Getwd()
	var rows []soakRow
	sample := func(step string, ids []string, rate float64, errs int) error {
		r := soakRow{step: step, running: len(ids), launchedPerS: rate, errors: float64(errs)}
		r.rssMB = procStatusKB(st.PID, "VmRSS:") / 1024
		r.threads = int(procStatusKB(st.PID, "Threads:"))
		if ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", st.PID)); err == nil {
			r.fds = len(ents)
		}
		if len(ids) > 0 {
			if s, err := c.Get(ctx, ids[len(ids)/2]); err == nil {
				if shim := monitorPID(homeDir, s.ID); shim > 0 {
					r.monitorPSSKB = pssKB(shim)
				}
			}
		}
		var best time.Duration
		for range 5 {
			t0 := time.Now()
			if _, err := c.List(ctx, api.ListOptions{}); err != nil {
				return err
			}
			if d := time.Since(t0); best == 0 || d < best {
				best = d
			}
		}
		r.listMS = float64(best) / float64(time.Millisecond)
		rows = append(rows, r)
		return nil
	}
	if err := sample("idle", nil, 0, 0); err != nil {
		return nil, err
	}
	// Waves of long sessions up to o.soak running at once.
	var ids []string
	wave := max(o.soak/4, 1)
	for len(ids) < o.soak {
		n := min(wave, o.soak-len(ids))
		t0 := time.Now()
		got, errs := launchMany(ctx, c, n, func(int) api.RunRequest {
			return api.RunRequest{Command: []string{"sleep", "3600"}, Cwd: cwd, Env: []string{"PATH=" + os.Getenv("PATH")}}
		})
		ids = append(ids, got...)
		if err := sample(fmt.Sprintf("+%d running", n), ids, float64(len(got))/time.Since(t0).Seconds(), errs); err != nil {
			return nil, err
		}
	}
	// Stopped in waves too.
	for len(ids) > 0 {
		n := min(wave, len(ids))
		stopMany(ctx, c, ids[len(ids)-n:])
		ids = ids[:len(ids)-n]
		if err := sample(fmt.Sprintf("-%d stopped", n), ids, 0, 0); err != nil {
			return nil, err
		}
	}
	// Many short sessions, each with an exit code of its own.
	t0 := time.Now()
	short, errs := launchMany(ctx, c, o.soakShort, func(i int) api.RunRequest {
		return api.RunRequest{Command: []string{"sh", "-c", "exit " + strconv.Itoa(i%7)}, Cwd: cwd, Env: []string{"PATH=" + os.Getenv("PATH")}, Name: "short-" + strconv.Itoa(i)}
	})
	rate := float64(len(short)) / time.Since(t0).Seconds()
	wrong, err := checkExitCodes(ctx, c, short)
	if err != nil {
		return nil, err
	}
	if err := sample(fmt.Sprintf("%d short ones ended", len(short)), nil, rate, errs+wrong); err != nil {
		return nil, err
	}
	return rows, nil
}

// launchMany starts n sessions, soakParallel at a time, and returns their
// ids and how many starts failed.
func launchMany(ctx context.Context, c *client.Client, n int, req func(i int) api.RunRequest) ([]string, int) {
	ids := make([]string, n)
	var failed atomic.Int32
	var wg sync.WaitGroup
	next := atomic.Int32{}
	for range soakParallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				s, err := c.Launch(ctx, req(i))
				if err != nil {
					failed.Add(1)
					continue
				}
				ids[i] = s.ID
			}
		}()
	}
	wg.Wait()
	out := ids[:0]
	for _, id := range ids {
		if id != "" {
			out = append(out, id)
		}
	}
	return out, int(failed.Load())
}

// stopMany stops sessions, soakParallel at a time.
func stopMany(ctx context.Context, c *client.Client, ids []string) {
	var wg sync.WaitGroup
	work := make(chan string)
	for range soakParallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for id := range work {
				c.Stop(ctx, id, api.StopRequest{Force: true})
			}
		}()
	}
	for _, id := range ids {
		work <- id
	}
	close(work)
	wg.Wait()
}

// checkExitCodes waits for the short sessions to end and counts those
// whose exit code is not the one their command gave.
func checkExitCodes(ctx context.Context, c *client.Client, ids []string) (int, error) {
	want := map[string]int{}
	for i, id := range ids {
		want[id] = i % 7
	}
	deadline := time.Now().Add(5 * time.Minute)
	for {
		list, err := c.List(ctx, api.ListOptions{All: true})
		if err != nil {
			return 0, err
		}
		ended, wrong := 0, 0
		for _, s := range list.Sessions {
			code, ok := want[s.ID]
			if !ok || !s.Status.Ended() {
				continue
			}
			ended++
			if s.Status != api.StatusExited || s.ExitCode == nil || *s.ExitCode != code {
				wrong++
			}
		}
		if ended == len(ids) || time.Now().After(deadline) {
			return wrong + len(ids) - ended, nil
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// monitorPID reads a session's monitor pid from its launch record.
func monitorPID(homeDir, id string) int {
	b, err := os.ReadFile(filepath.Join(homeDir, "sessions", id, "launch.json"))
	if err != nil {
		return 0
	}
	_, after, ok := strings.Cut(string(b), `"shim": {`)
	if !ok {
		return 0
	}
	_, after, _ = strings.Cut(after, `"pid":`)
	n, _ := strconv.Atoi(strings.TrimSpace(strings.Split(after, ",")[0]))
	return n
}

// pssKB is a process's proportional set size: its share of the memory it
// shares with others (all the monitors run one binary).
func pssKB(pid int) float64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return 0
	}
	return statusKB(data, "Pss:")
}

func procStatusKB(pid int, key string) float64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	return statusKB(data, key)
}

func printSoak(w io.Writer, rows []soakRow) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "soak step\trunning\tservice RSS MB\tthreads\tfds\tmonitor PSS KB\tlist ms\tstarts/s\tfailed or wrong\t")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%d\t%.1f\t%d\t%d\t%.0f\t%.1f\t%.0f\t%.0f\t\n", r.step, r.running, r.rssMB, r.threads, r.fds, r.monitorPSSKB, r.listMS, r.launchedPerS, r.errors)
	}
	tw.Flush()
}
