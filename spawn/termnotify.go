package spawn

import (
	"bytes"
	"encoding/base64"
	"strings"
	"unicode/utf8"
)

// Terminal notification kinds, as the monitor reports them.
const (
	NotifyOSC9   = "osc9"   // ESC ] 9 ; text BEL (iTerm2, and many terminals since)
	NotifyOSC777 = "osc777" // ESC ] 777 ; notify ; title ; body BEL (rxvt, foot, Ghostty)
	NotifyOSC99  = "osc99"  // ESC ] 99 ; metadata ; payload ST (kitty)
	NotifyBell   = "bel"    // a BEL outside any sequence
	termTitle    = "title"  // ESC ] 0 ; title BEL or ESC ] 2 ; title BEL
)

// maxOSC bounds the payload of one OSC sequence the scanner keeps; the
// rest of a longer one is skipped (an image sent inline, say).
const maxOSC = 4096

// termEvent is one thing the scanner found in the output.
type termEvent struct {
	Kind string
	Text string
}

// scanState is where the scanner is in the escape-sequence grammar.
type scanState uint8

const (
	stGround scanState = iota
	stEsc              // after ESC
	stCSI              // ESC [ ... up to a final byte
	stOSC              // ESC ] ... up to BEL or ST
	stOSCEsc           // ESC inside an OSC: ST (ESC \) ends it
	stStr              // DCS, SOS, PM, APC: skipped up to ST (or BEL)
	stStrEsc           // ESC inside such a string
)

// termScanner finds terminal notifications and window titles in a pty's
// output. It keeps its state between calls, so a sequence split across
// reads is found whole. It never fails: bytes it does not understand are
// passed over.
type termScanner struct {
	state    scanState
	osc      []byte
	overflow bool
}

// feed scans b and calls emit for each notification or title it finishes.
// It reports whether b carried printable text outside escape sequences
// (output a person would see).
func (s *termScanner) feed(b []byte, emit func(termEvent)) (printed bool) {
	for i := 0; i < len(b); i++ {
		if s.state == stGround {
			// Plain text is most of the output: skip to the next ESC or
			// BEL with the library's vectorised search, not byte by byte.
			j := nextControl(b[i:])
			printed = printed || hasPrintable(b[i:i+j])
			if i += j; i == len(b) {
				break
			}
		}
		c := b[i]
		switch s.state {
		case stGround:
			switch {
			case c == 0x1b:
				s.state = stEsc
			case c == 0x07:
				emit(termEvent{Kind: NotifyBell})
			case c >= 0x20 && c != 0x7f:
				printed = true
			}
		case stEsc:
			switch c {
			case '[':
				s.state = stCSI
			case ']':
				s.state, s.osc, s.overflow = stOSC, s.osc[:0], false
			case 'P', 'X', '^', '_':
				s.state = stStr
			case 0x1b:
				// ESC ESC: the second starts afresh.
			default:
				s.state = stGround
			}
		case stCSI:
			if c >= 0x40 && c <= 0x7e {
				s.state = stGround
			} else if c == 0x1b {
				s.state = stEsc
			}
		case stOSC:
			switch c {
			case 0x07:
				s.endOSC(emit)
			case 0x1b:
				s.state = stOSCEsc
			default:
				if len(s.osc) < maxOSC {
					s.osc = append(s.osc, c)
				} else {
					s.overflow = true
				}
			}
		case stOSCEsc:
			if c == '\\' {
				s.endOSC(emit)
				continue
			}
			// Not a terminator: the OSC was cut short; this ESC starts
			// something new.
			s.state, s.osc = stEsc, s.osc[:0]
			if c == ']' {
				s.state, s.overflow = stOSC, false
			} else if c == '[' {
				s.state = stCSI
			} else {
				s.state = stGround
			}
		case stStr:
			switch c {
			case 0x1b:
				s.state = stStrEsc
			case 0x07:
				s.state = stGround
			}
		case stStrEsc:
			if c == '\\' {
				s.state = stGround
			} else {
				s.state = stStr
			}
		}
	}
	return printed
}

