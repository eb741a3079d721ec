package atomicfile

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"syscall"
)

// ReadJSON reads a small JSON record into v: it does not follow a symbolic
// link (a record's folder may be reached by another user's process), and
// refuses a file over max bytes rather than reading it whole.
func ReadJSON(path string, v any, max int64) error {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	if int64(len(b)) > max {
		return fmt.Errorf("read %s: over the %d KiB a record may have", path, max>>10)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("parse %s: %w", path, err)
	}
	return nil
}
