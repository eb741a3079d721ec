// Command agentctl-bench measures agentctl over synthetic native stores of
// growing size. For each size it generates a mixed store (every agent that
// has a store generator gets an equal share of the sessions, with realistic
// sizes up to several MB per transcript) under a temporary HOME, then runs
// the real agentctl binary against it and prints, per command, the wall
// time end to end with the service's caches cold (service just restarted)
// and warm (median of --runs), and the service's memory.
//
// First it times the supervisor's own paths (run round trip, start to
// exec, output through the pty) against baselines measured in the same run:
// fork/exec of true, a Go program that does nothing, cat to a file and a
// bare pty reader; and what the binary's package initialisers take.
//
// Then it measures the live view (agentctl top) over --top sessions in a
// real terminal: from a session's exit to its changed row on the screen,
// and the view's memory.
//
//	agentctl-bench [--sizes 100,1000,10000] [--bin PATH] [--base PATH] [--runs N] [--keep] [--core=false] [--top N]
//	agentctl-bench --first 1550,7000,50000 [--ts-bin PATH] [--stores DIR]
//
// With --first it measures only the first answers over mixed stores of
// those sizes, medians of --runs: the first `list -a` ever (a fresh
// AGENTCTL_HOME, the store in the page cache and, as root, out of it),
// after `daemon restart`, warm as JSON and as the table, and the service's
// answer alone; beside the predecessor's `list -a` when its build is given
// (--ts-bin or $AGENTCTL_BENCH_TS_BIN). --stores keeps the generated
// stores in DIR and reuses them.
//
// With --cluster DIR it instead times a Kubernetes cluster as a host (the
// test cluster scripts/k8s-harness.sh started in DIR; "env" takes
// $AGENTCTL_TEST_K8S, and without a cluster it says so and measures
// nothing): from run to the first output line there and here, and list
// --hosts all with --cluster-sessions Jobs running.
//
// With --hosts N it instead times list over ssh: on this machine, on one
// remote host and over N at once, against the ssh round trip (each host an
// sshd of its own on 127.0.0.1 with its own agentctl home).
//
// Without --bin it builds agentctl from the module it is run in. With
// --base, a second build (the one before a change) is measured on the same
// stores in the same run, each row of the two side by side.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/agentctl/agentctl/api"
)

func main() {
	// Interrupted, the bench still stops the services and sshd instances
	// it started (its deferred clean-ups run once ctx ends).
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "agentctl-bench:", err)
		os.Exit(1)
	}
}

type options struct {
	sizes []int
	bin   string
	// base is a second binary measured beside bin, "" for none.
	base string
	runs int
	keep bool
	seed int64
	core bool
	// soak and soakShort, when set, run the soak instead of the stores.
	soak, soakShort int
	// top is how many sessions the live view is measured over (0: not).
	top int
	// hosts, when set, measures list over this many ssh hosts instead.
	hosts int
	// first, when set, measures the first answers (first list ever,
	// after daemon restart, warm) over mixed stores of these sizes
	// instead; tsBin is the predecessor's build measured beside them.
	first []int
	tsBin string
	// stores, when set, keeps generated stores there for the next run.
	stores string
	// cluster, when set, measures a cluster as a host instead, with
	// clusterSessions running.
	cluster         string
	clusterSessions int
}

