package pi

import (
	"testing"

	"github.com/agentctl/agentctl/adapters/storeio/storeiotest"
	pisynth "github.com/agentctl/agentctl/internal/synth/pi"
)

// TestRecordsDecodeAsEncodingJSON: every line of a generated store decodes
// into a record (internal/jsondecode) as encoding/json decodes it.
func TestRecordsDecodeAsEncodingJSON(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	if err := pisynth.GenerateStore(home, 12, 3); err != nil {
		t.Fatal(err)
	}
	storeiotest.CheckLinesDecodeAsEncodingJSON[record](t, home, 100)
}
