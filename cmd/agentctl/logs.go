package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/client"
	"github.com/agentctl/agentctl/hosts"
	"github.com/agentctl/agentctl/internal/text"
)

func newLogsCmd(cli *cli) *cobra.Command {
	var o api.LogOptions
	var noColor bool
	var since, until string
	var sel selection
	cmd := &cobra.Command{
		Use:   "logs ID... | --all | --group G | --label K=V",
		Short: "Show sessions' output (-f to follow until they end)",
		Long: `Show the last lines of a session's terminal output: a screenful on a
terminal, all of it in a pipe or file (-n or --tail N chooses). The default view strips
terminal escape sequences and applies what redraws a line in place (carriage
returns, cursor moves and erasures within the line: a spinner reads as it
ended), keeping colour when the output is a terminal (--no-color or
NO_COLOR=1 turns it off; a pipe or file never gets it); --raw
gives the bytes as the agent wrote them.

-f follows the output until the session ends, then exits; a line still
being written shows once the output pauses (rewritten in place as it grows
on a terminal, continued where it stopped in a pipe or file). --since shows what was written
since a time (all of it, unless -n), --until what was written before one, and -t prefixes each line with the time
it was written; they read the log's time marks, which are to the second
(sessions started by older versions have none). Nothing is lost or repeated
between the lines shown first and those that follow. Ctrl-C stops following
(exit 130); the session goes on.

Several sessions (IDs, or --all, --group G, --label K=V: ended ones too)
show each line after the session's name or handle and "|", as pm2 logs and
stern do: one session after the other, or with -f all of them at once in
the order their lines arrive, until every one has ended.`,
		Example: `  agentctl logs web
  agentctl logs -f k3x9
  agentctl logs -n 0 k3x9 | grep error
  agentctl logs -f --group fix-auth
  agentctl logs --since 1h --until 10m web
  agentctl logs --raw -n 0 k3x9 > out.log`,
		Args: args(cobra.ArbitraryArgs),
		RunE: func(cmd *cobra.Command, a []string) error {
			if !cmd.Flags().Changed("lines") && !cmd.Flags().Changed("tail") {
				o.Lines = screenLines(cli)
				if since != "" {
					o.Lines = 0 // all since then
				}
			}
			now := time.Now()
			if since != "" {
				t, err := parseSince("--since", since, now)
				if err != nil {
					return err
				}
				o.Since = t.Format(time.RFC3339Nano)
			}
			if until != "" {
				if o.Follow || o.Raw {
					return usageError{fmt.Errorf("logs: --until ends the text view's lines; it goes with neither -f nor --raw")}
				}
				t, err := parseSince("--until", until, now)
				if err != nil {
					return err
				}
				o.Until = t.Format(time.RFC3339Nano)
			}
			if o.Timestamps && o.Raw {
				return usageError{fmt.Errorf("logs: -t stamps lines of the text view; --raw has no lines")}
			}
			tty := term.IsTerminal(fdOf(cli.out))
			o.Color = tty && !noColor && cli.getenv("NO_COLOR") == ""
			o.TextAsData = true
			if len(a) == 1 && !sel.any() {
				return oneLog(cmd.Context(), cli, a[0], o, tty)
			}
			def, err := cli.defaultHost()
			if err != nil {
				return err
			}
			handles, err := sel.targets(cmd.Context(), def.API, cmd, a, func(api.Session) bool { return true })
			if err != nil {
				return err
			}
			switch len(handles) {
			case 0:
				fmt.Fprintln(cli.errOut, "agentctl: logs: no session matches")
				return nil
			case 1:
				return oneLog(cmd.Context(), cli, handles[0], o, tty)
			}
			if o.Raw {
				return usageError{fmt.Errorf("logs: --raw gives one session's bytes; %d sessions were named", len(handles))}
			}
			route, err := cli.routeHandles(def, handles)
			if err != nil {
				return err
			}
			return manyLogs(cmd.Context(), cli, route, handles, len(a) > 0, o)
		},
	}
	sel.register(cli, cmd, "every session agentctl launched, running or ended")
	cmd.Flags().IntVarP(&o.Lines, "lines", "n", 0, "how many of the last lines (0: all kept; default: a screenful on a terminal, all in a pipe or file)")
	cmd.Flags().IntVar(&o.Lines, "tail", 0, "the same as -n (kubectl's name)")
	cmd.Flags().BoolVarP(&o.Follow, "follow", "f", false, "follow the output until the session ends")
	cmd.Flags().BoolVar(&o.Raw, "raw", false, "raw bytes, escape sequences included")
	cmd.Flags().BoolVar(&noColor, "no-color", false, "strip colour too (also NO_COLOR=1)")
	cmd.Flags().StringVar(&since, "since", "", "output written since `DURATION` ago (10m) or since a TIME (RFC 3339), to the second")
	cmd.Flags().StringVar(&until, "until", "", "output written until `DURATION` ago (10m) or until a TIME (RFC 3339), to the second")
	cmd.Flags().BoolVarP(&o.Timestamps, "timestamps", "t", false, "prefix each line with the time it was written (UTC, to the second)")
	return cmd
}

