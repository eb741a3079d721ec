//go:build !linux

package proc

// EnvValue is not available here: macOS does not expose another
// process's environment without entitlements, so callers fall back to
// other evidence.
func EnvValue(int, string) string { return "" }
