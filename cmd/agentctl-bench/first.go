package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/agentctl/agentctl/api"
)

// dropCaches is the kernel's knob that empties the page cache (root only).
const dropCaches = "/proc/sys/vm/drop_caches"

// firstRow is the first answers over one mixed store, each figure the
// median of --runs: the first `list -a` ever (a fresh AGENTCTL_HOME, the
// service started by that list), with the store in the page cache and,
// when the bench may empty it, out of it; the first after `daemon
// restart` (the cache on disk); and warm, as JSON, as the table, and the
// service's answer alone. ts is the predecessor's `list -a` when its
// build is given.
type firstRow struct {
	sessions int
	storeMB  int64
	load     string
	// first is the first list ever, complete (without warnings);
	// firstCold the same with the page cache emptied before each run
	// (0: not measured, coldNote says why).
	first, firstCold time.Duration
	coldNote         string
	// firstRows is how many sessions the first list gave.
	firstRows int
	// firstCPU is the service's CPU time (user and system) from its
	// start to the first complete answer; warmJSONCPU and warmTableCPU
	// the CLI's own for the warm lists: on a shared machine, what the
	// work costs whatever else runs.
	firstCPU, warmJSONCPU, warmTableCPU time.Duration
	restart                             time.Duration
	// restartNote says when the restart's answer was not complete.
	restartNote string
	warmJSON    time.Duration
	warmTable   time.Duration
	// api is the service's answer to GET /v1/sessions alone, read whole
	// over its socket, and apiBytes its size.
	api      time.Duration
	apiBytes int
	ts       time.Duration
	tsCPU    time.Duration
	tsNote   string
	// hwmMB is the service's peak resident set (VmHWM) after the warm
	// lists: what reading the whole store took.
	hwmMB float64
}

// measureFirst times the first answers over mixed stores of each size.
func measureFirst(ctx context.Context, o options, work string) ([]firstRow, error) {
	var rows []firstRow
	for _, n := range o.first {
		r, err := firstOver(ctx, o, work, n)
		if err != nil {
			return nil, fmt.Errorf("%d sessions: %w", n, err)
		}
		rows = append(rows, r)
	}
	return rows, nil
}

// storeHome returns a generated mixed store of n sessions: under --stores
// one kept and reused across runs (generating 7,000 sessions takes a
// minute), else a new one under work.
func storeHome(o options, work string, n int) (string, error) {
	root := work
	if o.stores != "" {
		root = o.stores
	}
	home := filepath.Join(root, fmt.Sprintf("mixed-%d-seed%d", n, o.seed))
	done := filepath.Join(home, ".complete")
	if _, err := os.Stat(done); err == nil {
		return home, nil
	}
	if err := os.RemoveAll(home); err != nil {
		return "", fmt.Errorf("clear %s: %w", home, err)
	}
	t0 := time.Now()
	names, err := generate(home, n, o.seed)
	if err != nil {
		return "", err
	}
	syscall.Sync()
	fmt.Fprintf(os.Stderr, "%d sessions (%s): generated in %s\n", n, strings.Join(names, ", "), time.Since(t0).Round(time.Millisecond))
	if err := os.WriteFile(done, nil, 0o600); err != nil {
		return "", fmt.Errorf("mark %s complete: %w", home, err)
	}
	return home, nil
}

