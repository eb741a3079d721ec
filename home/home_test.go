package home

import (
	"strings"
	"testing"
	"time"
)

func TestNewIDCarriesItsTimeAndIsValid(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for i := 0; i < 50; i++ {
		at := t0.Add(time.Duration(i) * time.Millisecond)
		id := NewID(at)
		if len(id) != 26 || !ValidID(id) || strings.ToLower(id) != id {
			t.Fatalf("NewID = %q: want 26 valid lower-case characters", id)
		}
		got, ok := IDTime(id)
		if !ok || !got.Equal(at) {
			t.Fatalf("IDTime(%q) = %v, %v: want %v", id, got, ok, at)
		}
	}
	if a, b := NewID(t0), NewID(t0); a == b {
		t.Fatal("two ids in the same millisecond are equal")
	}
}

// Ids made in one burst differ in their first characters: the leading part
// is random, so 4 characters tell 50 of them apart with high probability
// (a collision among 50 has a chance of about 1 in 850). Over 200 bursts,
// more than 5 with a collision would mean the leading part is not random.
func TestNewIDShortPrefixesAreUniqueInABurst(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	bad := 0
	first := map[byte]bool{}
	for burst := 0; burst < 200; burst++ {
		seen := map[string]bool{}
		collided := false
		for i := 0; i < 50; i++ {
			id := NewID(t0)
			first[id[0]] = true
			if seen[id[:4]] {
				collided = true
			}
			seen[id[:4]] = true
		}
		if collided {
			bad++
		}
	}
	if bad > 5 {
		t.Fatalf("%d of 200 bursts of 50 ids had two with the same 4-character prefix", bad)
	}
	if len(first) < 32 {
		t.Fatalf("first characters of 10,000 ids use %d of 32 letters", len(first))
	}
}

func TestIDTimeRefusesOtherIDs(t *testing.T) {
	t.Parallel()
	for _, id := range []string{"01m80z8s3mhrm5", "9b2c3c1e-0f4a-4c55-8a6e-1f0c2d3e4f5a", "zzzzzzzzzzzzzzzzzzzzzzzzzz", "0000000000000000!!!!!!!!!!"} {
		if _, ok := IDTime(id); ok {
			t.Errorf("IDTime(%q) = ok: want false", id)
		}
	}
}

func TestValidID(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want bool
	}{
		{"01m80z8s3mhrm5", true},
		{"abc-DEF_1.2", true},
		{"", false},
		{"..", false},
		{".hidden", false},
		{"a/b", false},
		{"../../etc", false},
		{"a b", false},
		{strings.Repeat("a", 129), false},
	} {
		if got := ValidID(tc.in); got != tc.want {
			t.Errorf("ValidID(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}
