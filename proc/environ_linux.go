//go:build linux

package proc

import (
	"bytes"
	"os"
	"strconv"
)

// EnvValue returns key's value in the environment pid started with, or
// "" when unset or unreadable (another user's process).
func EnvValue(pid int, key string) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return ""
	}
	prefix := []byte(key + "=")
	for kv := range bytes.SplitSeq(b, []byte{0}) {
		if v, ok := bytes.CutPrefix(kv, prefix); ok {
			return string(v)
		}
	}
	return ""
}
