package atomicfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadJSON(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good := filepath.Join(dir, "good.json")
	os.WriteFile(good, []byte(`{"n": 7}`), 0o600)
	big := filepath.Join(dir, "big.json")
	os.WriteFile(big, []byte(`{"n": 7, "pad": "`+strings.Repeat("x", 2048)+`"}`), 0o600)
	link := filepath.Join(dir, "link.json")
	os.Symlink(good, link)
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"n":`), 0o600)
	for _, tc := range []struct {
		name, path, wantErr string
		n                   int
	}{
		{"a record", good, "", 7},
		{"over the bound", big, "over the 1 KiB", 0},
		{"a symbolic link", link, "too many levels of symbolic links", 0},
		{"malformed", bad, "parse ", 0},
		{"missing", filepath.Join(dir, "none.json"), "no such file", 0},
	} {
		var v struct{ N int }
		err := ReadJSON(tc.path, &v, 1024)
		if tc.wantErr == "" && (err != nil || v.N != tc.n) || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("%s: %+v, %v; want n=%d, error %q", tc.name, v, err, tc.n, tc.wantErr)
		}
	}
}