// parseSince reads --since or --until (flag): a duration back from now, or
// an RFC 3339 time.
func parseSince(flag, s string, now time.Time) (time.Time, error) {
	if d, err := time.ParseDuration(s); err == nil {
		if d < 0 {
			return time.Time{}, usageError{fmt.Errorf("%s %s: a duration looks back and cannot be negative", flag, s)}
		}
		return now.Add(-d), nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	return time.Time{}, usageError{fmt.Errorf("%s %q: want a duration (10m, 2h) or an RFC 3339 time (2026-01-02T15:04:05Z)", flag, s)}
}

// oneLog prints one session's output: the text view (a partial line as it
// grows when following) or the raw bytes.
func oneLog(ctx context.Context, cli *cli, handle string, o api.LogOptions, tty bool) error {
	h, id, err := cli.hostFor(handle)
	if err != nil {
		return err
	}
	o.Partial = o.Follow && !o.Raw
	out := bufio.NewWriterSize(cli.out, 256<<10)
	defer out.Flush()
	v := logView{inPlace: tty}
	err = followLogs(ctx, h.API, id, o, func(ch api.LogChunk) error {
		if err := v.write(out, ch, o.Raw); err != nil {
			return err
		}
		if o.Follow {
			return out.Flush()
		}
		return nil
	})
	if o.Color && v.colored {
		out.WriteString("\x1b[0m")
	}
	return err
}

// manyLogs prints several sessions' text views, each line prefixed with
// the session's handle (as pm2 logs and stern do): one session after the
// other, or, following, all at once in the order their lines arrive, until
// every one has ended. One failing does not stop the others.
func manyLogs(ctx context.Context, cli *cli, route map[string]routed, handles []string, given bool, o api.LogOptions) error {
	labels := make([]string, len(handles))
	width := 0
	for i, h := range handles {
		labels[i] = h
		if !given {
			// Selected by the flags: the handle is an id; the name reads better.
			labels[i] = shortID(h)
			if s, err := route[h].host.API.Get(ctx, route[h].id); err == nil && s.Name != "" {
				labels[i] = s.Name
			}
		}
		labels[i] = text.Clean(labels[i])
		width = max(width, len(labels[i]))
	}
	out := bufio.NewWriterSize(cli.out, 256<<10)
	defer out.Flush()
	var mu sync.Mutex
	show := func(i int, ch api.LogChunk) error {
		body := ch.Text
		if ch.Data != nil {
			body = string(ch.Data)
		}
		if body == "" && ch.End {
			return nil
		}
		mu.Lock()
		defer mu.Unlock()
		for _, line := range strings.Split(body, "\n") {
			fmt.Fprintf(out, "%-*s | %s", width, labels[i], line)
			if o.Color && strings.IndexByte(line, 0x1b) >= 0 {
				// Colour left on would run into the next prefix.
				out.WriteString("\x1b[0m")
			}
			out.WriteByte('\n')
		}
		if o.Follow {
			return out.Flush()
		}
		return nil
	}
	errs := make([]error, len(handles))
	each := func(i int) {
		r := route[handles[i]]
		errs[i] = followLogs(ctx, r.host.API, r.id, o, func(ch api.LogChunk) error { return show(i, ch) })
	}
	if o.Follow {
		var wg sync.WaitGroup
		for i := range handles {
			wg.Add(1)
			go func() {
				defer wg.Done()
				each(i)
			}()
		}
		wg.Wait()
	} else {
		for i := range handles {
			each(i)
		}
	}
	out.Flush()
	var failed []string
	for i, err := range errs {
		if err == nil {
			continue
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		fmt.Fprintln(cli.errOut, text.CleanLines(fmt.Sprintf("agentctl: logs %s: %v", handles[i], err)))
		failed = append(failed, handles[i])
	}
	if len(failed) > 0 {
		return printedError{err: fmt.Errorf("logs failed for %d of %d sessions: %s", len(failed), len(handles), strings.Join(failed, " "))}
	}
	return nil
}

// followLogs is Client.Logs that, when following, rides out a restart of
// the service: it waits for the service to answer again and continues at
// the last cursor, so nothing is lost or repeated.
func followLogs(ctx context.Context, src client.Sessions, id string, o api.LogOptions, emit func(api.LogChunk) error) error {
	svc, service := src.(hosts.Service)
	if !o.Follow || !service {
		// Another kind of host follows its sessions by itself.
		return src.Logs(ctx, id, o, emit)
	}
	c := svc.ServiceClient()
	o.Cursors = true
	cursor := ""
	for {
		var emitErr error
		err := c.Logs(ctx, id, o, func(ch api.LogChunk) error {
			if ch.Cursor != "" {
				cursor = ch.Cursor
				return nil
			}
			emitErr = emit(ch)
			return emitErr
		})
		var apiErr *api.Error
		switch {
		case err == nil || ctx.Err() != nil || emitErr != nil || cursor == "" || errors.As(err, &apiErr):
			return err
		}
		// The stream broke off: the service went away.
		if err := waitForService(ctx, c); err != nil {
			return err
		}
		o.After = cursor
	}
}

// logView prints a log stream's chunks: raw bytes as they are; text lines
// each with a newline; a partial line as it grows: on a terminal
// (inPlace) rewritten in place, elsewhere continued where it stopped (or,
// when a carriage return rewrote it, shown again on a line of its own).
type logView struct {
	inPlace bool
	partial string // the partial line shown, without a line end
	colored bool   // colour was printed
}

func (v *logView) write(w *bufio.Writer, ch api.LogChunk, raw bool) error {
	if raw {
		_, err := w.Write(ch.Data)
		return err
	}
	text := ch.Text
	if ch.Data != nil {
		text = string(ch.Data)
	}
	if ch.End && text == "" {
		return nil
	}
	full := text
	if v.partial != "" {
		switch {
		case v.inPlace:
			// Back to the start of the line, erased: it is written again.
			w.WriteString("\r\x1b[K")
		case strings.HasPrefix(text, v.partial):
			text = text[len(v.partial):]
		default:
			w.WriteByte('\n')
		}
		v.partial = ""
	}
	for i := 0; i < len(text) && !v.colored; i++ {
		v.colored = text[i] == 0x1b
	}
	w.WriteString(text)
	if ch.Partial {
		v.partial = full
		return nil
	}
	return w.WriteByte('\n')
}
