package claude

import (
	"bytes"
	"fmt"
	"io"

	"github.com/agentctl/agentctl/internal/jsondecode"
	"github.com/agentctl/agentctl/internal/jsonscan"
)

// The totals (tokens and cost) of a transcript without a cost-state to
// read them from need every assistant record's usage, and nothing else of
// the file: the usage scanner reads them without decoding the rest. A line
// of a type the totals do not depend on is passed over by its "type"
// alone; of an assistant or cost-state record only the fields a record
// has are kept (the message's content, most of such a line, is checked
// but not decoded), and that small object is decoded as the whole line
// would be. So the totals are those of a full read (scan), to the token,
// which TestUsageScanner and FuzzUsageScanner hold it to.

// recordKeys and messageKeys are the JSON names of record's and message's
// fields (TestRecordKeys keeps them so).
var (
	recordKeys  = []string{"type", "sessionId", "cwd", "timestamp", "isMeta", "isSidechain", "isApiErrorMessage", "message", "operation", "content", "totalCostUSD", "modelUsage", "startTime", "error", "apiErrorStatus"}
	messageKeys = []string{"id", "role", "model", "content", "stop_reason", "usage"}
)

// keyIn says whether key, as written in a line, names one of keys as
// encoding/json matches them (any ASCII case); plain is false for a key
// with escapes or non-ASCII bytes, which only the decoder may judge.
func keyIn(key []byte, keys []string) (in, plain bool) {
	for _, c := range key {
		if c == '\\' || c >= 0x80 {
			return false, false
		}
	}
	for _, k := range keys {
		if len(k) == len(key) && bytes.EqualFold(key, []byte(k)) {
			return true, true
		}
	}
	return false, true
}

// usageScanner totals transcripts' usage; its buffer is reused from line
// to line.
type usageScanner struct {
	slim []byte
}

// line applies one transcript line's part in the totals to s, as
// parseRecord and apply would.
func (u *usageScanner) line(s *summary, line []byte) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return
	}
	if t, found := peekType(line); found && !recordTypes[t] {
		return // parseRecord passes it over too
	}
	r, ok, bad := u.record(line)
	if bad {
		s.BadLines++
	}
	if ok && !r.IsSidechain {
		s.applyTotals(r)
	}
}

// record decodes what of line the totals read: the line's record-type
// fields, the message without its content. ok is false when parseRecord
// would not hand the line on, and bad when it would fail on it.
func (u *usageScanner) record(line []byte) (r record, ok, bad bool) {
	slim, plain := u.slimRecord(line)
	if !plain {
		r, ok, err := parseRecord(line)
		return r, ok && err == nil, err != nil
	}
	if slim == nil || jsondecode.Unmarshal(slim, &r) != nil {
		return record{}, false, true
	}
	return r, recordTypes[r.Type], false
}

// slimRecord returns line as one object of the members it has of record's
// fields, in their order, the message's content made null; nil when line
// is not one valid JSON object (as json.Unmarshal would judge it). plain is
// false when a key needs the decoder's judgement (escapes, non-ASCII).
func (u *usageScanner) slimRecord(line []byte) (slim []byte, plain bool) {
	out := append(u.slim[:0], '{')
	plain = true
	end, err := jsonscan.Members(line, 0, func(k, v []byte) {
		in, ok := keyIn(k, recordKeys)
		if !ok {
			plain = false
		}
		if !in || !plain {
			return
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = append(out, '"')
		out = append(out, k...)
		out = append(out, '"', ':')
		if len(k) == len("message") && bytes.EqualFold(k, []byte("message")) && v[0] == '{' {
			if out, ok = slimMessage(out, v); !ok {
				plain = false
			}
			return
		}
		out = append(out, v...)
	})
	u.slim = out
	if !plain {
		return nil, false
	}
	if err != nil || jsonscan.Space(line, end) != len(line) {
		return nil, true
	}
	return append(out, '}'), true
}

// slimMessage appends the message object v with only message's fields,
// its content made null (a json.RawMessage takes any value alike).
func slimMessage(out, v []byte) ([]byte, bool) {
	out = append(out, '{')
	first, plain := true, true
	// v was checked whole by the caller's walk.
	jsonscan.Members(v, 0, func(k, mv []byte) {
		in, ok := keyIn(k, messageKeys)
		if !ok {
			plain = false
		}
		if !in || !plain {
			return
		}
		if !first {
			out = append(out, ',')
		}
		first = false
		out = append(out, '"')
		out = append(out, k...)
		out = append(out, '"', ':')
		if len(k) == len("content") && bytes.EqualFold(k, []byte("content")) {
			out = append(out, "null"...)
			return
		}
		out = append(out, mv...)
	})
	return append(out, '}'), plain
}

// totals sets s's totals to those of the complete lines of f in [0, to):
// what a full read (scan) totals, by the usage scanner, with its counts of
// unreadable lines. The rest of s (the row: where, when, what was said
// last) is left as the head and tail found it.
func (sr summaryReader) totals(s *summary, f io.ReaderAt, to int64) error {
	t := summary{}
	var u usageScanner
	n := 0
	res, err := sr.lines.ScanLines(io.NewSectionReader(f, 0, to), maxLine, func(line []byte) error {
		if n++; n%ctxEvery == 0 {
			if err := sr.ctx.Err(); err != nil {
				return err
			}
		}
		u.line(&t, line)
		return nil
	})
	if err != nil {
		return fmt.Errorf("total the transcript's usage: %w", err)
	}
	s.setTotals(&t)
	// The scan saw every line: its counts of the unreadable are the
	// file's, where the head and tail saw theirs.
	s.BadLines, s.LongLines = t.BadLines, res.Skipped
	s.Complete = res.Consumed == to
	return nil
}