func parseFlags(args []string) (options, error) {
	fl := flag.NewFlagSet("agentctl-bench", flag.ContinueOnError)
	sizes := fl.String("sizes", "100,1000,10000", "comma-separated store sizes (sessions)")
	o := options{}
	fl.StringVar(&o.bin, "bin", "", "the agentctl binary (default: build it from this module)")
	fl.StringVar(&o.base, "base", "", "a second agentctl binary, the baseline build, measured beside --bin in the same run")
	fl.IntVar(&o.runs, "runs", 5, "warm runs per command (the median is reported)")
	fl.BoolVar(&o.keep, "keep", false, "keep the generated stores")
	fl.Int64Var(&o.seed, "seed", 1, "generator seed")
	fl.BoolVar(&o.core, "core", true, "also time run, start and output throughput against baselines")
	fl.IntVar(&o.soak, "soak", 0, "soak instead: this many sessions running at once, started and stopped in waves")
	fl.IntVar(&o.soakShort, "soak-short", 10000, "with --soak: then this many short sessions, each exit code checked")
	fl.IntVar(&o.hosts, "hosts", 0, "instead: time list on this machine, over ssh on one host and over this many hosts at once (sshd instances on 127.0.0.1)")
	first := fl.String("first", "", "instead: measure the first answers (first list ever, after daemon restart, warm) over mixed stores of these comma-separated sizes")
	fl.StringVar(&o.tsBin, "ts-bin", os.Getenv("AGENTCTL_BENCH_TS_BIN"), "with --first: the predecessor's agentctl build (its executable, or its dist/cli.js, run with node), whose `list -a` in its direct mode is timed beside (env: $AGENTCTL_BENCH_TS_BIN)")
	fl.StringVar(&o.stores, "stores", "", "with --first: keep the generated stores in `DIR` and reuse them")
	fl.StringVar(&o.cluster, "cluster", "", "instead: time a Kubernetes cluster as a host, the test cluster whose harness folder is `DIR` (env: $AGENTCTL_TEST_K8S)")
	fl.IntVar(&o.clusterSessions, "cluster-sessions", 50, "with --cluster: Jobs running on the cluster for the lists")
	fl.IntVar(&o.top, "top", 500, "measure agentctl top over this many sessions in a tmux terminal (0: skip)")
	if err := fl.Parse(args); err != nil {
		return o, err
	}
	if fl.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fl.Args())
	}
	var err error
	if o.sizes, err = parseSizes("--sizes", *sizes); err != nil {
		return o, err
	}
	if *first != "" {
		if o.first, err = parseSizes("--first", *first); err != nil {
			return o, err
		}
	}
	if o.runs < 1 {
		return o, errors.New("--runs must be at least 1")
	}
	return o, nil
}

// parseSizes reads a comma-separated list of positive numbers.
func parseSizes(flagName, list string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("%s: %q is not a positive number", flagName, f)
		}
		out = append(out, n)
	}
	return out, nil
}

// row is one line of the result table.
type row struct {
	size    int
	storeMB int64
	// build is "" with one binary, else "new" or "base".
	build        string
	command      string
	cold, warm   time.Duration
	rssMB, hwmMB float64
	// note says when a timed run printed warnings (an adapter timed out,
	// so its answer was partial).
	note string
}

func run(ctx context.Context, args []string, out io.Writer) error {
	o, err := parseFlags(args)
	if err != nil {
		return err
	}
	if o.cluster == "env" {
		o.cluster = os.Getenv("AGENTCTL_TEST_K8S")
		if o.cluster == "" {
			fmt.Fprintln(out, "cluster: not measured: no test cluster (AGENTCTL_TEST_K8S unset; scripts/k8s-harness.sh up DIR starts one, as root)")
			return nil
		}
	}
	work, err := os.MkdirTemp("", "acb")
	if err != nil {
		return fmt.Errorf("make work folder: %w", err)
	}
	if !o.keep {
		defer os.RemoveAll(work)
	} else {
		fmt.Fprintln(os.Stderr, "keeping stores under", work)
	}
	if o.bin == "" {
		o.bin = filepath.Join(work, "agentctl")
		fmt.Fprintln(os.Stderr, "building agentctl")
		b := exec.CommandContext(ctx, "go", "build", "-o", o.bin, "github.com/agentctl/agentctl/cmd/agentctl")
		b.Stdout, b.Stderr = os.Stderr, os.Stderr
		if err := b.Run(); err != nil {
			return fmt.Errorf("build agentctl (or pass --bin): %w", err)
		}
		if o.cluster != "" {
			b := exec.CommandContext(ctx, "go", "build", "-o", o.bin+"-k8s", "github.com/agentctl/agentctl/cmd/agentctl-k8s")
			b.Stdout, b.Stderr = os.Stderr, os.Stderr
			if err := b.Run(); err != nil {
				return fmt.Errorf("build agentctl-k8s (or pass --bin): %w", err)
			}
		}
	}
	if o.cluster != "" {
		r, err := measureCluster(ctx, o, work, o.cluster, o.clusterSessions)
		if err != nil {
			return fmt.Errorf("cluster: %w", err)
		}
		printCluster(out, r)
		return nil
	}
	if o.hosts > 0 {
		r, err := measureHosts(ctx, o, work, o.hosts, 10)
		if err != nil {
			return fmt.Errorf("hosts: %w", err)
		}
		printHosts(out, r)
		return nil
	}
	if o.soak > 0 {
		rows, err := measureSoak(ctx, o, work)
		if err != nil {
			return fmt.Errorf("soak: %w", err)
		}
		printSoak(out, rows)
		return nil
	}
	if len(o.first) > 0 {
		rows, err := measureFirst(ctx, o, work)
		if err != nil {
			return fmt.Errorf("first answers: %w", err)
		}
		printFirst(out, rows, o.runs)
		return nil
	}
	if o.top > 0 {
		if _, err := exec.LookPath("tmux"); err != nil {
			fmt.Fprintln(out, "agentctl top: not measured, tmux is not installed (the view is measured in a real terminal)")
		} else {
			r, err := measureTop(ctx, o, work, o.top)
			if err != nil {
				return fmt.Errorf("live view: %w", err)
			}
			printTop(out, r)
		}
		fmt.Fprintln(out)
	}
	if o.core {
		rows, notes, err := measureCore(ctx, o, filepath.Join(work, "core"), o.builds())
		if err != nil {
			return fmt.Errorf("core paths: %w", err)
		}
		printCore(out, rows)
		for _, n := range notes {
			fmt.Fprintln(out, n)
		}
		fmt.Fprintln(out)
	}
	var rows []row
	for i, n := range o.sizes {
		rs, err := measure(ctx, o, filepath.Join(work, strconv.Itoa(i)), n)
		if err != nil {
			return fmt.Errorf("%d sessions: %w", n, err)
		}
		rows = append(rows, rs...)
	}
	printTable(out, rows)
	return nil
}