func firstOver(ctx context.Context, o options, work string, n int) (firstRow, error) {
	storeDir, err := storeHome(o, work, n)
	if err != nil {
		return firstRow{}, err
	}
	dir := filepath.Join(work, "first-"+strconv.Itoa(n))
	acHome := filepath.Join(dir, "ac")
	b := &bench{o: o, home: storeDir, bin: o.bin}
	b.env = []string{
		"HOME=" + b.home,
		"AGENTCTL_HOME=" + acHome,
		"PATH=" + os.Getenv("PATH"),
		"TMPDIR=" + os.TempDir(),
		"XDG_DATA_HOME=" + filepath.Join(b.home, ".local", "share"),
		"XDG_CONFIG_HOME=" + filepath.Join(b.home, ".config"),
	}
	row := firstRow{sessions: n, storeMB: treeSize(b.home) >> 20, load: loadAverage()}
	fmt.Fprintf(os.Stderr, "first answers over %d sessions (%d MB), load %s\n", n, row.storeMB, row.load)
	defer b.agentctl(context.WithoutCancel(ctx), "daemon", "stop")
	list := func() (api.SessionList, time.Duration, error) {
		t := time.Now()
		out, err := b.agentctl(ctx, "list", "-a", "--since", "87600h", "--json")
		d := time.Since(t)
		if err != nil {
			return api.SessionList{}, d, err
		}
		var l api.SessionList
		if err := json.Unmarshal(out, &l); err != nil {
			return l, d, fmt.Errorf("decode list -a: %w", err)
		}
		return l, d, nil
	}
	// firstEver starts from nothing: no service, no AGENTCTL_HOME; the
	// list starts the service, as a new user's first list does, and is
	// repeated until an answer is complete.
	firstEver := func(cold bool) (time.Duration, int, time.Duration, error) {
		if _, err := os.Stat(acHome); err == nil {
			if _, err := b.agentctl(ctx, "daemon", "stop"); err != nil {
				return 0, 0, 0, err
			}
		}
		if err := os.RemoveAll(acHome); err != nil {
			return 0, 0, 0, err
		}
		if cold {
			syscall.Sync()
			if err := os.WriteFile(dropCaches, []byte("3\n"), 0o200); err != nil {
				return 0, 0, 0, err
			}
		}
		start := time.Now()
		for {
			began := time.Now()
			l, took, err := list()
			if err != nil {
				return 0, 0, 0, err
			}
			if len(l.Warnings) == 0 {
				// Until the complete answer was printed: the bench's own
				// decoding of it (about a second at 50,000 sessions) is
				// not the user's wait.
				d := began.Add(took).Sub(start)
				cpu, err := b.serviceCPU(ctx)
				return d, len(l.Sessions), cpu, err
			}
			if time.Since(start) > settleTimeout {
				return 0, 0, 0, fmt.Errorf("still warning after %s: %q", settleTimeout, l.Warnings)
			}
		}
	}
	var first, cold, restart, warmJSON, warmTable, apiAlone, ts []time.Duration
	var firstCPU, jsonCPU, tableCPU, tsCPU []time.Duration
	// "First ever" is with the store in the page cache: a run before may
	// have emptied it (the cold column), and nothing since read the store.
	if err := readTree(b.home); err != nil {
		return row, err
	}
	for range o.runs {
		d, rows, cpu, err := firstEver(false)
		if err != nil {
			return row, err
		}
		first, row.firstRows, firstCPU = append(first, d), rows, append(firstCPU, cpu)
	}
	if f, err := os.OpenFile(dropCaches, os.O_WRONLY, 0); err != nil {
		row.coldNote = "page cache not emptied: " + err.Error()
	} else {
		f.Close()
		for range o.runs {
			d, _, _, err := firstEver(true)
			if err != nil {
				return row, err
			}
			cold = append(cold, d)
		}
	}
	for range o.runs {
		if _, err := b.agentctl(ctx, "daemon", "restart"); err != nil {
			return row, err
		}
		l, d, err := list()
		if err != nil {
			return row, err
		}
		restart = append(restart, d)
		if len(l.Warnings) > 0 || len(l.Sessions) != row.firstRows {
			row.restartNote = fmt.Sprintf("after a restart %d of %d rows, %d warnings", len(l.Sessions), row.firstRows, len(l.Warnings))
		}
	}
	if err := b.settle(ctx); err != nil {
		return row, err
	}
	sock := filepath.Join(acHome, "agentctl.sock")
	for range o.runs {
		d, cpu, err := b.timedCPU(ctx, "list", "-a", "--since", "87600h", "--json")
		if err != nil {
			return row, err
		}
		warmJSON, jsonCPU = append(warmJSON, d), append(jsonCPU, cpu)
		d, cpu, err = b.timedCPU(ctx, "list", "-a", "--since", "87600h")
		if err != nil {
			return row, err
		}
		warmTable, tableCPU = append(warmTable, d), append(tableCPU, cpu)
		d, size, err := apiList(ctx, sock)
		if err != nil {
			return row, err
		}
		apiAlone, row.apiBytes = append(apiAlone, d), size
	}
	if row.hwmMB, err = b.serviceHWM(ctx); err != nil {
		return row, err
	}
	if o.tsBin != "" {
		for range o.runs {
			d, cpu, note, err := b.tsList(ctx, o.tsBin)
			if err != nil {
				return row, err
			}
			ts, tsCPU, row.tsNote = append(ts, d), append(tsCPU, cpu), note
		}
	}
	row.first, row.firstCold, row.restart = median(first), median(cold), median(restart)
	row.firstCPU, row.warmJSONCPU, row.warmTableCPU = median(firstCPU), median(jsonCPU), median(tableCPU)
	row.warmJSON, row.warmTable, row.api, row.ts, row.tsCPU = median(warmJSON), median(warmTable), median(apiAlone), median(ts), median(tsCPU)
	return row, nil
}

// servicePID is the running service's process id.
func (b *bench) servicePID(ctx context.Context) (int, error) {
	out, err := b.agentctl(ctx, "daemon", "status", "--json")
	if err != nil {
		return 0, err
	}
	var st api.DaemonStatus
	if err := json.Unmarshal(out, &st); err != nil || st.PID <= 0 {
		return 0, fmt.Errorf("daemon status: no pid in %q", out)
	}
	return st.PID, nil
}

// serviceHWM is the service's peak resident set in MB, from
// /proc/PID/status (0 where there is none).
func (b *bench) serviceHWM(ctx context.Context) (float64, error) {
	pid, err := b.servicePID(ctx)
	if err != nil {
		return 0, err
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, nil
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 64)
			return kb / 1024, nil
		}
	}
	return 0, nil
}

