package claude

import (
	"strconv"
	"strings"
	"unicode/utf16"
)

// maxSlug is the longest project folder name Claude Code writes before it
// shortens the name and appends a hash.
const maxSlug = 200

// ProjectSlug is the name of the folder under ~/.claude/projects that holds
// the sessions of cwd (the physical path: Claude resolves symlinks first).
// Every UTF-16 code unit that is not an ASCII letter or digit becomes '-';
// a result longer than 200 units keeps the first 200 and gets
// "-" + base36(|djb2 of the path|) appended.
func ProjectSlug(cwd string) string {
	units := utf16.Encode([]rune(cwd))
	var b strings.Builder
	for i, u := range units {
		if i == maxSlug {
			break
		}
		if u < 128 && (u >= 'a' && u <= 'z' || u >= 'A' && u <= 'Z' || u >= '0' && u <= '9') {
			b.WriteByte(byte(u))
		} else {
			b.WriteByte('-')
		}
	}
	if len(units) <= maxSlug {
		return b.String()
	}
	// djb2 as JavaScript computes it: h = (h << 5) - h + unit, in int32.
	var h int32
	for _, u := range units {
		h = (h << 5) - h + int32(u)
	}
	abs := int64(h)
	if abs < 0 {
		abs = -abs
	}
	return b.String() + "-" + strconv.FormatInt(abs, 36)
}