// bench is one generated store and the agentctl installation reading it.
type bench struct {
	o    options
	env  []string
	home string
	// bin is the build being measured.
	bin string
}

// build is one agentctl binary measured.
type build struct{ name, bin string }

// builds are the binaries measured: --bin, and --base beside it.
func (o options) builds() []build {
	if o.base == "" {
		return []build{{"", o.bin}}
	}
	return []build{{"new", o.bin}, {"base", o.base}}
}

func measure(ctx context.Context, o options, dir string, n int) ([]row, error) {
	b := &bench{o: o, home: filepath.Join(dir, "home"), bin: o.bin}
	start := time.Now()
	names, err := generate(b.home, n, o.seed)
	if err != nil {
		return nil, err
	}
	size := treeSize(b.home)
	fmt.Fprintf(os.Stderr, "%d sessions (%s): %d MB generated in %s\n", n, strings.Join(names, ", "), size>>20, time.Since(start).Round(time.Millisecond))
	// Write the new store out now, so the kernel flushing it does not
	// compete with the timed runs.
	start = time.Now()
	syscall.Sync()
	fmt.Fprintf(os.Stderr, "synced to disk in %s\n", time.Since(start).Round(time.Millisecond))

	// A clean environment: the stores are found through HOME only.
	b.env = []string{
		"HOME=" + b.home,
		"AGENTCTL_HOME=" + filepath.Join(dir, "ac"),
		"PATH=" + os.Getenv("PATH"),
		"TMPDIR=" + os.TempDir(),
		"XDG_DATA_HOME=" + filepath.Join(b.home, ".local", "share"),
		"XDG_CONFIG_HOME=" + filepath.Join(b.home, ".config"),
	}
	defer b.agentctl(ctx, "daemon", "stop")

	// Pick the sessions status and peek read: the one with the largest
	// transcript (several MB at realistic sizes).
	if _, err := b.agentctl(ctx, "daemon", "start"); err != nil {
		return nil, err
	}
	if err := b.settle(ctx); err != nil {
		return nil, err
	}
	target, err := b.largestSession(ctx)
	if err != nil {
		return nil, err
	}
	commands := []struct {
		name string
		args []string
	}{
		{"list", []string{"list"}},
		{"list -a", []string{"list", "-a"}},
		{"status", []string{"status", target}},
		{"peek", []string{"peek", target}},
	}
	var rows []row
	for _, c := range commands {
		for _, bd := range o.builds() {
			r, err := b.measureCommand(ctx, bd, c.name, c.args)
			if err != nil {
				return nil, err
			}
			r.size, r.storeMB = n, size>>20
			rows = append(rows, r)
		}
	}
	return rows, nil
}