// serviceCPU is the CPU time (user and system) the service used since it
// started, from /proc (0 where there is none).
func (b *bench) serviceCPU(ctx context.Context) (time.Duration, error) {
	pid, err := b.servicePID(ctx)
	if err != nil {
		return 0, err
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, nil
	}
	// The fields after the command's closing parenthesis: utime and
	// stime are the 12th and 13th, in clock ticks (100 a second).
	f := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %q", pid, data)
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	stm, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+stm) * 10 * time.Millisecond, nil
}

// timedCPU runs agentctl, its output discarded, and returns its wall time
// and CPU time.
func (b *bench) timedCPU(ctx context.Context, args ...string) (time.Duration, time.Duration, error) {
	cmd := exec.CommandContext(ctx, b.bin, args...)
	cmd.Env = b.env
	var stderr strings.Builder
	cmd.Stdout, cmd.Stderr = io.Discard, &stderr
	t := time.Now()
	if err := cmd.Run(); err != nil {
		return 0, 0, fmt.Errorf("agentctl %s: %w: %s", strings.Join(args, " "), err, stderr.String())
	}
	d := time.Since(t)
	return d, cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime(), nil
}

// tsList times the predecessor's `list -a` over the same store, in its
// direct mode (AGENTCTL_NO_DAEMON=1, no daemon of its own), with its CPU
// time (its children's, the ps it runs, included). bin is its
// executable, or its built cli.js, run with node. What it keeps under
// HOME (~/.agentctl) is removed before each run, so every run is its
// first.
func (b *bench) tsList(ctx context.Context, bin string) (time.Duration, time.Duration, string, error) {
	if err := os.RemoveAll(filepath.Join(b.home, ".agentctl")); err != nil {
		return 0, 0, "", err
	}
	args := []string{"list", "-a"}
	if strings.HasSuffix(bin, ".js") {
		args = append([]string{bin}, args...)
		bin = "node"
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(slices.Clone(b.env), "AGENTCTL_NO_DAEMON=1")
	var stderr strings.Builder
	cmd.Stdout, cmd.Stderr = io.Discard, &stderr
	t := time.Now()
	err := cmd.Run()
	d := time.Since(t)
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return d, 0, "failed: " + firstLine(stderr.String()), nil
	case err != nil:
		return 0, 0, "", fmt.Errorf("%s list -a: %w", bin, err)
	}
	cpu := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	return d, cpu, "", nil
}

// apiList reads the service's answer to GET /v1/sessions (every session)
// over its socket, as curl --unix-socket would: the service's share of a
// list.
func apiList(ctx context.Context, sock string) (time.Duration, int, error) {
	c := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}}}
	defer c.CloseIdleConnections()
	q := api.ListOptions{All: true, Since: 87600 * time.Hour}.Query().Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://agentctl/v1/sessions?"+q, nil)
	if err != nil {
		return 0, 0, err
	}
	t := time.Now()
	resp, err := c.Do(req)
	if err != nil {
		return 0, 0, fmt.Errorf("GET /v1/sessions: %w", err)
	}
	n, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	d := time.Since(t)
	if err != nil || resp.StatusCode != http.StatusOK {
		return 0, 0, fmt.Errorf("GET /v1/sessions: %s: %v", resp.Status, err)
	}
	return d, int(n), nil
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	ds = slices.Clone(ds)
	slices.Sort(ds)
	return ds[len(ds)/2]
}

// loadAverage is the machine's load over the last minute, five and
// fifteen, as /proc/loadavg says ("?" where it does not).
func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

func printFirst(w io.Writer, rows []firstRow, runs int) {
	fmt.Fprintf(w, "First answers (list -a, wall time end to end, medians of %d):\n", runs)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "sessions\tMB\tload\tTS list -a (ms)\tits CPU (ms)\tfirst ever (ms)\tits service CPU (ms)\tfirst ever, cold cache (ms)\tafter restart (ms)\twarm --json (ms)\tits CLI CPU (ms)\twarm table (ms)\tits CLI CPU (ms)\tAPI alone (ms)\tAPI KB\tservice VmHWM (MB)\t")
	var notes []string
	dash := func(d time.Duration) string {
		if d == 0 {
			return "–"
		}
		return ms(d)
	}
	for _, r := range rows {
		fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%.0f\t\n", r.firstRows, r.storeMB, r.load, dash(r.ts), dash(r.tsCPU), ms(r.first), ms(r.firstCPU), dash(r.firstCold),
			ms(r.restart), ms(r.warmJSON), ms(r.warmJSONCPU), ms(r.warmTable), ms(r.warmTableCPU), ms(r.api), r.apiBytes>>10, r.hwmMB)
		for _, n := range []string{r.coldNote, r.restartNote, r.tsNote} {
			if n != "" {
				notes = append(notes, fmt.Sprintf("%d sessions: %s", r.sessions, n))
			}
		}
	}
	tw.Flush()
	for _, n := range slices.Compact(notes) {
		fmt.Fprintln(w, "note:", n)
	}
}

// readTree reads every regular file under dir once, into the page cache.
func readTree(dir string) error {
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		if _, err := io.Copy(io.Discard, f); err != nil {
			return fmt.Errorf("read %s: %w", path, err)
		}
		return nil
	})
}
