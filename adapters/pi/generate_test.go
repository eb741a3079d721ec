package pi

import (
	"context"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentctl/agentctl/adapters"
)

func TestGenerateStore(t *testing.T) {
	home := t.TempDir()
	if err := GenerateStore(home, 300, 7); err != nil {
		t.Fatal(err)
	}
	a := New(adapters.Env{Home: home})
	got, err := a.Discover(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 300 {
		t.Fatalf("discovered %d sessions, want 300", len(got))
	}
	states := map[adapters.NativeState]int{}
	var biggest int64
	for _, s := range got {
		states[s.State]++
		if s.NativeID == "" || s.Cwd == "" || s.Model == "" || s.FirstPrompt == "" || s.TokensIn == nil || s.CostUSD == nil || len(s.Warnings) > 0 {
			t.Fatalf("incomplete generated session: %+v", s)
		}
		if fi, err := os.Stat(s.Path); err == nil {
			biggest = max(biggest, fi.Size())
			if !fi.ModTime().Equal(s.UpdatedAt) {
				t.Errorf("file time %v, last record %v", fi.ModTime(), s.UpdatedAt)
			}
		}
	}
	if states[adapters.NativeDone] == 0 || states[adapters.NativeFailed]+states[adapters.NativeAborted]+states[adapters.NativeUnknown] == 0 {
		t.Errorf("states not mixed: %v", states)
	}
	if biggest < 1<<20 {
		t.Errorf("largest generated transcript is %d bytes; want some over 1 MB", biggest)
	}
	msgs, err := a.Transcript(context.Background(), got[0].NativeID, 5)
	if err != nil || len(msgs) == 0 {
		t.Errorf("Transcript of a generated session = %v, %v", msgs, err)
	}

	// The same seed gives the same sessions (their dates follow now, so
	// compare their shapes: the sizes of the files).
	sizes := func(home string) map[int64]int {
		out := map[int64]int{}
		filepath.WalkDir(filepath.Join(home, ".pi"), func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				if fi, err := d.Info(); err == nil {
					out[fi.Size()]++
				}
			}
			return nil
		})
		return out
	}
	other := t.TempDir()
	if err := GenerateStore(other, 300, 7); err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(sizes(home), sizes(other)) {
		t.Error("two stores from the same seed differ")
	}
}
