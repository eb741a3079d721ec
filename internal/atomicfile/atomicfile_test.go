package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
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

// TestWriteFromFailsLeavingTheOld: what fill wrote before its error is
// thrown away with the temporary file; the old content stays.
func TestWriteFromFailsLeavingTheOld(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "cache")
	if err := WriteFrom(p, 0o600, func(w io.Writer) error {
		_, err := io.WriteString(w, strings.Repeat("old ", 50000)) // past the write buffer
		return err
	}); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("too big")
	err := WriteFrom(p, 0o600, func(w io.Writer) error {
		io.WriteString(w, strings.Repeat("new ", 50000))
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("error %v, want fill's", err)
	}
	got, _ := os.ReadFile(p)
	if string(got) != strings.Repeat("old ", 50000) {
		t.Fatalf("the file holds %d bytes starting %.8q, want the old content", len(got), got)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("directory holds %d entries, want only the file", len(ents))
	}
}
