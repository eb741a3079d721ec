package text

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Ago is how long before now t was, in its largest whole unit (45s, 12m,
// 5h, 3d); "" for an unknown time.
func Ago(now, t time.Time) string {
	if t.IsZero() {
		return ""
	}
	d := max(0, now.Sub(t))
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}

// Tokens is "in/out" with k and M for thousands and millions ("?" for a
// side not known); "" when neither is.
func Tokens(in, out *int64) string {
	if in == nil && out == nil {
		return ""
	}
	n := func(p *int64) string {
		if p == nil {
			return "?"
		}
		v := *p
		switch {
		case v >= 1_000_000:
			return fmt.Sprintf("%.1fM", float64(v)/1e6)
		case v >= 1000:
			return fmt.Sprintf("%.1fk", float64(v)/1e3)
		}
		return fmt.Sprint(v)
	}
	return n(in) + "/" + n(out)
}

// Cost is a dollar amount to the cent; "" when not known.
func Cost(c *float64) string {
	if c == nil {
		return ""
	}
	return fmt.Sprintf("$%.2f", *c)
}

// Bytes names a size the way people read a bound: 64 KiB, 256 MiB.
func Bytes(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// Count is n with its thousands separated by commas: 7,000.
func Count(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