// nextControl is the index of the first ESC or BEL in b, or len(b).
func nextControl(b []byte) int {
	n := len(b)
	if i := bytes.IndexByte(b, 0x1b); i >= 0 {
		n = i
	}
	if i := bytes.IndexByte(b[:n], 0x07); i >= 0 {
		n = i
	}
	return n
}

// hasPrintable reports whether b holds a byte a terminal would show.
func hasPrintable(b []byte) bool {
	for _, c := range b {
		if c >= 0x20 && c != 0x7f {
			return true
		}
	}
	return false
}

func (s *termScanner) endOSC(emit func(termEvent)) {
	s.state = stGround
	if s.overflow {
		s.osc = s.osc[:0]
		return
	}
	if ev, ok := parseOSC(s.osc); ok {
		emit(ev)
	}
	s.osc = s.osc[:0]
}

// parseOSC reads one OSC payload (what lies between "ESC ]" and its
// terminator).
func parseOSC(p []byte) (termEvent, bool) {
	num, rest, ok := bytes.Cut(p, []byte(";"))
	if !ok {
		return termEvent{}, false
	}
	switch string(num) {
	case "0", "2":
		return termEvent{Kind: termTitle, Text: clean(rest)}, true
	case "9":
		// ConEmu and Windows Terminal use OSC 9 ; N ; ... for progress
		// bars and other commands: not notifications.
		if conEmuCommand(rest) {
			return termEvent{}, false
		}
		return termEvent{Kind: NotifyOSC9, Text: clean(rest)}, true
	case "777":
		cmd, args, _ := bytes.Cut(rest, []byte(";"))
		if string(cmd) != "notify" {
			return termEvent{}, false
		}
		title, body, _ := bytes.Cut(args, []byte(";"))
		text := clean(title)
		if b := clean(body); b != "" {
			if text != "" {
				text += ": "
			}
			text += b
		}
		return termEvent{Kind: NotifyOSC777, Text: text}, true
	case "99":
		meta, payload, ok := bytes.Cut(rest, []byte(";"))
		if !ok || !kittyShown(meta) {
			return termEvent{}, false
		}
		if kittyBase64(meta) {
			dec, err := base64.StdEncoding.DecodeString(string(payload))
			if err != nil {
				return termEvent{}, false
			}
			payload = dec
		}
		return termEvent{Kind: NotifyOSC99, Text: clean(payload)}, true
	}
	return termEvent{}, false
}

// conEmuCommand reports whether an OSC 9 payload is a ConEmu command
// ("4;1;50", a progress bar) rather than text.
func conEmuCommand(rest []byte) bool {
	i := 0
	for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
		i++
	}
	return i > 0 && (i == len(rest) || rest[i] == ';')
}

// kittyShown reports whether OSC 99 metadata makes the sequence part of a
// notification a person sees: its payload is the title (the default) or
// the body. A capability query (p=?, which OpenTUI sends at start, before
// its TUI takes input), a close or an alive check, an icon or buttons are
// not notifications.
func kittyShown(meta []byte) bool {
	for _, kv := range bytes.Split(meta, []byte(":")) {
		if v, ok := bytes.CutPrefix(kv, []byte("p=")); ok {
			return string(v) == "title" || string(v) == "body"
		}
	}
	return true
}

// kittyBase64 reports whether OSC 99 metadata says the payload is base64 (e=1).
func kittyBase64(meta []byte) bool {
	for _, kv := range bytes.Split(meta, []byte(":")) {
		if string(kv) == "e=1" {
			return true
		}
	}
	return false
}

// maxNotifyText bounds the text kept from one notification.
const maxNotifyText = 512

// clean makes a payload safe to show: valid UTF-8, no control
// characters, bounded.
func clean(b []byte) string {
	var sb strings.Builder
	for len(b) > 0 && sb.Len() < maxNotifyText {
		r, size := utf8.DecodeRune(b)
		b = b[size:]
		switch {
		case r == utf8.RuneError && size <= 1:
			sb.WriteRune(utf8.RuneError)
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0):
			sb.WriteByte(' ')
		default:
			sb.WriteRune(r)
		}
	}
	return strings.TrimSpace(sb.String())
}
