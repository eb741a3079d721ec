package api

import (
	"math/rand/v2"
	"reflect"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/agentctl/agentctl/internal/testutil"
)

// TestListOptionsQuery: what Query encodes, ParseListOptions reads back,
// the table's view among it.
func TestListOptionsQuery(t *testing.T) {
	t.Parallel()
	for _, o := range []ListOptions{{}, {All: true, Table: true}, {Status: "running", Adapter: "claude", Group: "g", Labels: []string{"a=b"}, Since: time.Hour, Waiting: true, Resources: true}} {
		got, err := ParseListOptions(o.Query())
		if err != nil || !reflect.DeepEqual(got, o) {
			t.Errorf("%+v read back as %+v (%v)", o, got, err)
		}
	}
}

// cutPrompt's way through ASCII cuts where decoding every rune cuts.
func TestCutPromptASCIIAsRunes(t *testing.T) {
	t.Parallel()
	runes := func(s string, n int) string {
		for i, r := range s {
			if unicode.IsSpace(r) {
				continue
			}
			if n--; n == 0 {
				return s[:i+utf8.RuneLen(r)]
			}
		}
		return s
	}
	r := rand.New(rand.NewPCG(7, 8))
	alphabet := []string{"a", "b", " ", "\t", "\n", "\v", "\f", "\r", "\x1c", "é", "\u00a0", "\u0085", "\u2028", "日", "x y"}
	for range 20000 {
		s, n := testutil.RandomText(r, alphabet, 30), 1+r.IntN(25)
		if got, want := cutPrompt(s, n), runes(s, n); got != want {
			t.Fatalf("cutPrompt(%q, %d) = %q, the runes' way %q", s, n, got, want)
		}
	}
}
