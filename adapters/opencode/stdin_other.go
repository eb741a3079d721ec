//go:build !linux

package opencode

// stdinPrompt is unknown where a process's file descriptors cannot be read
// by number: matching then relies on the folder and start time alone.
func stdinPrompt(int) string { return "" }
