package api

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"
)

// sample fills v (settable) with a value that is not zero: every field of
// a struct, two elements of a slice or map.
func sample(v reflect.Value, r *rand.Rand) {
	switch v.Kind() {
	case reflect.String:
		v.SetString(randomText(r))
	case reflect.Int, reflect.Int64, reflect.Int32:
		v.SetInt(r.Int64N(2_000_000) - 1_000_000 | 1)
	case reflect.Uint64, reflect.Uint32, reflect.Uint16, reflect.Uint:
		v.SetUint(r.Uint64N(1_000_000) + 1)
	case reflect.Float64:
		v.SetFloat(randomFloat(r))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		sample(p.Elem(), r)
		v.Set(p)
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 2, 2)
		for i := range 2 {
			sample(s.Index(i), r)
		}
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		for range 2 {
			k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
			sample(k, r)
			sample(e, r)
			m.SetMapIndex(k, e)
		}
		v.Set(m)
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			v.Set(reflect.ValueOf(randomTime(r)))
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				sample(v.Field(i), r)
			}
		}
	default:
		panic("sample: no value for " + v.Type().String())
	}
}

var texts = []string{"", "a", "plain text", "/home/dev/src/project-1", "claude-sonnet-4-5", "<b>&amp;</b>", `quote " and \ backslash`,
	"tab\there\nnew line\r\x00\x1f\x7f", "é ü 日本語 🙂", "line\u2028sep\u2029", "bad \xff\xfe utf-8", "\u00a0nbsp",
	"a plain prefix of some length, then <", "0123456789abcdef\"", "01234567\\", "0123456\x1f89", "abcdefgh&", "abcdefgh>", "abcdefgh\x7fijklmnop", "abcdefghé", "ok"}

func randomText(r *rand.Rand) string {
	if r.IntN(3) == 0 {
		var b []byte
		for range r.IntN(12) {
			b = append(b, byte(r.IntN(256)))
		}
		return string(b)
	}
	return texts[r.IntN(len(texts)-1)+1]
}

func randomFloat(r *rand.Rand) float64 {
	fs := []float64{0, 0.1, 0.29437199999999997, 1, 12.5, 1e-6, 9.99e-7, 1e-9, 1e20, 1e21, 3e22, -0.5, math.SmallestNonzeroFloat64, math.MaxFloat64}
	if r.IntN(2) == 0 {
		return fs[r.IntN(len(fs))]
	}
	return r.NormFloat64() * math.Pow(10, float64(r.IntN(40)-20))
}

func randomTime(r *rand.Rand) time.Time {
	t := time.Unix(r.Int64N(4e9), r.Int64N(1e9)*int64(r.IntN(2)))
	switch r.IntN(3) {
	case 0:
		return t.UTC()
	case 1:
		return t.In(time.FixedZone("x", (r.IntN(48)-24)*1800))
	}
	return t.Round(time.Millisecond).UTC()
}

// TestAppendJSON: AppendJSON writes what json.Marshal writes, with each
// field of a session set alone (a field added to Session and not to
// AppendJSON fails here), with all of them, with none, and over random
// sessions.
func TestAppendJSON(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	check := func(t *testing.T, s *Session) {
		t.Helper()
		want, wantErr := json.Marshal(s)
		got, err := s.AppendJSON([]byte("prefix"))
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("AppendJSON error %v, Marshal's %v", err, wantErr)
		}
		if err != nil {
			if string(got) != "prefix" {
				t.Errorf("a failed AppendJSON appended %q", got)
			}
			return
		}
		if !bytes.Equal(got, append([]byte("prefix"), want...)) {
			t.Fatalf("AppendJSON:\n%s\nMarshal:\n%s", got[len("prefix"):], want)
		}
	}
	typ := reflect.TypeFor[Session]()
	for i := range typ.NumField() {
		f := typ.Field(i)
		t.Run(f.Name, func(t *testing.T) {
			for range 50 {
				var s Session
				sample(reflect.ValueOf(&s).Elem().Field(i), r)
				check(t, &s)
			}
			// The zero of a pointer's or slice's element is not omitted.
			var s Session
			v := reflect.ValueOf(&s).Elem().Field(i)
			switch v.Kind() {
			case reflect.Pointer:
				v.Set(reflect.New(v.Type().Elem()))
			case reflect.Slice:
				v.Set(reflect.MakeSlice(v.Type(), 1, 1))
			case reflect.Map:
				v.Set(reflect.MakeMap(v.Type()))
			}
			check(t, &s)
		})
	}
	t.Run("none", func(t *testing.T) { check(t, &Session{}) })
	t.Run("random", func(t *testing.T) {
		for range 2000 {
			var s Session
			v := reflect.ValueOf(&s).Elem()
			for i := range v.NumField() {
				if r.IntN(3) == 0 {
					sample(v.Field(i), r)
				}
			}
			check(t, &s)
		}
	})
	t.Run("times and numbers JSON cannot write", func(t *testing.T) {
		late := time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
		nan := math.NaN()
		inf := math.Inf(1)
		for _, s := range []Session{{CreatedAt: late}, {LastActivity: &late}, {CostUSD: &nan}, {CostUSD: &inf}} {
			check(t, &s)
		}
	})
}

