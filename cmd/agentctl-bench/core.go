package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/creack/pty"

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

// coreBuild is one build with its own service and home for the core
// measurements.
type coreBuild struct {
	build
	home string
	env  []string
	c    *client.Client
}

func (b coreBuild) cli(ctx context.Context, args ...string) error {
	cmd := exec.CommandContext(ctx, b.bin, args...)
	cmd.Env = b.env
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("agentctl %v: %w: %s", args, err, out)
	}
	return nil
}

// measureCore times the supervisor's own paths against what they wrap: the
// CLI's run round trip against fork/exec of the same command, a start on the
// socket against the same, and output through a session's pty into its log
// against cat of the same bytes to a file and a bare pty reader. Each build
// runs its own service; their runs alternate, so a burst of load on the
// machine falls on both, and the baselines are measured once for both.
func measureCore(ctx context.Context, o options, work string, builds []build) ([]coreRow, []string, error) {
	if err := os.MkdirAll(work, 0o700); err != nil {
		return nil, nil, err
	}
	var bs []coreBuild
	for i, bd := range builds {
		homeDir := filepath.Join(work, "home"+strconv.Itoa(i))
		b := coreBuild{build: bd, home: homeDir, env: append(os.Environ(), "AGENTCTL_HOME="+homeDir, "AGENTCTL_NO_AUTOSTART="), c: client.New(home.Home(homeDir), bd.bin, false)}
		if err := b.cli(ctx, "daemon", "start"); err != nil {
			return nil, nil, err
		}
		defer b.cli(ctx, "daemon", "stop")
		bs = append(bs, b)
	}
	// medians times f for each build, alternating, and returns each
	// build's median.
	medians := func(f func(b coreBuild) error) ([]time.Duration, error) {
		ds := make([][]time.Duration, len(bs))
		for range o.runs * 4 {
			for i, b := range bs {
				t0 := time.Now()
				if err := f(b); err != nil {
					return nil, err
				}
				ds[i] = append(ds[i], time.Since(t0))
			}
		}
		out := make([]time.Duration, len(bs))
		for i := range ds {
			slices.Sort(ds[i])
			out[i] = ds[i][len(ds[i])/2]
		}
		return out, nil
	}
	once := func(f func() error) (time.Duration, error) {
		ds, err := medians(func(coreBuild) error { return f() })
		if err != nil {
			return 0, err
		}
		return ds[0], nil
	}
	execTrue, err := once(func() error { return exec.CommandContext(ctx, "true").Run() })
	if err != nil {
		return nil, nil, err
	}
	var goStart time.Duration
	if noop, err := buildNoop(ctx, work); err != nil {
		fmt.Fprintf(os.Stderr, "no baseline Go program (%v): its row is left out\n", err)
	} else if goStart, err = once(func() error { return exec.CommandContext(ctx, noop).Run() }); err != nil {
		return nil, nil, err
	}
	runTrue, err := medians(func(b coreBuild) error { return b.cli(ctx, "run", "--", "true") })
	if err != nil {
		return nil, nil, err
	}
	version, err := medians(func(b coreBuild) error { return b.cli(ctx, "--version") })
	if err != nil {
		return nil, nil, err
	}
	daemonStatus, err := medians(func(b coreBuild) error { return b.cli(ctx, "daemon", "status") })
	if err != nil {
		return nil, nil, err
	}
	cwd, _ := os.Getwd()
	spawn, err := medians(func(b coreBuild) error {
		_, err := b.c.Launch(ctx, api.RunRequest{Command: []string{"true"}, Cwd: cwd, Env: os.Environ()})
		return err
	})
	if err != nil {
		return nil, nil, err
	}

	payload := filepath.Join(work, "payload")
	data := make([]byte, 32<<20)
	rand.New(rand.NewSource(o.seed)).Read(data)
	if err := os.WriteFile(payload, data, 0o600); err != nil {
		return nil, nil, err
	}
	catFile, err := once(func() error {
		return exec.CommandContext(ctx, "sh", "-c", "cat "+payload+" > "+filepath.Join(work, "copy")).Run()
	})
	if err != nil {
		return nil, nil, err
	}
	rawCat := func(file string) []string { return []string{"sh", "-c", "stty raw -echo -opost; cat " + file} }
	bare, err := once(func() error { return barePTY(ctx, rawCat(payload), filepath.Join(work, "bare")) })
	if err != nil {
		return nil, nil, fmt.Errorf("bare pty reader: %w", err)
	}
	bareEmpty, err := once(func() error { return barePTY(ctx, rawCat("/dev/null"), filepath.Join(work, "bare")) })
	if err != nil {
		return nil, nil, fmt.Errorf("bare pty reader: %w", err)
	}
	// The monitor's own throughput: from the launch to exit.json, which
	// the monitor writes once the log holds every byte. (Polling the
	// service for the end would put its work on the same two cores.)
	// The same session with no output gives the fixed cost (start, end)
	// to take off for the streaming rate.
	through := func(file string) func(coreBuild) error {
		return func(b coreBuild) error {
			s, err := b.c.Launch(ctx, api.RunRequest{Command: rawCat(file), Cwd: cwd, Env: os.Environ()})
			if err != nil {
				return err
			}
			exit := filepath.Join(home.Home(b.home).SessionDir(s.ID), home.ExitFile)
			for {
				if _, err := os.Stat(exit); err == nil {
					return nil
				}
				if err := ctx.Err(); err != nil {
					return err
				}
				time.Sleep(time.Millisecond)
			}
		}
	}
	session, err := medians(through(payload))
	if err != nil {
		return nil, nil, err
	}
	sessionEmpty, err := medians(through("/dev/null"))
	if err != nil {
		return nil, nil, err
	}

	var rows []coreRow
	var notes []string
	for i, b := range bs {
		withBin := o
		withBin.bin = b.bin
		hook, err := measureHook(ctx, withBin, b.c, b.home, b.env, execTrue)
		if err != nil {
			return nil, nil, fmt.Errorf("hook round trip: %w", err)
		}
		rs := []coreRow{
			hook,
			{what: "agentctl --version (CLI start)", baseline: "fork/exec true", got: version[i], base: execTrue},
			{what: "agentctl --version (CLI start)", baseline: "a Go program doing nothing", got: version[i], base: goStart},
			{what: "agentctl daemon status (CLI start + one request)", baseline: "fork/exec true", got: daemonStatus[i], base: execTrue},
			{what: "agentctl run -- true (CLI round trip)", baseline: "fork/exec true", got: runTrue[i], base: execTrue},
			{what: "start on the socket until exec'd", baseline: "fork/exec true", got: spawn[i], base: execTrue},
			{what: "32 MiB through a session's pty into its log (launch to exit)", baseline: "cat to a file", got: session[i], base: catFile, bytes: int64(len(data))},
			{what: "32 MiB through a session's pty into its log (launch to exit)", baseline: "bare pty reader", got: session[i], base: bare, bytes: int64(len(data))},
			{what: "the same, streaming (less a run with no output)", baseline: "bare pty reader, streaming", got: session[i] - sessionEmpty[i], base: bare - bareEmpty, bytes: int64(len(data))},
			{what: "a session with no output (launch to exit)", baseline: "bare pty reader, no output", got: sessionEmpty[i], base: bareEmpty},
		}
		if i == 0 {
			rs = append(rs, coreRow{what: "32 MiB through a bare pty reader into a file", baseline: "cat to a file", got: bare, base: catFile, bytes: int64(len(data))})
		}
		if goStart == 0 {
			rs = slices.DeleteFunc(rs, func(r coreRow) bool { return r.base == 0 })
		}
		note, err := initCost(ctx, b.bin, o.runs*4)
		if err != nil {
			return nil, nil, err
		}
		if b.name != "" {
			for j := range rs {
				rs[j].what = "[" + b.name + "] " + rs[j].what
			}
			note = "[" + b.name + "] " + note
		}
		rows = append(rows, rs...)
		notes = append(notes, note)
	}
	return rows, notes, nil
}

