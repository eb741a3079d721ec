//go:build !linux

package proc

import "fmt"

// EnvValue is not available here: see ErrNoEnviron.
func EnvValue(int, string) string { return "" }

// Environ is not available here: see ErrNoEnviron.
func Environ(pid int) ([]string, error) {
	return nil, fmt.Errorf("read the environment of %d: %w", pid, ErrNoEnviron)
}
