package text

import (
	"fmt"
	"strconv"
)

// quoteMax is how many bytes of a value a message quotes.
const quoteMax = 64

// Quote quotes a value for a message, as %q does; a longer value is quoted
// by its first bytes and named by its length, so an error never echoes a
// whole oversized value (a 60 MB name) back to its sender or into a log.
func Quote(s string) string {
	if len(s) <= quoteMax {
		return strconv.Quote(s)
	}
	return fmt.Sprintf("%s… (%d bytes)", strconv.Quote(Truncate(s, quoteMax)), len(s))
}
