package api

import (
	"encoding/json"
	"math"
	"strconv"
	"time"
	"unicode/utf8"
)

// AppendJSON appends s as encoding/json's Marshal writes it, byte for
// byte, at several times its speed: a list's answer is thousands of
// sessions, and encoding them by reflection was most of what the service
// spent on a warm list. The common fields are written here; the rare
// nested ones (waiting, resources, hooks, ...) and any text or number
// with something to escape or a second notation go through
// encoding/json. TestAppendJSON holds every field to Marshal.
func (s *Session) AppendJSON(b []byte) ([]byte, error) {
	w := jsonWriter{b: b}
	w.b = append(w.b, `{"id":`...)
	w.str(s.ID)
	w.optStr("handle", s.Handle)
	w.optStr("host", s.Host)
	w.key("adapter")
	w.str(s.Adapter)
	w.key("origin")
	w.str(s.Origin)
	w.key("status")
	w.str(string(s.Status))
	w.optStr("name", s.Name)
	w.optStr("group", s.Group)
	w.optInt("pid", int64(s.PID))
	w.optInt("pgid", int64(s.PGID))
	w.optTime("start_time", s.StartTime)
	if !s.CreatedAt.IsZero() {
		w.key("created_at")
		w.time(s.CreatedAt)
	}
	w.optTime("ended_at", s.EndedAt)
	if s.ExitCode != nil {
		w.key("exit_code")
		w.b = strconv.AppendInt(w.b, int64(*s.ExitCode), 10)
	}
	w.optStr("signal", s.Signal)
	w.optStr("stopped_by", s.StoppedBy)
	w.optStr("cwd", s.Cwd)
	w.optStrs("command", s.Command)
	w.optStr("native_id", s.NativeID)
	w.optStr("agent", s.Agent)
	w.optStr("model", s.Model)
	w.ptrInt("tokens_in", s.TokensIn)
	w.ptrInt("tokens_out", s.TokensOut)
	if s.CostUSD != nil {
		w.key("cost_usd")
		w.float(*s.CostUSD)
	}
	w.optBool("totals_pending", s.TotalsPending)
	w.optStr("resume_of", s.ResumeOf)
	w.optStr("on_limit", s.OnLimit)
	if s.Baseline != nil {
		w.other("baseline", s.Baseline)
	}
	if s.NativeTotal != nil {
		w.other("native_total", s.NativeTotal)
	}
	w.optTime("last_activity", s.LastActivity)
	w.optStr("prompt", s.Prompt)
	w.optStr("activity", s.Activity)
	w.optStr("activity_source", s.ActivitySource)
	w.optTime("activity_since", s.ActivitySince)
	w.optStr("waiting_for", s.WaitingFor)
	if s.Waiting != nil {
		w.other("waiting", s.Waiting)
	}
	if len(s.LimitWindows) > 0 {
		w.other("limit_windows", s.LimitWindows)
	}
	w.optStr("title", s.Title)
	if s.Resources != nil {
		w.other("resources", s.Resources)
	}
	if len(s.Labels) > 0 {
		w.other("labels", s.Labels)
	}
	w.optStrs("env_set", s.EnvSet)
	w.optStr("restart_of", s.RestartOf)
	w.optStrs("launched_from", s.LaunchedFrom)
	if len(s.Hooks) > 0 {
		w.other("hooks", s.Hooks)
	}
	if s.Limits != nil {
		w.other("limits", s.Limits)
	}
	w.optBool("oom", s.OOM)
	if s.StoppedProcesses != nil {
		w.key("stopped_processes")
		w.b = strconv.AppendInt(w.b, int64(*s.StoppedProcesses), 10)
	}
	if s.Queue != nil {
		w.other("queue", s.Queue)
	}
	w.optStrs("warnings", s.Warnings)
	w.b = append(w.b, '}')
	if w.err != nil {
		return b, w.err
	}
	return w.b, nil
}