// measureCommand times one command with one build: cold (the build's
// service just started) and warm.
func (b *bench) measureCommand(ctx context.Context, bd build, name string, args []string) (row, error) {
	// Cold: the build's service just started, its caches empty.
	if _, err := b.agentctl(ctx, "daemon", "stop"); err != nil {
		return row{}, err
	}
	b.bin = bd.bin
	if _, err := b.agentctl(ctx, "daemon", "start"); err != nil {
		return row{}, err
	}
	cold, coldNote, err := b.timed(ctx, args...)
	if err != nil {
		return row{}, err
	}
	// Let discoveries that timed out finish filling the caches before
	// the warm runs.
	if err := b.settle(ctx); err != nil {
		return row{}, err
	}
	var warm []time.Duration
	var warmNotes []string
	for range b.o.runs {
		d, note, err := b.timed(ctx, args...)
		if err != nil {
			return row{}, err
		}
		if note != "" {
			warmNotes = append(warmNotes, note)
		}
		warm = append(warm, d)
	}
	slices.Sort(warm)
	rss, hwm, watched, err := b.serviceMemory(ctx)
	if err != nil {
		return row{}, err
	}
	var notes []string
	if coldNote != "" {
		notes = append(notes, "cold run "+coldNote)
	}
	if len(warmNotes) > 0 {
		notes = append(notes, fmt.Sprintf("%d of %d warm runs not clean, first: %s", len(warmNotes), b.o.runs, warmNotes[0]))
	}
	if watched != "" {
		notes = append(notes, watched)
	}
	return row{build: bd.name, command: name, cold: cold, warm: warm[len(warm)/2], rssMB: rss, hwmMB: hwm, note: strings.Join(notes, "; ")}, nil
}

// settleTimeout bounds how long a cold service may take to read the whole
// store, across repeated lists that each time out part way.
const settleTimeout = 10 * time.Minute

// settle lists until an answer comes back without warnings: a discovery cut
// short by the service's per-adapter timeout keeps what it read, so each
// list gets further.
func (b *bench) settle(ctx context.Context) error {
	deadline := time.Now().Add(settleTimeout)
	for {
		out, err := b.agentctl(ctx, "list", "-a", "--json")
		if err != nil {
			return err
		}
		var l api.SessionList
		if err := json.Unmarshal(out, &l); err != nil {
			return fmt.Errorf("decode list -a: %w", err)
		}
		if len(l.Warnings) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the service still warns after %s: %q", settleTimeout, l.Warnings)
		}
	}
}

// generate splits n sessions between the agents' generators.
func generate(home string, n int, seed int64) ([]string, error) {
	gens := stores()
	var names []string
	for i, s := range gens {
		share := n / len(gens)
		if i < n%len(gens) {
			share++
		}
		if share == 0 {
			continue
		}
		if err := s.generate(home, share, seed+int64(i)); err != nil {
			return nil, fmt.Errorf("generate %s store: %w", s.name, err)
		}
		names = append(names, fmt.Sprintf("%d %s", share, s.name))
	}
	return names, nil
}

func treeSize(dir string) int64 {
	var total int64
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				total += fi.Size()
			}
		}
		return nil
	})
	return total
}

// agentctl runs the binary and returns its stdout.
func (b *bench) agentctl(ctx context.Context, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, b.bin, args...)
	cmd.Env = b.env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("agentctl %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.Bytes(), nil
}

// timed runs agentctl and returns its wall time, end to end, and a note
// when the answer was not a clean one: warnings printed (an adapter timed
// out, so the answer was partial) or a failure (a cold service that cannot
// vouch for the session yet). Only a failure to run the binary is an error.
func (b *bench) timed(ctx context.Context, args ...string) (time.Duration, string, error) {
	cmd := exec.CommandContext(ctx, b.bin, args...)
	cmd.Env = b.env
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.Discard, &stderr
	start := time.Now()
	err := cmd.Run()
	d := time.Since(start)
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return d, "failed: " + firstLine(stderr.String()), nil
	case err != nil:
		return 0, "", fmt.Errorf("agentctl %s: %w", strings.Join(args, " "), err)
	case len(bytes.TrimSpace(stderr.Bytes())) > 0:
		return d, "warned: " + firstLine(stderr.String()), nil
	}
	return d, "", nil
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}

