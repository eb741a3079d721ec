//go:build !linux

package pi

// environValue is not available here: macOS does not expose another
// process's environment without entitlements, so matching falls back to
// argv and cwd plus start time.
func environValue(int, string) string { return "" }
