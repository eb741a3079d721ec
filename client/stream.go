package client

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/agentctl/agentctl/internal/text"
)

// streamSilence is how long a stream may say nothing, not even its
// keep-alive (an empty line every 15 s), before the service is taken to be
// gone or frozen.
const streamSilence = 45 * time.Second

// errSilent marks a stream the service stopped feeding.
var errSilent = errors.New("the agentctl service sent nothing, not even a keep-alive")

// readLines hands each non-empty line of an NDJSON stream to fn, and gives
// up on a stream that stays silent for silence or sends a line longer
// than maxLine.
func readLines(body io.ReadCloser, silence time.Duration, maxLine int64, fn func(line []byte) error) error {
	var silent atomic.Bool
	watch := time.AfterFunc(silence, func() { silent.Store(true); body.Close() })
	defer watch.Stop()
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 0, min(64<<10, maxLine)), int(maxLine))
	for sc.Scan() {
		watch.Reset(silence)
		if len(sc.Bytes()) == 0 {
			continue // a keep-alive
		}
		if err := fn(sc.Bytes()); err != nil {
			return err
		}
	}
	if silent.Load() {
		return fmt.Errorf("%w for %s", errSilent, silence)
	}
	if errors.Is(sc.Err(), bufio.ErrTooLong) {
		return fmt.Errorf("a line %w of %s", ErrTooLarge, text.Bytes(maxLine))
	}
	return sc.Err()
}
