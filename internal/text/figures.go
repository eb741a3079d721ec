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
	// strconv rather than fmt: a table of thousands of rows has two of
	// these, a count and a cost in each.
	d := max(0, now.Sub(t))
	switch {
	case d < time.Minute:
		return strconv.Itoa(int(d.Seconds())) + "s"
	case d < time.Hour:
		return strconv.Itoa(int(d.Minutes())) + "m"
	case d < 48*time.Hour:
		return strconv.Itoa(int(d.Hours())) + "h"
	}
	return strconv.Itoa(int(d.Hours()/24)) + "d"
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
			return strconv.FormatFloat(float64(v)/1e6, 'f', 1, 64) + "M"
		case v >= 1000:
			return strconv.FormatFloat(float64(v)/1e3, 'f', 1, 64) + "k"
		}
		return strconv.FormatInt(v, 10)
	}
	return n(in) + "/" + n(out)
}

// Pending stands for a figure still being counted (a session's totals
// while the service counts them in the background): neither a zero nor
// unknown.
const Pending = "…"

// Cost is a dollar amount to the cent; "" when not known.
func Cost(c *float64) string {
	if c == nil {
		return ""
	}
	return "$" + strconv.FormatFloat(*c, 'f', 2, 64)
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

// ParseBytes reads a size as people write a bound: a number of bytes, or
// one with a binary unit, K, M, G or T (also KB, KiB, k...): "50M" is 50
// MiB, as docker reads it.
func ParseBytes(s string) (int64, error) {
	t := strings.TrimSpace(s)
	num := strings.TrimRightFunc(t, func(r rune) bool { return r < '0' || r > '9' && r != '.' })
	unit := strings.ToUpper(strings.TrimSpace(t[len(num):]))
	unit = strings.TrimSuffix(strings.TrimSuffix(unit, "IB"), "B")
	shift := map[string]uint{"": 0, "K": 10, "M": 20, "G": 30, "T": 40}
	sh, ok := shift[unit]
	n, err := strconv.ParseFloat(num, 64)
	if !ok || err != nil || n < 0 || num == "" {
		return 0, fmt.Errorf("size %q: want a number of bytes, or one with K, M, G or T (such as 512M)", s)
	}
	v := n * float64(int64(1)<<sh)
	if v >= 1<<62 {
		return 0, fmt.Errorf("size %q is too large", s)
	}
	return int64(v), nil
}

// Size is a measured amount of memory or I/O, to three figures in its
// largest binary unit (812KiB, 104.5MiB, 1.21GiB); "" when not known.
func Size(p *uint64) string {
	if p == nil {
		return ""
	}
	n := float64(*p)
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	i := 0
	for n >= 1024 && i < len(units)-1 {
		n /= 1024
		i++
	}
	switch {
	case i == 0:
		return fmt.Sprintf("%dB", *p)
	case n >= 100:
		return fmt.Sprintf("%.0f%s", n, units[i])
	case n >= 10:
		return fmt.Sprintf("%.1f%s", n, units[i])
	}
	return fmt.Sprintf("%.2f%s", n, units[i])
}

// Percent is a CPU percent to a tenth (of one core: 200% is two busy);
// "" when not known.
func Percent(p *float64) string {
	if p == nil {
		return ""
	}
	return fmt.Sprintf("%.1f%%", *p)
}

// Seconds is an amount of processor time: 12.3s, 4m05s, 2h03m; "" when
// not known.
func Seconds(p *float64) string {
	if p == nil {
		return ""
	}
	d := time.Duration(*p * float64(time.Second))
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Seconds())
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
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