// largestSession returns the agentctl id of the discovered session with the
// largest native file.
func (b *bench) largestSession(ctx context.Context) (string, error) {
	out, err := b.agentctl(ctx, "list", "-a", "--json")
	if err != nil {
		return "", err
	}
	var l api.SessionList
	if err := json.Unmarshal(out, &l); err != nil {
		return "", fmt.Errorf("decode list -a: %w", err)
	}
	if len(l.Sessions) == 0 {
		return "", fmt.Errorf("list -a found no sessions in the generated store (warnings: %q)", l.Warnings)
	}
	// The largest file under HOME whose name carries a listed native id.
	type file struct {
		path string
		size int64
	}
	var files []file
	filepath.WalkDir(b.home, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".jsonl") {
			if fi, err := d.Info(); err == nil {
				files = append(files, file{p, fi.Size()})
			}
		}
		return nil
	})
	slices.SortFunc(files, func(a, b file) int { return int(b.size - a.size) })
	for _, f := range files {
		for _, s := range l.Sessions {
			if s.NativeID != "" && strings.Contains(filepath.Base(f.path), s.NativeID) {
				fmt.Fprintf(os.Stderr, "status and peek read %s (%s, %.1f MB)\n", s.ID, s.Adapter, float64(f.size)/(1<<20))
				return s.ID, nil
			}
		}
	}
	return l.Sessions[0].ID, nil
}

// serviceMemory reads the service's resident set (now and peak) from /proc,
// and says how the service watches the stores when it says.
func (b *bench) serviceMemory(ctx context.Context) (rss, hwm float64, watched string, err error) {
	out, err := b.agentctl(ctx, "daemon", "status", "--json")
	if err != nil {
		return 0, 0, "", err
	}
	var st api.DaemonStatus
	if err := json.Unmarshal(out, &st); err != nil || st.PID <= 0 {
		return 0, 0, "", fmt.Errorf("daemon status: no pid in %q", out)
	}
	if w := st.Watch; w != nil {
		watched = fmt.Sprintf("stores: %s, %d folders watched, %d by stat, %d overflows", w.Mode, w.Folders, w.Unwatched, w.Overflows)
	}
	rss, hwm, err = processMemory(ctx, st.PID)
	return rss, hwm, watched, err
}

// processMemory reads a process's resident set (now and peak).
func processMemory(ctx context.Context, pid int) (rss, hwm float64, err error) {
	st := struct{ PID int }{pid}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", st.PID))
	if err != nil {
		// No /proc (macOS): ps knows the resident set, not its peak.
		out, perr := exec.CommandContext(ctx, "ps", "-o", "rss=", "-p", strconv.Itoa(st.PID)).Output()
		if perr != nil {
			return 0, 0, fmt.Errorf("read service memory: %w", err)
		}
		kb, _ := strconv.ParseFloat(strings.TrimSpace(string(out)), 64)
		return kb / 1024, 0, nil
	}
	return statusKB(data, "VmRSS:") / 1024, statusKB(data, "VmHWM:") / 1024, nil
}

func statusKB(data []byte, key string) float64 {
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, key); ok {
			f := strings.Fields(v)
			if len(f) > 0 {
				n, _ := strconv.ParseFloat(f[0], 64)
				return n
			}
		}
	}
	return 0
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f", float64(d)/float64(time.Millisecond)) }

func printTable(w io.Writer, rows []row) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "sessions\tstore MB\tcommand\tbuild\tcold ms\twarm ms (median)\tservice RSS MB\tservice peak MB\t")
	var notes []string
	for _, r := range rows {
		fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%s\t%s\t%.1f\t%.1f\t\n", r.size, r.storeMB, r.command, r.build, ms(r.cold), ms(r.warm), r.rssMB, r.hwmMB)
		if r.note != "" {
			build := ""
			if r.build != "" {
				build = " (" + r.build + ")"
			}
			notes = append(notes, fmt.Sprintf("%d sessions, %s%s: %s", r.size, r.command, build, r.note))
		}
	}
	tw.Flush()
	for _, n := range notes {
		fmt.Fprintln(w, "note:", n)
	}
}
