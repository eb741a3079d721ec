package claude

import (
	"bufio"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/agentctl/agentctl/internal/jsondecode"
	claudesynth "github.com/agentctl/agentctl/internal/synth/claude"
)

// TestRecordsDecodeAsEncodingJSON: every line of a generated store decodes
// into a record (internal/jsondecode) as encoding/json decodes it.
func TestRecordsDecodeAsEncodingJSON(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	if err := claudesynth.GenerateStore(home, 12, 3); err != nil {
		t.Fatal(err)
	}
	n := 0
	err := filepath.WalkDir(home, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(path) != ".jsonl" {
			return err
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 64<<20)
		for sc.Scan() {
			n++
			var got, want record
			gotErr, wantErr := jsondecode.Unmarshal(sc.Bytes(), &got), json.Unmarshal(sc.Bytes(), &want)
			if !reflect.DeepEqual(got, want) || (gotErr == nil) != (wantErr == nil) {
				t.Fatalf("%s: %.200s\ndecoded %+v, %v\nencoding/json %+v, %v", path, sc.Bytes(), got, gotErr, want, wantErr)
			}
		}
		return sc.Err()
	})
	if err != nil || n < 100 {
		t.Fatalf("%d lines, %v", n, err)
	}
}
