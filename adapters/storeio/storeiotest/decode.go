package storeiotest

import (
	"bufio"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/agentctl/agentctl/internal/jsondecode"
)

// CheckLinesDecodeAsEncodingJSON checks that every line of the JSON Lines
// files under dir decodes into a T through internal/jsondecode as
// encoding/json decodes it (the same value, an error where it fails), and
// that there were least lines or more.
func CheckLinesDecodeAsEncodingJSON[T any](t *testing.T, dir string, least int) {
	t.Helper()
	n := 0
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
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
			var got, want T
			gotErr, wantErr := jsondecode.Unmarshal(sc.Bytes(), &got), json.Unmarshal(sc.Bytes(), &want)
			if !reflect.DeepEqual(got, want) || (gotErr == nil) != (wantErr == nil) {
				t.Fatalf("%s: %.200s\ndecoded %+v, %v\nencoding/json %+v, %v", path, sc.Bytes(), got, gotErr, want, wantErr)
			}
		}
		return sc.Err()
	})
	if err != nil || n < least {
		t.Fatalf("%d lines under %s (want %d or more), %v", n, dir, least, err)
	}
}
