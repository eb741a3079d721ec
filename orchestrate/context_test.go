package orchestrate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestContextPrompt(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "docs/spec.md"), []byte("# Spec\nDo X.\n"))
	writeFile(t, filepath.Join(dir, "a.go"), []byte("package a"))
	other := filepath.Join(t.TempDir(), "notes.txt")
	writeFile(t, other, []byte("outside\n"))

	got, err := ContextFiles{Dir: dir, Spec: "docs/spec.md", Files: []string{"a.go", other}}.Prompt("Fix it.")
	if err != nil {
		t.Fatal(err)
	}
	want := "--- Spec: docs/spec.md ---\n# Spec\nDo X.\n--- End Spec ---\n\n" +
		"--- File: a.go ---\npackage a\n--- End File ---\n\n" +
		"--- File: " + other + " ---\noutside\n--- End File ---\n\n" +
		"Fix it."
	if got != want {
		t.Errorf("prompt:\n%s\nwant:\n%s", got, want)
	}
	if got, err := (ContextFiles{Dir: dir}).Prompt("-p starts with a dash"); err != nil || got != "-p starts with a dash" {
		t.Errorf("no files: %q, %v", got, err)
	}
}

func TestContextLimits(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "exact"), []byte(strings.Repeat("x", DefaultMaxFileSize)))
	writeFile(t, filepath.Join(dir, "big"), []byte(strings.Repeat("x", DefaultMaxFileSize+1)))
	writeFile(t, filepath.Join(dir, "bin"), []byte("PK\x03\x04\x00\x01"))
	writeFile(t, filepath.Join(dir, "latin1"), []byte("caf\xe9\n"))
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		files []string
		spec  string
		max   int64
		want  string // "" means success
	}{
		{"exactly at the default limit", []string{"exact"}, "", 0, ""},
		{"one byte over", []string{"big"}, "", 0, "--file: big is 51201 bytes, over the limit of 50 KiB per file (raise it with --max-file-size)"},
		{"a raised limit", []string{"big"}, "", 1 << 20, ""},
		{"a lowered limit", []string{"exact"}, "", 100, "--file: exact is 50 KiB, over the limit of 100 bytes per file"},
		{"missing", []string{"nope.md"}, "", 0, "--file: file not found: nope.md (looked for " + filepath.Join(dir, "nope.md")},
		{"missing spec", nil, "/no/such/spec.md", 0, "--spec: file not found: /no/such/spec.md"},
		{"binary", []string{"bin"}, "", 0, "--file: bin looks binary (a NUL byte at offset 4)"},
		{"not UTF-8", []string{"latin1"}, "", 0, "--file: latin1 is not UTF-8 text"},
		{"a directory", []string{"sub"}, "", 0, "--file: sub is a directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ContextFiles{Dir: dir, Spec: tt.spec, Files: tt.files, MaxFileSize: tt.max}.Prompt("p")
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("unexpected error: %v", err)
			case tt.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tt.want)):
				t.Errorf("error = %v\n want prefix %q", err, tt.want)
			}
		})
	}
}

// Many files under the per-file limit make a prompt over 100 kB, which the
// adapters pass through a file or standard input rather than argv.
func TestContextLargePrompt(t *testing.T) {
	dir := t.TempDir()
	var files []string
	for i := range 4 {
		name := filepath.Join(dir, "part"+string(rune('a'+i)))
		writeFile(t, name, []byte(strings.Repeat("line of text\n", 3500)))
		files = append(files, name)
	}
	got, err := ContextFiles{Dir: dir, Files: files}.Prompt("summarise")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) < 180_000 || !strings.HasSuffix(got, "\n\nsummarise") {
		t.Errorf("prompt of %d bytes ending %q", len(got), got[len(got)-20:])
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"51200": 51200, "50k": 51200, "50K": 51200, "50KiB": 51200, "1M": 1 << 20, "2mib": 2 << 20, "10b": 10, " 7 k ": 7 << 10} {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "0", "-1", "k", "1.5M", "12x", "9999999999M"} {
		if _, err := ParseSize(in); err == nil {
			t.Errorf("ParseSize(%q): no error", in)
		}
	}
}
