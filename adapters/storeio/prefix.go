package storeio

import (
	"fmt"
	"strings"
)

// ByIDPrefix looks id up in m, exactly or as a unique prefix of a key. It
// returns the zero value when nothing matches, and an error naming the
// count when several keys start with id.
func ByIDPrefix[V any](m map[string]V, id string) (V, error) {
	if v, ok := m[id]; ok {
		return v, nil
	}
	var found []V
	for k, v := range m {
		if strings.HasPrefix(k, id) {
			found = append(found, v)
		}
	}
	var zero V
	switch len(found) {
	case 0:
		return zero, nil
	case 1:
		return found[0], nil
	}
	return zero, fmt.Errorf("session id %q is ambiguous: %d sessions start with it", id, len(found))
}
