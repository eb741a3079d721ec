package web

import (
	"fmt"
	"html"
	"strconv"
	"strings"
)

// sgr is the colour state of the output so far.
type sgr struct {
	fg, bg                               string // a class ("f1") or a colour ("#ff8700")
	bold, dim, italic, underline, invert bool
}

func (s sgr) plain() bool { return s == sgr{} }

// open is the span that starts text in this state.
func (s sgr) open() string {
	var cls, style []string
	fg, bg := s.fg, s.bg
	if s.invert {
		fg, bg = bg, fg
		if fg == "" {
			fg = "f-bg"
		}
		if bg == "" {
			bg = "b-fg"
		}
	}
	add := func(v, prefix, prop string) {
		switch {
		case v == "":
		case strings.HasPrefix(v, "#"):
			style = append(style, prop+":"+v)
		case strings.HasPrefix(v, prefix+"-"):
			cls = append(cls, v)
		default:
			cls = append(cls, prefix+v)
		}
	}
	add(fg, "f", "color")
	add(bg, "b", "background-color")
	for _, f := range []struct {
		on   bool
		name string
	}{{s.bold, "bo"}, {s.dim, "dm"}, {s.italic, "it"}, {s.underline, "ul"}} {
		if f.on {
			cls = append(cls, f.name)
		}
	}
	out := "<span"
	if len(cls) > 0 {
		out += ` class="` + strings.Join(cls, " ") + `"`
	}
	if len(style) > 0 {
		out += ` style="` + strings.Join(style, ";") + `"`
	}
	return out + ">"
}

// ansiHTML renders a line of the log's colour view as HTML: its SGR
// sequences as spans (classes for the 16 colours, a style for the rest),
// every other escape dropped, the text escaped. The state carries from
// line to line, as on a terminal.
func ansiHTML(line string, st *sgr) string {
	var b strings.Builder
	inSpan := false
	if !st.plain() {
		b.WriteString(st.open())
		inSpan = true
	}
	text := func(s string) {
		if strings.ContainsFunc(s, control) {
			s = strings.Map(func(r rune) rune {
				if control(r) {
					return -1
				}
				return r
			}, s)
		}
		b.WriteString(html.EscapeString(s))
	}
	for len(line) > 0 {
		i := strings.IndexByte(line, 0x1b)
		if i < 0 {
			text(line)
			break
		}
		text(line[:i])
		line = line[i:]
		if len(line) >= 2 && line[1] == ']' {
			// An OSC (a title, a notification): dropped to its end, BEL or ST.
			rest := line[2:]
			end := strings.IndexAny(rest, "\a\x1b")
			if end < 0 {
				break
			}
			skip := 2 + end + 1
			if rest[end] == 0x1b && end+1 < len(rest) && rest[end+1] == '\\' {
				skip++
			}
			line = line[skip:]
			continue
		}
		if len(line) < 2 || line[1] != '[' {
			// Neither: drop the escape and the byte after it.
			line = line[min(2, len(line)):]
			continue
		}
		end := 2
		for end < len(line) && (line[end] < 0x40 || line[end] > 0x7e) {
			end++
		}
		if end == len(line) {
			break
		}
		params, final := line[2:end], line[end]
		line = line[end+1:]
		if final != 'm' {
			continue
		}
		st.apply(params)
		if inSpan {
			b.WriteString("</span>")
			inSpan = false
		}
		if !st.plain() {
			b.WriteString(st.open())
			inSpan = true
		}
	}
	if inSpan {
		b.WriteString("</span>")
	}
	return b.String()
}

// control is a character a page should not get: C0 controls but the tab
// and the line end (a chunk of the log may hold several lines).
func control(r rune) bool { return (r < 0x20 && r != '\t' && r != '\n') || r == 0x7f }

// apply takes one SGR sequence's parameters.
func (s *sgr) apply(params string) {
	if params == "" {
		*s = sgr{}
		return
	}
	ps := strings.FieldsFunc(params, func(r rune) bool { return r == ';' || r == ':' })
	n := func(i int) int {
		if i >= len(ps) {
			return -1
		}
		v, err := strconv.Atoi(ps[i])
		if err != nil {
			return -1
		}
		return v
	}
	for i := 0; i < len(ps); i++ {
		p := n(i)
		switch {
		case p == 0:
			*s = sgr{}
		case p == 1:
			s.bold = true
		case p == 2:
			s.dim = true
		case p == 3:
			s.italic = true
		case p == 4:
			s.underline = true
		case p == 7:
			s.invert = true
		case p == 22:
			s.bold, s.dim = false, false
		case p == 23:
			s.italic = false
		case p == 24:
			s.underline = false
		case p == 27:
			s.invert = false
		case p >= 30 && p <= 37:
			s.fg = strconv.Itoa(p - 30)
		case p >= 90 && p <= 97:
			s.fg = strconv.Itoa(p - 90 + 8)
		case p == 39:
			s.fg = ""
		case p >= 40 && p <= 47:
			s.bg = strconv.Itoa(p - 40)
		case p >= 100 && p <= 107:
			s.bg = strconv.Itoa(p - 100 + 8)
		case p == 49:
			s.bg = ""
		case p == 38 || p == 48:
			var c string
			switch n(i + 1) {
			case 5:
				c = color256(n(i + 2))
				i += 2
			case 2:
				r, g, bl := n(i+2), n(i+3), n(i+4)
				if r >= 0 && g >= 0 && bl >= 0 {
					c = fmt.Sprintf("#%02x%02x%02x", r&255, g&255, bl&255)
				}
				i += 4
			default:
				i = len(ps)
			}
			if p == 38 {
				s.fg = c
			} else {
				s.bg = c
			}
		}
	}
}

// color256 is xterm's 256-colour palette: the 16 as classes, the cube and
// the greys as colours.
func color256(v int) string {
	switch {
	case v < 0 || v > 255:
		return ""
	case v < 16:
		return strconv.Itoa(v)
	case v < 232:
		v -= 16
		level := func(x int) int {
			if x == 0 {
				return 0
			}
			return 55 + 40*x
		}
		return fmt.Sprintf("#%02x%02x%02x", level(v/36), level(v/6%6), level(v%6))
	default:
		g := 8 + 10*(v-232)
		return fmt.Sprintf("#%02x%02x%02x", g, g, g)
	}
}
