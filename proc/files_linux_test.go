//go:build linux

package proc

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// A file a process only reads is open, but not open for writing; one it
// writes (write-only, or read-write) is both. (macOS lists no access mode.)
func TestWritableFilesLeaveOutWhatIsOnlyRead(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	paths := map[string]int{"read": os.O_RDONLY, "write": os.O_WRONLY | os.O_APPEND, "both": os.O_RDWR}
	for name, flag := range paths {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		f, err := os.OpenFile(p, flag, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
	}
	open, err := OpenFiles(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	written, err := WritableFiles(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	real, _ := filepath.EvalSymlinks(dir)
	for name := range paths {
		p := filepath.Join(real, name)
		if !slices.Contains(open, p) {
			t.Errorf("%s is not among the open files", name)
		}
		if want := name != "read"; slices.Contains(written, p) != want {
			t.Errorf("%s among the files open for writing: %v, want %v", name, !want, want)
		}
	}
}
