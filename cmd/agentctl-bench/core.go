package main

import (
	"context"
	"fmt"
	"io"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/client"
	"github.com/agentctl/agentctl/home"
)

// coreRow compares one agentctl path with a baseline measured in the same
// run on the same machine.
type coreRow struct {
	what, baseline string
	got, base      time.Duration
	// bytes, when set, turns both times into throughput.
	bytes int64
}

// measureCore times the supervisor's own paths against what they wrap: the
// CLI's run round trip against fork/exec of the same command, a start on the
// socket against the same, and output through a session's pty into its log
// against cat of the same bytes to a file.
func measureCore(ctx context.Context, o options, work string, bd build) ([]coreRow, error) {
	if err := os.MkdirAll(work, 0o700); err != nil {
		return nil, err
	}
	homeDir := filepath.Join(work, "home")
	env := append(os.Environ(), "AGENTCTL_HOME="+homeDir, "AGENTCTL_NO_AUTOSTART=")
	cli := func(args ...string) error {
		cmd := exec.CommandContext(ctx, bd.bin, args...)
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
	c := client.New(home.Home(homeDir), bd.bin, false)
	median := func(f func() error) (time.Duration, error) {
		var ds []time.Duration
		for i := 0; i < o.runs*4; i++ {
			t0 := time.Now()
			if err := f(); err != nil {
				return 0, err
			}
			ds = append(ds, time.Since(t0))
		}
		slices.Sort(ds)
		return ds[len(ds)/2], nil
	}
	execTrue, err := median(func() error { return exec.CommandContext(ctx, "true").Run() })
	if err != nil {
		return nil, err
	}
	runTrue, err := median(func() error { return cli("run", "--", "true") })
	if err != nil {
		return nil, err
	}
	version, err := median(func() error { return cli("--version") })
	if err != nil {
		return nil, err
	}
	daemonStatus, err := median(func() error { return cli("daemon", "status") })
	if err != nil {
		return nil, err
	}
	cwd, _ := os.Getwd()
	spawn, err := median(func() error {
		_, err := c.Launch(ctx, api.RunRequest{Command: []string{"true"}, Cwd: cwd, Env: os.Environ()})
		return err
	})
	if err != nil {
		return nil, err
	}

	payload := filepath.Join(work, "payload")
	data := make([]byte, 32<<20)
	rand.New(rand.NewSource(o.seed)).Read(data)
	if err := os.WriteFile(payload, data, 0o600); err != nil {
		return nil, err
	}
	catFile, err := median(func() error {
		return exec.CommandContext(ctx, "sh", "-c", "cat "+payload+" > "+filepath.Join(work, "copy")).Run()
	})
	if err != nil {
		return nil, err
	}
	session, err := median(func() error {
		s, err := c.Launch(ctx, api.RunRequest{Command: []string{"sh", "-c", "stty raw -echo -opost; cat " + payload}, Cwd: cwd, Env: os.Environ()})
		if err != nil {
			return err
		}
		for {
			got, err := c.Get(ctx, s.ID)
			if err != nil {
				return err
			}
			if got.Status.Ended() {
				return nil
			}
			time.Sleep(2 * time.Millisecond)
		}
	})
	if err != nil {
		return nil, err
	}
	withBin := o
	withBin.bin = bd.bin
	hook, err := measureHook(ctx, withBin, c, homeDir, env, execTrue)
	if err != nil {
		return nil, fmt.Errorf("hook round trip: %w", err)
	}
	rows := []coreRow{
		hook,
		{what: "agentctl --version (CLI start)", baseline: "fork/exec true", got: version, base: execTrue},
		{what: "agentctl daemon status (CLI start + one request)", baseline: "fork/exec true", got: daemonStatus, base: execTrue},
		{what: "agentctl run -- true (CLI round trip)", baseline: "fork/exec true", got: runTrue, base: execTrue},
		{what: "start on the socket until exec'd", baseline: "fork/exec true", got: spawn, base: execTrue},
		{what: "32 MiB through a session's pty into its log", baseline: "cat to a file", got: session, base: catFile, bytes: int64(len(data))},
	}
	if bd.name != "" {
		for i := range rows {
			rows[i].what = "[" + bd.name + "] " + rows[i].what
		}
	}
	return rows, nil
}

func printCore(w io.Writer, rows []coreRow) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "path\tagentctl\tbaseline\tbaseline value\tratio")
	for _, r := range rows {
		got, base := ms(r.got)+" ms", ms(r.base)+" ms"
		if r.bytes > 0 {
			mbps := func(d time.Duration) string { return fmt.Sprintf("%.0f MB/s", float64(r.bytes)/1e6/d.Seconds()) }
			got, base = mbps(r.got), mbps(r.base)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.1fx\n", r.what, got, r.baseline, base, float64(r.got)/float64(r.base))
	}
	tw.Flush()
}
