package storeio

import "testing"

func TestByIDPrefix(t *testing.T) {
	t.Parallel()
	m := map[string]string{"abc1": "p1", "abc2": "p2", "xyz": "p3"}
	tests := []struct {
		id, want string
		err      bool
	}{
		{"abc1", "p1", false},
		{"xy", "p3", false},
		{"abc", "", true},
		{"nope", "", false},
	}
	for _, tc := range tests {
		got, err := ByIDPrefix(m, tc.id)
		if got != tc.want || (err != nil) != tc.err {
			t.Errorf("ByIDPrefix(%q) = %q, %v; want %q, error %v", tc.id, got, err, tc.want, tc.err)
		}
	}
}
