package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/client"
)

func newLogsCmd() *cobra.Command {
	var o api.LogOptions
	var noColor bool
	var since string
	cmd := &cobra.Command{
		Use:   "logs ID",
		Short: "Show a session's output (-f to follow until it ends)",
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
since a time (all of it, unless -n), and -t prefixes each line with the time
it was written; both read the log's time marks, which are to the second
(sessions started by older versions have none). Nothing is lost or repeated
between the lines shown first and those that follow. Ctrl-C stops following
(exit 130); the session goes on.`,
		Example: `  agentctl logs web
  agentctl logs -f k3x9
  agentctl logs -n 0 k3x9 | grep error
  agentctl logs --raw -n 0 k3x9 > out.log`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			h, id, err := hostFor(a[0])
			if err != nil {
				return err
			}
			if !cmd.Flags().Changed("lines") && !cmd.Flags().Changed("tail") {
				o.Lines = screenLines()
				if since != "" {
					o.Lines = 0 // all since then
				}
			}
			if since != "" {
				t, err := parseSince(since, time.Now())
				if err != nil {
					return err
				}
				o.Since = t.Format(time.RFC3339Nano)
			}
			if o.Timestamps && o.Raw {
				return usageError{fmt.Errorf("logs: -t stamps lines of the text view; --raw has no lines")}
			}
			tty := term.IsTerminal(int(os.Stdout.Fd()))
			o.Color = tty && !noColor && os.Getenv("NO_COLOR") == ""
			o.Partial = o.Follow && !o.Raw
			o.TextAsData = true
			out := bufio.NewWriterSize(os.Stdout, 256<<10)
			defer out.Flush()
			v := logView{inPlace: tty}
			err = followLogs(cmd.Context(), h.API, id, o, func(ch api.LogChunk) error {
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
		},
	}
	cmd.Flags().IntVarP(&o.Lines, "lines", "n", 0, "how many of the last lines (0: all kept; default: a screenful on a terminal, all in a pipe or file)")
	cmd.Flags().IntVar(&o.Lines, "tail", 0, "the same as -n (kubectl's name)")
	cmd.Flags().BoolVarP(&o.Follow, "follow", "f", false, "follow the output until the session ends")
	cmd.Flags().BoolVar(&o.Raw, "raw", false, "raw bytes, escape sequences included")
	cmd.Flags().BoolVar(&noColor, "no-color", false, "strip colour too (also NO_COLOR=1)")
	cmd.Flags().StringVar(&since, "since", "", "output written since `DURATION` ago (10m) or since a TIME (RFC 3339), to the second")
	cmd.Flags().BoolVarP(&o.Timestamps, "timestamps", "t", false, "prefix each line with the time it was written (UTC, to the second)")
	return cmd
}

// parseSince reads --since: a duration back from now, or an RFC 3339 time.
func parseSince(s string, now time.Time) (time.Time, error) {
	if d, err := time.ParseDuration(s); err == nil {
		if d < 0 {
			return time.Time{}, usageError{fmt.Errorf("--since %s: a duration looks back and cannot be negative", s)}
		}
		return now.Add(-d), nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	return time.Time{}, usageError{fmt.Errorf("--since %q: want a duration (10m, 2h) or an RFC 3339 time (2026-01-02T15:04:05Z)", s)}
}

// followLogs is Client.Logs that, when following, rides out a restart of
// the service: it waits for the service to answer again and continues at
// the last cursor, so nothing is lost or repeated.
func followLogs(ctx context.Context, src client.Sessions, id string, o api.LogOptions, emit func(api.LogChunk) error) error {
	c, service := src.(*client.Client)
	if !o.Follow || !service {
		// Another kind of host follows its sessions by itself.
		return src.Logs(ctx, id, o, emit)
	}
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
