package session

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/internal/text"
	"github.com/agentctl/agentctl/logs"
)

// errUntil ends a read at the first line written at or after --until.
var errUntil = errors.New("until reached")

// logsTimed serves a log read that needs the log's time marks: output
// since or until a time, or lines with the time they were written. It reads from the
// position the marks give (the oldest kept byte for timestamps alone), keeps
// the last o.Lines lines of what was written until now, and then follows
// like Logs.
func (c *Core) logsTimed(ctx context.Context, sess api.Session, path string, o api.LogOptions, emit func(api.LogChunk) error) error {
	times := logs.LoadTimes(path)
	var pos logs.Position
	switch {
	case o.After != "":
		p, err := logs.ParsePosition(o.After)
		if err != nil {
			return faultf(ErrInvalid, "%v", err)
		}
		pos = p
	case o.Since != "":
		since, err := time.Parse(time.RFC3339Nano, o.Since)
		if err != nil {
			return faultf(ErrInvalid, "since %s: want an RFC 3339 time", text.Quote(o.Since))
		}
		p, ok := times.Since(path, since)
		if !ok {
			// Everything marked is older: start at the end.
			end, err := logs.End(path)
			if err != nil {
				return err
			}
			p = end
		}
		pos = p
	default:
		// Time stamps alone: the last lines, not the whole log.
		p, err := logs.TailStart(path, o.Lines)
		if err != nil {
			return err
		}
		pos = p
	}
	var until time.Time
	if o.Until != "" {
		t, err := time.Parse(time.RFC3339Nano, o.Until)
		if err != nil {
			return faultf(ErrInvalid, "until %s: want an RFC 3339 time", text.Quote(o.Until))
		}
		until = t
	}
	// late reports whether the line ending at p was written at or after
	// until (a line with no mark is not).
	late := func(p logs.Position) bool {
		if until.IsZero() {
			return false
		}
		t := times.At(p)
		return !t.IsZero() && !t.Before(until)
	}
	strip := logs.Stripper{KeepColor: o.Color}
	history := o.After == ""
	var kept []string // the last o.Lines lines of the history
	var batch strings.Builder
	flush := func() error {
		if batch.Len() == 0 {
			return nil
		}
		text := strings.TrimSuffix(batch.String(), "\n")
		batch.Reset()
		return emit(textChunk(text, o.TextAsData, false))
	}
	line := func(text string) error {
		if history && o.Lines > 0 {
			if len(kept) == o.Lines {
				kept = kept[1:]
			}
			kept = append(kept, text)
			return nil
		}
		batch.WriteString(text)
		batch.WriteByte('\n')
		if batch.Len() >= maxChunk {
			return flush()
		}
		return nil
	}
	stamp := func(at logs.Position) string {
		if !o.Timestamps {
			return ""
		}
		if t := times.At(at); !t.IsZero() {
			return t.UTC().Format(time.RFC3339) + " "
		}
		return "-                    "
	}
	read := func(b []byte, at logs.Position) error {
		if o.Raw {
			if err := sendRaw(b, emit); err != nil {
				return err
			}
		} else {
			start := at.Offset - int64(len(b))
			var err error
			strip.Lines(b, func(l []byte, end int) {
				p := logs.Position{Inode: at.Inode, Offset: start + int64(end)}
				switch {
				case err != nil:
				case late(p):
					err = errUntil
				default:
					err = line(stamp(p) + string(l))
				}
			})
			if ferr := flush(); err == nil {
				err = ferr
			}
			if err != nil {
				return err
			}
		}
		if !o.Cursors || !o.Follow || history {
			return nil
		}
		if !o.Raw {
			at.Offset -= strip.SinceLine()
		}
		if at.Offset < 0 {
			return nil
		}
		return emit(api.LogChunk{Cursor: at.String()})
	}
	// What is there now.
	reachedUntil := false
	if err := logs.FollowFrom(ctx, path, pos, func() bool { return true }, func(b []byte, at logs.Position) error {
		pos = at
		return read(b, at)
	}); errors.Is(err, errUntil) {
		reachedUntil = true
	} else if err != nil {
		return err
	}
	history = false
	for _, l := range kept {
		if err := line(l); err != nil {
			return err
		}
	}
	if err := flush(); err != nil {
		return err
	}
	if o.Follow {
		if at := pos; o.Cursors {
			if !o.Raw {
				at.Offset -= strip.SinceLine()
			}
			if at.Offset >= 0 {
				if err := emit(api.LogChunk{Cursor: at.String()}); err != nil {
					return err
				}
			}
		}
		ended := func() bool {
			times.Refresh()
			s, err := c.records.get(sess.ID)
			return err != nil || s.Status.Ended()
		}
		if err := logs.FollowFrom(ctx, path, pos, ended, read); err != nil {
			return err
		}
	}
	if !o.Raw && !reachedUntil && !late(pos) {
		if last, ok := strip.Flush(); ok {
			if err := emit(textChunk(stamp(pos)+last, o.TextAsData, false)); err != nil {
				return err
			}
		}
	}
	if o.Follow {
		if final, err := c.records.get(sess.ID); err == nil {
			sess = final
		}
	}
	return emit(api.LogChunk{End: true, Session: &sess})
}
