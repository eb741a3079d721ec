package session

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestHandles(t *testing.T) {
	for _, tc := range []struct {
		name string
		ids  []string
		want map[string]string
	}{
		{"alone", []string{"abcdefgh"}, map[string]string{"abcdefgh": "abcd"}},
		{"short id stays whole", []string{"ab"}, map[string]string{"ab": "ab"}},
		{"shared prefix", []string{"abcdefgh", "abcdxyz1", "q0000000"},
			map[string]string{"abcdefgh": "abcde", "abcdxyz1": "abcdx", "q0000000": "q000"}},
		{"case does not tell apart", []string{"ABCDEF12", "abcdeg34"},
			map[string]string{"ABCDEF12": "ABCDEF", "abcdeg34": "abcdeg"}},
		{"a prefix of another", []string{"abcd", "abcdef"},
			map[string]string{"abcd": "abcd", "abcdef": "abcde"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := handles(tc.ids, tc.ids)
			for id, want := range tc.want {
				if got[id] != want {
					t.Errorf("handle of %s = %q, want %q", id, got[id], want)
				}
			}
		})
	}
}

func TestResolvePrefixIgnoresCase(t *testing.T) {
	ids := []string{"k3x9abcdefghjkmn", "k3y0abcdefghjkmn"}
	for _, tc := range []struct{ in, want string }{
		{"K3X", "k3x9abcdefghjkmn"},
		{"k3Y0ABCDEFGHJKMN", "k3y0abcdefghjkmn"},
	} {
		got, err := resolvePrefix(tc.in, ids)
		if err != nil || got != tc.want {
			t.Errorf("resolvePrefix(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	if _, err := resolvePrefix("K3", ids); err == nil {
		t.Error("resolvePrefix(K3) matched one of two")
	}
}

// Handles found among many ids (sorted) are the ones found for each id
// alone (compared with every other), cases and shared prefixes included.
func TestHandlesSortedAgreesWithLinear(t *testing.T) {
	var ids []string
	for i := range 3 * linearHandles {
		id := fmt.Sprintf("ab%03dxyz", i*7%50)
		if i%5 == 0 {
			id = strings.ToUpper(id)
		}
		ids = append(ids, id, "q"+id)
	}
	ids = append(ids, "ab", "ab0")
	all := handles(ids, ids)
	for _, id := range ids {
		if one := handles([]string{id}, ids)[id]; one != all[id] {
			t.Errorf("handle of %s: %q alone, %q among all", id, one, all[id])
		}
	}
}

// A list's handles, found through the kept index, are the ones found
// afresh; the same ids again reuse the sorted index, other ids build
// another.
func TestHandleIndexIsKept(t *testing.T) {
	ids := []string{"abcdefgh", "abcdxyz1", "q0000000", "ABCDEF12"}
	c := &reader{}
	for _, tc := range []struct {
		name   string
		known  []string
		reused bool
	}{
		{"first", ids, false},
		{"same ids", slices.Clone(ids), true},
		{"one more id", append(slices.Clone(ids), "abcdefgz"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before, beforeHs := c.handleIDs.lows, c.handleIDs.hs
			listed := []string{"abcdefgh", "q0000000"}
			hs := c.handleIDs.handles(tc.known, listed)
			want := handles(listed, append(slices.Clone(tc.known), listed...))
			for i, id := range listed {
				if hs[i] != want[id] {
					t.Errorf("handle of %s = %q, want %q", id, hs[i], want[id])
				}
			}
			if reused := before != nil && &before[0] == &c.handleIDs.lows[0]; reused != tc.reused {
				t.Errorf("index reused: %v, want %v", reused, tc.reused)
			}
			// The handles found are kept with it: the same ids find
			// them again rather than search for them.
			if kept := beforeHs != nil && &beforeHs[0] == &c.handleIDs.hs[0]; kept != tc.reused {
				t.Errorf("handles kept: %v, want %v", kept, tc.reused)
			}
		})
	}
}
