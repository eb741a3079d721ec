package home

import (
	"sort"
	"strings"
	"testing"
	"time"
)

func TestNewIDSortsByTimeAndIsValid(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var ids []string
	for i := 0; i < 50; i++ {
		id := NewID(t0.Add(time.Duration(i) * time.Millisecond))
		if len(id) != 26 || !ValidID(id) {
			t.Fatalf("NewID = %q: want 26 valid characters", id)
		}
		ids = append(ids, id)
	}
	if !sort.StringsAreSorted(ids) {
		t.Fatal("ids made later do not sort later")
	}
	if a, b := NewID(t0), NewID(t0); a == b {
		t.Fatal("two ids in the same millisecond are equal")
	}
}

func TestValidID(t *testing.T) {
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
