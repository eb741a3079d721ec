package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWriteReplacesAndLeavesNoTemp(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		write func(string, []byte, os.FileMode) error
	}{{"synced", Write}, {"unsynced", WriteUnsynced}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, "x.json")
			for _, content := range []string{"first", "second"} {
				if err := tc.write(p, []byte(content), 0o600); err != nil {
					t.Fatal(err)
				}
				got, err := os.ReadFile(p)
				if err != nil || string(got) != content {
					t.Fatalf("read %q, %v; want %q", got, err, content)
				}
			}
			st, _ := os.Stat(p)
			if st.Mode().Perm() != 0o600 {
				t.Errorf("mode %v, want 0600", st.Mode().Perm())
			}
			ents, _ := os.ReadDir(dir)
			if len(ents) != 1 {
				t.Errorf("directory holds %d entries, want only the file", len(ents))
			}
		})
	}
}

func TestWriteIntoMissingDirFails(t *testing.T) {
	t.Parallel()
	err := Write(filepath.Join(t.TempDir(), "nope", "x"), []byte("a"), 0o600)
	if err == nil {
		t.Fatal("want an error for a missing directory")
	}
}
