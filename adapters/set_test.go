package adapters

import (
	"context"
	"slices"
	"testing"
)

type named struct{ name string }

func (n named) Name() string                                             { return n.name }
func (named) Discover(context.Context) ([]NativeSession, error)          { return nil, nil }
func (named) Transcript(context.Context, string, int) ([]Message, error) { return nil, nil }

func TestSet(t *testing.T) {
	t.Parallel()
	a, b, a2 := named{"a"}, named{"b"}, named{"a"}
	s := NewSet(a, b, a2)
	for _, tc := range []struct {
		name string
		want Adapter
	}{{"a", a}, {"b", b}, {"c", nil}} {
		if got := s.Get(tc.name); got != tc.want {
			t.Errorf("Get(%q) = %v, want %v", tc.name, got, tc.want)
		}
	}
	if got := s.All(); len(got) != 3 {
		t.Errorf("All() = %v", got)
	}
	if got := s.Launchers(); got != nil {
		t.Errorf("Launchers() = %v, want none", got)
	}
	var none *Set
	if none.Get("a") != nil || none.All() != nil || !slices.Equal(none.Launchers(), nil) {
		t.Error("a nil set is not empty")
	}
}
