package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/internal/text"
)

// statser answers what sessions cost (an agentctl service).
type statser interface {
	Stats(ctx context.Context, ids []string) (api.Stats, error)
}

// statsOptions are how stats shows what it reads.
type statsOptions struct {
	// stream redraws every refresh until interrupted.
	stream    bool
	refresh   time.Duration
	asJSON    bool
	noHeaders bool
}

func newStatsCmd(cli *cli) *cobra.Command {
	var noStream, asJSON bool
	var tbl tableOptions
	var refresh time.Duration
	cmd := &cobra.Command{
		Use:   "stats [ID|NAME...]",
		Short: "Show what sessions cost: CPU, memory, tasks and I/O, once or live",
		Long: `Show what each running session costs the machine, as docker stats does for
containers: CPU (percent of one core over the last interval, 200% being two
busy cores, and the processor time in all), memory in use and its peak,
tasks (threads included, as a cgroup's pids.max counts them) and what it
read from and wrote to storage. The figures come from the session's cgroup
where it has one, else from its processes added up. The first line is the
machine's: its load, its available memory, and the sessions' total.

Without arguments every running session agentctl started is shown; a named
session that ended shows the peak memory it reached.

On a terminal the table is redrawn every --refresh until Ctrl-C; in a pipe,
or with --no-stream, it is printed once (the first time, after a second, to
measure the CPU percent over an interval). --json prints the answer as JSON
(once per refresh when streaming).`,
		Example: `  agentctl stats
  agentctl stats --no-stream web k3x9
  agentctl stats --json | jq '.sessions[] | {id, mem: .resources.memory_bytes}'`,
		Args: args(cobra.ArbitraryArgs),
		RunE: func(cmd *cobra.Command, a []string) error {
			hs, several, err := cli.targetHosts("")
			if err != nil {
				return err
			}
			if several {
				return usageError{fmt.Errorf("stats reads one host at a time; name it with -H")}
			}
			h, ids := hs[0], a
			if len(a) > 0 {
				routes, err := cli.routeHandles(h, a)
				if err != nil {
					return err
				}
				ids = make([]string, len(a))
				for i, handle := range a {
					r := routes[handle]
					if i == 0 {
						h = r.host
					} else if r.host.Name != h.Name {
						return usageError{fmt.Errorf("stats reads one host at a time: %s and %s are on different hosts", a[0], handle)}
					}
					ids[i] = r.id
				}
			}
			src, ok := h.API.(statser)
			if !ok {
				return cannot(h, "show what its sessions cost")
			}
			tty := term.IsTerminal(fdOf(cli.out))
			o := statsOptions{stream: tty && !noStream, refresh: refresh, asJSON: asJSON, noHeaders: tbl.noHeaders}
			return runStats(cmd.Context(), cli, src, ids, o)
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&noStream, "no-stream", false, "print once and exit (the default when the output is not a terminal)")
	fl.BoolVar(&asJSON, "json", false, "print JSON")
	fl.DurationVar(&refresh, "refresh", 2*time.Second, "how often the live view reads the figures again")
	tbl.register(cmd)
	return cmd
}

// runStats shows the sessions' costs once, or live until ctx ends.
func runStats(ctx context.Context, cli *cli, src statser, ids []string, o statsOptions) error {
	out := cli.out
	if !o.stream {
		st, err := src.Stats(ctx, ids)
		if err != nil {
			return err
		}
		if o.asJSON {
			return printJSON(out, st)
		}
		for _, w := range st.Warnings {
			cli.warn("%s", w)
		}
		return printStats(out, st, time.Now(), !o.noHeaders)
	}
	if o.refresh <= 0 {
		o.refresh = 2 * time.Second
	}
	if !o.asJSON {
		// The alternate screen, as top: what was on the terminal is back
		// when the view ends.
		fmt.Fprint(out, "\x1b[?1049h\x1b[?25l\x1b[H\x1b[2J")
		defer fmt.Fprint(out, "\x1b[?25h\x1b[?1049l")
	}
	resized := make(chan os.Signal, 1)
	signal.Notify(resized, syscall.SIGWINCH)
	defer signal.Stop(resized)
	t := time.NewTicker(o.refresh)
	defer t.Stop()
	for {
		st, err := src.Stats(ctx, ids)
		if ctx.Err() != nil {
			return nil
		}
		var b bytes.Buffer
		switch {
		case err != nil && o.asJSON:
			cli.warn("%v", err)
		case err != nil:
			fmt.Fprintf(&b, "agentctl stats: %s (trying again every %s)\n", text.Clean(err.Error()), o.refresh)
		case o.asJSON:
			json.NewEncoder(&b).Encode(st)
		default:
			for _, w := range st.Warnings {
				fmt.Fprintf(&b, "warning: %s\n", text.Clean(w))
			}
			printStats(&b, st, time.Now(), !o.noHeaders)
		}
		if o.asJSON {
			out.Write(b.Bytes())
		} else if err := redraw(out, b.String()); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		case <-resized:
		}
	}
}

// printStats writes the machine's line and a row per session.
func printStats(w io.Writer, st api.Stats, now time.Time, headers bool) error {
	if headers {
		fmt.Fprintln(w, machineLine(st.Machine, st.Total, len(st.Sessions)))
	}
	if len(st.Sessions) == 0 {
		if headers {
			fmt.Fprintln(w, "no running sessions")
		}
		return nil
	}
	tw := newTable(w)
	tw.noHeaders = !headers
	tw.header("ID\tADAPTER\tSTATUS\tCPU %\tMEM\tPEAK\tPIDS\tCPU TIME\tBLOCK I/O\tNAME/COMMAND")
	for _, s := range st.Sessions {
		r := s.Resources
		if r == nil {
			r = &api.Resources{}
		}
		id := s.Handle
		if id == "" {
			id = s.ID
		}
		if s.Host != "" {
			id = s.Host + "/" + id
		}
		blockIO := ""
		if r.IOReadBytes != nil || r.IOWriteBytes != nil {
			blockIO = dash(text.Size(r.IOReadBytes)) + " / " + dash(text.Size(r.IOWriteBytes))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", text.Clean(id), s.Adapter, s.Status,
			dash(text.Percent(r.CPUPercent)), dash(text.Size(r.MemoryBytes)), dash(text.Size(r.MemoryPeakBytes)),
			dash(countText(r.PIDs)), dash(text.Seconds(r.CPUSeconds)), dash(blockIO), text.Clean(oneLine(s.Label, 60)))
	}
	return tw.Flush()
}

// machineLine is the machine's load and memory and the sessions' total.
func machineLine(m *api.Machine, total *api.Resources, n int) string {
	var parts []string
	if m != nil {
		parts = append(parts, fmt.Sprintf("load %.2f %.2f %.2f (%d CPUs)", m.Load1, m.Load5, m.Load15, m.CPUs))
		if m.MemTotalBytes > 0 {
			parts = append(parts, fmt.Sprintf("memory %s available of %s", text.Size(&m.MemAvailableBytes), text.Size(&m.MemTotalBytes)))
		}
	}
	sessions := fmt.Sprintf("%d sessions", n)
	if n == 1 {
		sessions = "1 session"
	}
	if total != nil {
		sessions += fmt.Sprintf(": %s CPU, %s, %s pids", dash(text.Percent(total.CPUPercent)), dash(text.Size(total.MemoryBytes)), dash(countText(total.PIDs)))
	}
	parts = append(parts, sessions)
	return strings.Join(parts, " · ")
}

func countText(p *int) string {
	if p == nil {
		return ""
	}
	return fmt.Sprint(*p)
}
