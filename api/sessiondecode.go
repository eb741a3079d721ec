package api

import (
	"encoding/json"
	"strconv"
	"time"
	"unicode/utf16"
	"unicode/utf8"
)

// DecodeJSON sets s, which must be zero, to the session data holds, as
// json.Unmarshal(data, s) would, value for value and error for error, at
// several times its speed: a large list's answer is thousands of sessions,
// and decoding them by reflection was most of what `list` spent. Objects
// as AppendJSON writes them are read here; anything else (a key it does
// not know, a null, invalid JSON, a string that is not UTF-8) goes to
// json.Unmarshal whole. TestDecodeJSON and FuzzDecodeJSON hold it to
// json.Unmarshal.
func (s *Session) DecodeJSON(data []byte) error {
	p := sessionParser{d: data, ds: string(data)}
	if p.session(s) {
		return nil
	}
	*s = Session{}
	return json.Unmarshal(data, s)
}

// sessionParser reads one session's object from d (ds is d as a string,
// which the session's strings are cut from: one copy for all of them).
// Each method reports whether it read what it reads; on false the caller
// gives up.
type sessionParser struct {
	d  []byte
	ds string
	i  int
}

func (p *sessionParser) space() {
	for p.i < len(p.d) {
		switch p.d[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// byte consumes c, after white space.
func (p *sessionParser) byte(c byte) bool {
	p.space()
	if p.i < len(p.d) && p.d[p.i] == c {
		p.i++
		return true
	}
	return false
}

func (p *sessionParser) session(s *Session) bool {
	if !p.byte('{') {
		return false
	}
	if p.byte('}') {
		return p.end()
	}
	for {
		p.space()
		k, ok := p.string()
		if !ok || !p.byte(':') {
			return false
		}
		p.space()
		if !p.member(s, k) {
			return false
		}
		if p.byte(',') {
			continue
		}
		if p.byte('}') {
			return p.end()
		}
		return false
	}
}

// end: nothing but white space may follow the object.
func (p *sessionParser) end() bool {
	p.space()
	return p.i == len(p.d)
}

// member reads the value of key k into its field of s.
func (p *sessionParser) member(s *Session, k string) bool {
	switch k {
	case "id":
		return p.str(&s.ID)
	case "handle":
		return p.str(&s.Handle)
	case "host":
		return p.str(&s.Host)
	case "adapter":
		return p.str(&s.Adapter)
	case "origin":
		return p.str(&s.Origin)
	case "status":
		var v string
		ok := p.str(&v)
		s.Status = Status(v)
		return ok
	case "name":
		return p.str(&s.Name)
	case "group":
		return p.str(&s.Group)
	case "pid":
		return p.int(&s.PID)
	case "pgid":
		return p.int(&s.PGID)
	case "start_time":
		return p.timePtr(&s.StartTime)
	case "created_at":
		return p.time(&s.CreatedAt)
	case "ended_at":
		return p.timePtr(&s.EndedAt)
	case "exit_code":
		return p.intPtr(&s.ExitCode)
	case "signal":
		return p.str(&s.Signal)
	case "stopped_by":
		return p.str(&s.StoppedBy)
	case "cwd":
		return p.str(&s.Cwd)
	case "command":
		return p.strs(&s.Command)
	case "native_id":
		return p.str(&s.NativeID)
	case "agent":
		return p.str(&s.Agent)
	case "model":
		return p.str(&s.Model)
	case "tokens_in":
		return p.int64Ptr(&s.TokensIn)
	case "tokens_out":
		return p.int64Ptr(&s.TokensOut)
	case "cost_usd":
		return p.floatPtr(&s.CostUSD)
	case "totals_pending":
		return p.bool(&s.TotalsPending)
	case "resume_of":
		return p.str(&s.ResumeOf)
	case "on_limit":
		return p.str(&s.OnLimit)
	case "baseline":
		return p.other(&s.Baseline)
	case "native_total":
		return p.other(&s.NativeTotal)
	case "last_activity":
		return p.timePtr(&s.LastActivity)
	case "prompt":
		return p.str(&s.Prompt)
	case "activity":
		return p.str(&s.Activity)
	case "activity_source":
		return p.str(&s.ActivitySource)
	case "activity_since":
		return p.timePtr(&s.ActivitySince)
	case "waiting_for":
		return p.str(&s.WaitingFor)
	case "waiting":
		return p.other(&s.Waiting)
	case "limit_windows":
		return p.other(&s.LimitWindows)
	case "title":
		return p.str(&s.Title)
	case "resources":
		return p.other(&s.Resources)
	case "labels":
		return p.other(&s.Labels)
	case "env_set":
		return p.strs(&s.EnvSet)
	case "restart_of":
		return p.str(&s.RestartOf)
	case "launched_from":
		return p.strs(&s.LaunchedFrom)
	case "hooks":
		return p.other(&s.Hooks)
	case "limits":
		return p.other(&s.Limits)
	case "oom":
		return p.bool(&s.OOM)
	case "stopped_processes":
		return p.intPtr(&s.StoppedProcesses)
	case "queue":
		return p.other(&s.Queue)
	case "warnings":
		return p.strs(&s.Warnings)
	}
	return false // a key json.Unmarshal matches otherwise, or ignores
}

// rawString reads a string without escapes or control characters, in
// valid UTF-8: what it holds is its text.
func (p *sessionParser) rawString() (string, bool) {
	if p.i >= len(p.d) || p.d[p.i] != '"' {
		return "", false
	}
	from := p.i + 1
	ascii := true
	for j := from; j < len(p.d); j++ {
		switch c := p.d[j]; {
		case c == '"':
			if !ascii && !utf8.Valid(p.d[from:j]) {
				return "", false // json.Unmarshal replaces what is not UTF-8
			}
			p.i = j + 1
			return p.ds[from:j], true
		case c == '\\' || c < 0x20:
			return "", false
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return "", false
}

// string reads a string as json.Unmarshal does: most have no escapes,
// and are cut from ds as they are; one with escapes is unquoted.
func (p *sessionParser) string() (string, bool) {
	if s, ok := p.rawString(); ok {
		return s, true
	}
	return p.unquote()
}

// unquote reads a string with escapes as json.Unmarshal decodes it
// (a lone surrogate is U+FFFD); a control character or bytes that are
// not UTF-8 are left to json.Unmarshal.
func (p *sessionParser) unquote() (string, bool) {
	d := p.d
	if p.i >= len(d) || d[p.i] != '"' {
		return "", false
	}
	var b []byte
	for j := p.i + 1; j < len(d); {
		c := d[j]
		switch {
		case c == '"':
			if !utf8.Valid(b) {
				return "", false
			}
			p.i = j + 1
			return string(b), true
		case c < 0x20:
			return "", false
		case c != '\\':
			b = append(b, c)
			j++
			continue
		}
		if j+1 >= len(d) {
			return "", false
		}
		switch e := d[j+1]; e {
		case '"', '\\', '/':
			b = append(b, e)
		case 'b':
			b = append(b, '\b')
		case 'f':
			b = append(b, '\f')
		case 'n':
			b = append(b, '\n')
		case 'r':
			b = append(b, '\r')
		case 't':
			b = append(b, '\t')
		case 'u':
			r, ok := escapedRune(d[j:])
			if !ok {
				return "", false
			}
			j += 6
			if utf16.IsSurrogate(r) {
				if r2, ok := escapedRune(d[j:]); ok {
					if pair := utf16.DecodeRune(r, r2); pair != utf8.RuneError {
						b = utf8.AppendRune(b, pair)
						j += 6
						continue
					}
				}
				r = utf8.RuneError
			}
			b = utf8.AppendRune(b, r)
			continue
		default:
			return "", false
		}
		j += 2
	}
	return "", false
}

// escapedRune reads the \uXXXX escape that b begins with.
func escapedRune(b []byte) (rune, bool) {
	if len(b) < 6 || b[0] != '\\' || b[1] != 'u' {
		return 0, false
	}
	var r rune
	for _, c := range b[2:6] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

func (p *sessionParser) str(v *string) bool {
	s, ok := p.string()
	*v = s
	return ok
}

func (p *sessionParser) strs(v *[]string) bool {
	if !p.byte('[') {
		return false
	}
	out := []string{}
	if p.byte(']') {
		*v = out
		return true
	}
	for {
		p.space()
		s, ok := p.string()
		if !ok {
			return false
		}
		out = append(out, s)
		if p.byte(',') {
			continue
		}
		if p.byte(']') {
			*v = out
			return true
		}
		return false
	}
}

func (p *sessionParser) bool(v *bool) bool {
	switch {
	case hasPrefix(p.d[p.i:], "true"):
		*v, p.i = true, p.i+4
	case hasPrefix(p.d[p.i:], "false"):
		*v, p.i = false, p.i+5
	default:
		return false
	}
	return true
}

func hasPrefix(b []byte, s string) bool { return len(b) >= len(s) && string(b[:len(s)]) == s }

// number reads a JSON number, integral when integer says so.
func (p *sessionParser) number(integer bool) (string, bool) {
	from, d := p.i, p.d
	i := p.i
	if i < len(d) && d[i] == '-' {
		i++
	}
	digits := func() int {
		n := 0
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
			n++
		}
		return n
	}
	switch {
	case i < len(d) && d[i] == '0':
		i++
	case digits() == 0:
		return "", false
	}
	if !integer {
		if i < len(d) && d[i] == '.' {
			i++
			if digits() == 0 {
				return "", false
			}
		}
		if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
			i++
			if i < len(d) && (d[i] == '+' || d[i] == '-') {
				i++
			}
			if digits() == 0 {
				return "", false
			}
		}
	}
	p.i = i
	return p.ds[from:i], true
}

func (p *sessionParser) int64(v *int64) bool {
	s, ok := p.number(true)
	if !ok {
		return false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	*v = n
	return err == nil
}

func (p *sessionParser) int(v *int) bool {
	var n int64
	ok := p.int64(&n)
	*v = int(n)
	return ok && int64(*v) == n
}

func (p *sessionParser) int64Ptr(v **int64) bool {
	*v = new(int64)
	return p.int64(*v)
}

func (p *sessionParser) intPtr(v **int) bool {
	*v = new(int)
	return p.int(*v)
}

func (p *sessionParser) floatPtr(v **float64) bool {
	s, ok := p.number(false)
	if !ok {
		return false
	}
	f, err := strconv.ParseFloat(s, 64)
	*v = &f
	return err == nil
}

// time reads a time as json.Unmarshal does: by time.Time's UnmarshalJSON.
func (p *sessionParser) time(v *time.Time) bool {
	from := p.i
	if _, ok := p.rawString(); !ok {
		return false
	}
	return v.UnmarshalJSON(p.d[from:p.i]) == nil
}

func (p *sessionParser) timePtr(v **time.Time) bool {
	*v = new(time.Time)
	return p.time(*v)
}

// other reads a value this parser does not take apart (an object, an
// array of objects) by json.Unmarshal into v, as it would be within the
// session.
func (p *sessionParser) other(v any) bool {
	if p.i < len(p.d) && p.d[p.i] == 'n' {
		return false // null: json.Unmarshal's, within the session
	}
	from := p.i
	if !p.skip() {
		return false
	}
	return json.Unmarshal(p.d[from:p.i], v) == nil
}

// skip passes over one value: its strings and its nesting only (the value
// is checked by what decodes it).
func (p *sessionParser) skip() bool {
	depth := 0
	for p.i < len(p.d) {
		switch c := p.d[p.i]; c {
		case '"':
			p.i++
			for p.i < len(p.d) && p.d[p.i] != '"' {
				if p.d[p.i] == '\\' {
					p.i++
				}
				p.i++
			}
			if p.i >= len(p.d) {
				return false
			}
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return true
			}
			depth--
		case ',':
			if depth == 0 {
				return true
			}
		}
		p.i++
		if depth == 0 {
			return true
		}
	}
	return depth == 0
}
