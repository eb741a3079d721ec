package packaging

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the packaged unit files from the renderer")

// The unit files in packaging/ are what the renderer produces: a change to
// the renderer shows up here and is committed with it (go test -update).
func TestPackagedUnitsInSync(t *testing.T) {
	files, err := Units()
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range files {
		if *update {
			if err := os.WriteFile(path, want, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Errorf("%s: %v (go test ./packaging -update writes it)", path, err)
			continue
		}
		if string(got) != string(want) {
			t.Errorf("%s is out of sync with the renderer (go test ./packaging -update rewrites it)\n--- on disk:\n%s\n--- rendered:\n%s", path, got, want)
		}
	}
	// Nothing stale: every file in the unit folders is rendered.
	for _, dir := range []string{"systemd", "launchd"} {
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			p := filepath.Join(dir, e.Name())
			if _, ok := files[p]; !ok {
				t.Errorf("%s is not produced by the renderer: remove it or add it to Units", p)
			}
		}
	}
}