// jsonWriter appends the members of an object after its first; err is
// the first failure (a time or number JSON has no notation for).
type jsonWriter struct {
	b   []byte
	err error
}

func (w *jsonWriter) key(k string) {
	w.b = append(w.b, ',', '"')
	w.b = append(w.b, k...)
	w.b = append(w.b, '"', ':')
}

func (w *jsonWriter) optStr(k, v string) {
	if v != "" {
		w.key(k)
		w.str(v)
	}
}

func (w *jsonWriter) optInt(k string, v int64) {
	if v != 0 {
		w.key(k)
		w.b = strconv.AppendInt(w.b, v, 10)
	}
}

func (w *jsonWriter) ptrInt(k string, v *int64) {
	if v != nil {
		w.key(k)
		w.b = strconv.AppendInt(w.b, *v, 10)
	}
}

func (w *jsonWriter) optBool(k string, v bool) {
	if v {
		w.key(k)
		w.b = append(w.b, "true"...)
	}
}

func (w *jsonWriter) optTime(k string, t *time.Time) {
	if t != nil {
		w.key(k)
		w.time(*t)
	}
}

func (w *jsonWriter) optStrs(k string, v []string) {
	if len(v) == 0 {
		return
	}
	w.key(k)
	w.b = append(w.b, '[')
	for i, s := range v {
		if i > 0 {
			w.b = append(w.b, ',')
		}
		w.str(s)
	}
	w.b = append(w.b, ']')
}

// time writes t as time.Time's MarshalJSON does (RFC 3339 with the
// nanoseconds it has), failing where it fails.
func (w *jsonWriter) time(t time.Time) {
	w.b = append(w.b, '"')
	b, err := t.AppendText(w.b)
	if err != nil {
		w.fail(err)
		return
	}
	w.b = append(b, '"')
}

// float writes what encoding/json writes for a float64 in the range it
// writes without an exponent; the rest is its own.
func (w *jsonWriter) float(f float64) {
	if a := math.Abs(f); a == 0 || a >= 1e-6 && a < 1e21 {
		w.b = strconv.AppendFloat(w.b, f, 'f', -1, 64)
		return
	}
	w.marshal(f)
}

// str writes a string as encoding/json does: as it is when it has
// nothing to escape (printable ASCII but for the quote, the backslash and
// the three HTML characters, and UTF-8 but for U+2028 and U+2029);
// otherwise through encoding/json.
func (w *jsonWriter) str(s string) {
	i := plainPrefix(s)
	for i < len(s) {
		c := s[i]
		if c < utf8.RuneSelf {
			if c < 0x20 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
				w.marshal(s)
				return
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 || r == '\u2028' || r == '\u2029' {
			w.marshal(s)
			return
		}
		i += n
	}
	w.b = append(w.b, '"')
	w.b = append(w.b, s...)
	w.b = append(w.b, '"')
}

func (w *jsonWriter) other(k string, v any) {
	w.key(k)
	w.marshal(v)
}

func (w *jsonWriter) marshal(v any) {
	out, err := json.Marshal(v)
	if err != nil {
		w.fail(err)
		return
	}
	w.b = append(w.b, out...)
}

func (w *jsonWriter) fail(err error) {
	if w.err == nil {
		w.err = err
	}
}

// plainPrefix is how many of s's first bytes, 8 at a time, are printable
// ASCII that JSON writes as is (it may stop short of the first that is
// not): a list's text is mostly that, and this is most of its writing.
func plainPrefix(s string) int {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	zero := func(v uint64) uint64 { return (v - ones) &^ v & highs }
	i := 0
	for ; i+8 <= len(s); i += 8 {
		x := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
			uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
		// Not ASCII, a control (below 0x20), or one of " \ < > &.
		if x&highs|(x-0x20*ones)&^x&highs|zero(x^'"'*ones)|zero(x^'\\'*ones)|zero(x^'<'*ones)|zero(x^'>'*ones)|zero(x^'&'*ones) != 0 {
			break
		}
	}
	return i
}