// FuzzAppendJSON holds AppendJSON to json.Marshal over any text, numbers
// and times.
func FuzzAppendJSON(f *testing.F) {
	f.Add("01a0e633-3854", "the a server read handler <parse>", "/home/dev/src", int64(33516), 0.107562, int64(1759032511572))
	f.Add("x\u2028", "é\xff", "\x00\"\\", int64(-1), 1e-7, int64(-62135596800000))
	f.Fuzz(func(t *testing.T, id, prompt, cwd string, n int64, cost float64, ms int64) {
		at := time.UnixMilli(ms)
		s := Session{ID: id, Prompt: prompt, Cwd: cwd, Name: prompt, Command: []string{cwd, id}, TokensIn: &n, CostUSD: &cost, CreatedAt: at, LastActivity: &at,
			Labels: map[string]string{id: prompt}, Warnings: []string{prompt}}
		want, wantErr := json.Marshal(&s)
		got, err := s.AppendJSON(nil)
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("AppendJSON error %v, Marshal's %v", err, wantErr)
		}
		if err == nil && !bytes.Equal(got, want) {
			t.Fatalf("AppendJSON:\n%s\nMarshal:\n%s", got, want)
		}
	})
}

// BenchmarkAppendJSON is a list's session encoded by AppendJSON and by
// encoding/json.
func BenchmarkAppendJSON(b *testing.B) {
	created, last := time.Date(2026, 9, 28, 4, 8, 31, 572e6, time.UTC), time.Date(2026, 9, 28, 4, 35, 30, 147e6, time.UTC)
	in, out, cost := int64(33516), int64(2355), 0.107562
	s := Session{ID: "01a0e633-3854-79d1-885b-efdb7b54a9a9", Handle: "01a0e633-3", Adapter: "pi", Origin: OriginDiscovered, Status: StatusEnded,
		CreatedAt: created, Cwd: "/home/dev/src/project-026", NativeID: "01a0e633-3854-79d1-885b-efdb7b54a9a9", Model: "google/gemini-2.5-pro",
		TokensIn: &in, TokensOut: &out, CostUSD: &cost, LastActivity: &last, Prompt: "the a server read handler parse return index cache error parse add struct signal"}
	b.Run("AppendJSON", func(b *testing.B) {
		var buf []byte
		for b.Loop() {
			buf, _ = s.AppendJSON(buf[:0])
		}
	})
	b.Run("encoding/json", func(b *testing.B) {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		for b.Loop() {
			buf.Reset()
			enc.Encode(&s)
		}
	})
}

// TestPlainPrefix: the 8-byte pass never passes a byte JSON writes
// otherwise, and passes plain text whole, 8 bytes at a time.
func TestPlainPrefix(t *testing.T) {
	t.Parallel()
	plain := func(c byte) bool {
		return c >= 0x20 && c < 0x80 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	for c := range 256 {
		for at := range 20 {
			b := []byte("abcdefghijklmnopqrstuvwx")[:20]
			b[at] = byte(c)
			n := plainPrefix(string(b))
			if !plain(byte(c)) && n > at {
				t.Errorf("plainPrefix(%q) = %d, past byte %#x at %d", b, n, c, at)
			}
			if plain(byte(c)) && n != 16 {
				t.Errorf("plainPrefix(%q) = %d, want 16", b, n)
			}
		}
	}
}