// initCost is what the binary's package initialisers take at start:
// GODEBUG=inittrace=1 over runs starts of --version, each package's
// fastest (the least disturbed by other work), summed, with the largest.
func initCost(ctx context.Context, bin string, runs int) (string, error) {
	fastest := map[string]float64{}
	for range runs {
		cmd := exec.CommandContext(ctx, bin, "--version")
		cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			return "", fmt.Errorf("%s --version with inittrace: %w", bin, err)
		}
		// init PKG @0.1 ms, 0.02 ms clock, 96 bytes, 2 allocs
		for _, line := range strings.Split(stderr.String(), "\n") {
			f := strings.Fields(line)
			if len(f) < 7 || f[0] != "init" || f[6] != "clock," {
				continue
			}
			ms, err := strconv.ParseFloat(f[4], 64)
			if err != nil {
				continue
			}
			if old, ok := fastest[f[1]]; !ok || ms < old {
				fastest[f[1]] = ms
			}
		}
	}
	total := 0.0
	pkgs := make([]string, 0, len(fastest))
	for p, ms := range fastest {
		total += ms
		pkgs = append(pkgs, p)
	}
	slices.SortFunc(pkgs, func(a, b string) int { return cmp.Compare(fastest[b], fastest[a]) })
	var top []string
	for _, p := range pkgs[:min(4, len(pkgs))] {
		top = append(top, fmt.Sprintf("%s %.2f", p, fastest[p]))
	}
	return fmt.Sprintf("package init at start (inittrace, fastest of %d): %.2f ms over %d packages; largest: %s", runs, total, len(pkgs), strings.Join(top, ", ")), nil
}

// buildNoop builds a Go program whose main does nothing, into work: the
// floor of any Go binary's start on this machine.
func buildNoop(ctx context.Context, work string) (string, error) {
	src := filepath.Join(work, "noop")
	if err := os.MkdirAll(src, 0o700); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(src, "main.go"), []byte("package main\n\nfunc main() {}\n"), 0o600); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(src, "go.mod"), []byte("module noop\n"), 0o600); err != nil {
		return "", err
	}
	bin := filepath.Join(src, "noop")
	b := exec.CommandContext(ctx, "go", "build", "-o", bin, ".")
	b.Dir = src
	if out, err := b.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build: %w: %s", err, out)
	}
	return bin, nil
}

// barePTY runs argv under a pty and copies what the pty gives to a file,
// one write per read: the least any monitor does, so the kernel's pty
// (its line discipline hands out a few KiB a read) is the ceiling it shows.
func barePTY(ctx context.Context, argv []string, out string) error {
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	defer f.Close()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	master, err := pty.Start(cmd)
	if err != nil {
		return fmt.Errorf("start %v under a pty: %w", argv, err)
	}
	defer master.Close()
	_, err = io.CopyBuffer(f, master, make([]byte, 256<<10))
	if err != nil && !errors.Is(err, syscall.EIO) { // EIO: the agent's side closed
		return fmt.Errorf("copy the pty: %w", err)
	}
	return cmd.Wait()
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
