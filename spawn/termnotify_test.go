package spawn

import (
	"reflect"
	"testing"
	"unicode/utf8"
)

func scanAll(chunks ...string) ([]termEvent, []bool) {
	var s termScanner
	var evs []termEvent
	var printed []bool
	for _, c := range chunks {
		printed = append(printed, s.feed([]byte(c), func(e termEvent) { evs = append(evs, e) }))
	}
	return evs, printed
}

func TestTermScanner(t *testing.T) {
	tests := []struct {
		name   string
		chunks []string
		want   []termEvent
	}{
		{"osc9 bel", []string{"\x1b]9;build needs input\x07"}, []termEvent{{NotifyOSC9, "build needs input"}}},
		{"osc9 st", []string{"a\x1b]9;done\x1b\\b"}, []termEvent{{NotifyOSC9, "done"}}},
		{"osc9 split everywhere", []string{"\x1b", "]", "9", ";bui", "ld", "\x07"}, []termEvent{{NotifyOSC9, "build"}}},
		{"osc9 split st", []string{"\x1b]9;x\x1b", "\\"}, []termEvent{{NotifyOSC9, "x"}}},
		{"conemu progress is no notification", []string{"\x1b]9;4;1;50\x07"}, nil},
		{"osc777", []string{"\x1b]777;notify;Claude Code;needs your permission\x07"}, []termEvent{{NotifyOSC777, "Claude Code: needs your permission"}}},
		{"osc777 other command", []string{"\x1b]777;preexec\x07"}, nil},
		{"osc99 plain", []string{"\x1b]99;i=1:d=0;Hello\x1b\\"}, []termEvent{{NotifyOSC99, "Hello"}}},
		{"osc99 base64", []string{"\x1b]99;e=1;aGVsbG8gd29ybGQ=\x1b\\"}, []termEvent{{NotifyOSC99, "hello world"}}},
		{"osc99 body", []string{"\x1b]99;i=1:p=body;Done\x1b\\"}, []termEvent{{NotifyOSC99, "Done"}}},
		{"osc99 capability query is no notification", []string{"\x1b]99;i=opentui-notifications:p=?;\x1b\\"}, nil},
		{"osc99 close and alive are no notification", []string{"\x1b]99;i=1:p=close;\x1b\\\x1b]99;i=1:p=alive;\x1b\\"}, nil},
		{"bare bell", []string{"ab\x07c"}, []termEvent{{NotifyBell, ""}}},
		{"title 0 and 2", []string{"\x1b]0;one\x07\x1b]2;two\x1b\\"}, []termEvent{{termTitle, "one"}, {termTitle, "two"}}},
		{"icon name ignored", []string{"\x1b]1;icon\x07"}, nil},
		{"bel inside dcs is no bell", []string{"\x1bPq#0\x1b\\"}, nil},
		{"csi then osc", []string{"\x1b[2J\x1b[?25l\x1b]9;hi\x07"}, []termEvent{{NotifyOSC9, "hi"}}},
		{"control chars cleaned", []string{"\x1b]9;a\tb\x7fc\x07"}, []termEvent{{NotifyOSC9, "a b c"}}},
		{"osc cut short by csi", []string{"\x1b]9;abc\x1b[31m\x07"}, []termEvent{{NotifyBell, ""}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _ := scanAll(tt.chunks...)
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("events = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestTermScannerPrinted(t *testing.T) {
	tests := []struct {
		chunk string
		want  bool
	}{
		{"hello", true},
		{"\r\n", false},
		{"\x1b[2J\x1b[H", false},
		{"\x1b]0;title\x07", false},
		{"\x1b[31mred", true},
	}
	for _, tt := range tests {
		_, printed := scanAll(tt.chunk)
		if printed[0] != tt.want {
			t.Errorf("printed(%q) = %v, want %v", tt.chunk, printed[0], tt.want)
		}
	}
}

func TestTermScannerLongOSCSkipped(t *testing.T) {
	long := make([]byte, maxOSC+10)
	for i := range long {
		long[i] = 'x'
	}
	got, _ := scanAll("\x1b]9;"+string(long)+"\x07", "\x1b]9;after\x07")
	want := []termEvent{{NotifyOSC9, "after"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("events = %q, want %q", got, want)
	}
}

// FuzzTermScanner: any split of the stream finds what the whole finds, and
// every text is valid, bounded UTF-8 without control characters.
func FuzzTermScanner(f *testing.F) {
	f.Add([]byte("\x1b]9;build needs input\x07"), uint16(3))
	f.Add([]byte("\x1b]777;notify;t;b\x1b\\\x07"), uint16(7))
	f.Add([]byte("\x1b]99;e=1;aGk=\x1b\\\x1b]0;x\x07"), uint16(1))
	f.Add([]byte("\x1b[?2004h\x1bPq\x07\x1b]2;\xff\xfe\x07"), uint16(9))
	f.Fuzz(func(t *testing.T, data []byte, cut uint16) {
		whole, _ := scanAll(string(data))
		at := int(cut) % (len(data) + 1)
		split, _ := scanAll(string(data[:at]), string(data[at:]))
		if !reflect.DeepEqual(whole, split) {
			t.Fatalf("split at %d: %q, whole: %q", at, split, whole)
		}
		for _, e := range whole {
			if !utf8.ValidString(e.Text) || len(e.Text) > maxNotifyText+4 {
				t.Fatalf("bad text %q", e.Text)
			}
			for _, r := range e.Text {
				if r < 0x20 || r == 0x7f {
					t.Fatalf("control character in %q", e.Text)
				}
			}
		}
	})
}
