package opencode

import (
	"context"
	"encoding/json"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/agentctl/agentctl/adapters/storeio"
	"github.com/agentctl/agentctl/internal/jsondecode"
	opencodesynth "github.com/agentctl/agentctl/internal/synth/opencode"
)

// TestRecordsDecodeAsEncodingJSON: every message's and part's data in a
// generated database decodes (internal/jsondecode) as encoding/json
// decodes it.
func TestRecordsDecodeAsEncodingJSON(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	if err := opencodesynth.GenerateStore(data, 12, 3); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	db, err := storeio.OpenSQLiteReadOnly(ctx, filepath.Join(data, "opencode", "opencode.db"), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	same := func(table string, decode func(b []byte) (any, error, any, error)) {
		rows, err := db.QueryContext(ctx, "SELECT data FROM "+table)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		n := 0
		for rows.Next() {
			var b []byte
			if err := rows.Scan(&b); err != nil {
				t.Fatal(err)
			}
			n++
			got, gotErr, want, wantErr := decode(b)
			if !reflect.DeepEqual(got, want) || (gotErr == nil) != (wantErr == nil) {
				t.Fatalf("%s: %.200s\ndecoded %+v, %v\nencoding/json %+v, %v", table, b, got, gotErr, want, wantErr)
			}
		}
		if n < 20 {
			t.Fatalf("%d rows of %s", n, table)
		}
	}
	same("message", func(b []byte) (any, error, any, error) {
		var got, want messageData
		gotErr, wantErr := jsondecode.Unmarshal(b, &got), json.Unmarshal(b, &want)
		return got, gotErr, want, wantErr
	})
	same("part", func(b []byte) (any, error, any, error) {
		var got, want partData
		gotErr, wantErr := jsondecode.Unmarshal(b, &got), json.Unmarshal(b, &want)
		return got, gotErr, want, wantErr
	})
}
