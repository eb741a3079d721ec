package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/internal/synth/claude"
)

// firstRow is the first answers over one store: after a cold start (no
// discovery cache), after `daemon restart` (the cache on disk), and warm.
type firstRow struct {
	store    string
	sessions int
	storeMB  int64
	// cold is from `daemon start` to the first complete `list -a` (no
	// warning), and coldFirst the first answer's time and completeness.
	cold, coldFirst time.Duration
	coldFirstRows   int
	// restart is the first `list -a` after `daemon restart`, timed alone;
	// restartRows the rows it listed, restartNote its warning if any.
	restart     time.Duration
	restartRows int
	restartNote string
	warm        time.Duration
	// warmAll is the restart's own command (every session, as JSON) warm:
	// what of the restart's time is the cost of printing every row.
	warmAll time.Duration
}

// measureFirst times the first answers over a store of n Claude sessions
// and, when mixed > 0, over a mixed store of that many sessions.
func measureFirst(ctx context.Context, o options, work string, n, mixed int) ([]firstRow, error) {
	var rows []firstRow
	r, err := firstOver(ctx, o, filepath.Join(work, "first-claude"), fmt.Sprintf("%d Claude", n), func(home string) error {
		return claude.GenerateStore(home, n, o.seed)
	})
	if err != nil {
		return nil, err
	}
	rows = append(rows, r)
	if mixed > 0 {
		r, err := firstOver(ctx, o, filepath.Join(work, "first-mixed"), fmt.Sprintf("%d mixed", mixed), func(home string) error {
			_, err := generate(home, mixed, o.seed)
			return err
		})
		if err != nil {
			return nil, err
		}
		rows = append(rows, r)
	}
	return rows, nil
}

func firstOver(ctx context.Context, o options, dir, name string, gen func(home string) error) (firstRow, error) {
	b := &bench{o: o, home: filepath.Join(dir, "home"), bin: o.bin}
	t0 := time.Now()
	if err := gen(b.home); err != nil {
		return firstRow{}, err
	}
	syscall.Sync()
	row := firstRow{store: name, storeMB: treeSize(b.home) >> 20}
	fmt.Fprintf(os.Stderr, "first answers: %s store, %d MB, generated in %s\n", name, row.storeMB, time.Since(t0).Round(time.Millisecond))
	b.env = []string{
		"HOME=" + b.home,
		"AGENTCTL_HOME=" + filepath.Join(dir, "ac"),
		"PATH=" + os.Getenv("PATH"),
		"TMPDIR=" + os.TempDir(),
		"XDG_DATA_HOME=" + filepath.Join(b.home, ".local", "share"),
		"XDG_CONFIG_HOME=" + filepath.Join(b.home, ".config"),
	}
	defer b.agentctl(ctx, "daemon", "stop")
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

	// Cold: no discovery cache; lists until one is complete.
	start := time.Now()
	if _, err := b.agentctl(ctx, "daemon", "start"); err != nil {
		return row, err
	}
	for i := 0; ; i++ {
		l, _, err := list()
		if err != nil {
			return row, err
		}
		if i == 0 {
			row.coldFirst, row.coldFirstRows = time.Since(start), len(l.Sessions)
		}
		if len(l.Warnings) == 0 {
			row.cold, row.sessions = time.Since(start), len(l.Sessions)
			break
		}
		if time.Since(start) > settleTimeout {
			return row, fmt.Errorf("still warning after %s: %q", settleTimeout, l.Warnings)
		}
	}
	// Restart: the service reads its cache file.
	if _, err := b.agentctl(ctx, "daemon", "restart"); err != nil {
		return row, err
	}
	l, d, err := list()
	if err != nil {
		return row, err
	}
	row.restart, row.restartRows = d, len(l.Sessions)
	if len(l.Warnings) > 0 {
		row.restartNote = "warned: " + l.Warnings[0]
	}
	if err := b.settle(ctx); err != nil {
		return row, err
	}
	var warm, warmAll []time.Duration
	for range o.runs {
		t := time.Now()
		if _, err := b.agentctl(ctx, "list", "-a"); err != nil {
			return row, err
		}
		warm = append(warm, time.Since(t))
		_, d, err := list()
		if err != nil {
			return row, err
		}
		warmAll = append(warmAll, d)
	}
	slices.Sort(warm)
	slices.Sort(warmAll)
	row.warm, row.warmAll = warm[len(warm)/2], warmAll[len(warmAll)/2]
	return row, nil
}

func printFirst(w io.Writer, rows []firstRow) {
	fmt.Fprintln(w, "First answers (agentctl list -a, wall time end to end):")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "store\tsessions\tMB\tcold: first complete (ms)\tcold: first answer (ms)\tafter daemon restart (ms)\twarm (ms, median)\twarm, the restart's command (ms, median)\tnote")
	for _, r := range rows {
		note := r.restartNote
		if r.restartRows != r.sessions {
			note = strings.TrimPrefix(strings.Join([]string{note, fmt.Sprintf("restart listed %d of %d", r.restartRows, r.sessions)}, "; "), "; ")
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s, %d rows\t%s\t%s\t%s\t%s\n", r.store, r.sessions, r.storeMB,
			ms(r.cold), ms(r.coldFirst), r.coldFirstRows, ms(r.restart), ms(r.warm), ms(r.warmAll), note)
	}
	tw.Flush()
}
