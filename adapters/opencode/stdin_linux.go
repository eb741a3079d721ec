//go:build linux

package opencode

import (
	"io"
	"os"
	"strconv"
)

// maxPromptRead bounds the read of a prompt file given as stdin.
const maxPromptRead = 1 << 20

// stdinPrompt returns the content of the regular file that is pid's stdin:
// how agentctl passes a prompt argv cannot carry. "" when stdin is not a
// regular file or cannot be read.
func stdinPrompt(pid int) string {
	link, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/fd/0")
	if err != nil || len(link) == 0 || link[0] != '/' {
		return ""
	}
	f, err := os.Open(link)
	if err != nil {
		return ""
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return ""
	}
	b, err := io.ReadAll(io.LimitReader(f, maxPromptRead))
	if err != nil {
		return ""
	}
	return string(b)
}
