//go:build linux

package proc

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"syscall"
)

// EnvValue returns key's value in the environment pid started with, or
// "" when unset or unreadable (another user's process).
func EnvValue(pid int, key string) string {
	env, err := Environ(pid)
	if err != nil {
		return ""
	}
	prefix := key + "="
	for _, kv := range env {
		if len(kv) > len(prefix) && kv[:len(prefix)] == prefix {
			return kv[len(prefix):]
		}
	}
	return ""
}

// Environ returns the environment pid started with ("KEY=VALUE" each). Only
// the process's own user (or root) may read it.
func Environ(pid int) ([]string, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return nil, fmt.Errorf("read the environment of %d: %w", pid, err)
	}
	b = bytes.TrimRight(b, "\x00")
	if len(b) == 0 {
		return nil, nil
	}
	var out []string
	for kv := range bytes.SplitSeq(b, []byte{0}) {
		out = append(out, string(kv))
	}
	return out, nil
}

// Owner returns the user id pid runs as (its effective uid, which owns
// its /proc folder).
func Owner(pid int) (int, error) {
	fi, err := os.Stat("/proc/" + strconv.Itoa(pid))
	if err != nil {
		if os.IsNotExist(err) {
			return 0, fmt.Errorf("owner of %d: %w", pid, ErrNotFound)
		}
		return 0, fmt.Errorf("owner of %d: %w", pid, err)
	}
	return int(fi.Sys().(*syscall.Stat_t).Uid), nil
}
