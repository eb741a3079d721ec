package adapters

// Set is the adapters a service reads and launches with, by name: built
// once (adapters/registry holds the list for a machine) and given to the
// session core, which looks adapters up here and nowhere else.
type Set struct {
	list   []Adapter
	byName map[string]Adapter
}

// NewSet returns the set of as, in order. The first of two adapters with
// one name is the one Get returns.
func NewSet(as ...Adapter) *Set {
	s := &Set{list: as, byName: make(map[string]Adapter, len(as))}
	for _, a := range as {
		if _, dup := s.byName[a.Name()]; !dup {
			s.byName[a.Name()] = a
		}
	}
	return s
}

// All is every adapter of the set, in order; the caller must not change it.
// A nil set has none.
func (s *Set) All() []Adapter {
	if s == nil {
		return nil
	}
	return s.list
}

// Get is the adapter called name; nil when the set has none.
func (s *Set) Get(name string) Adapter {
	if s == nil {
		return nil
	}
	return s.byName[name]
}

// Launchers names the adapters that start agents, in order.
func (s *Set) Launchers() []string {
	var out []string
	for _, a := range s.All() {
		if _, ok := a.(Launcher); ok {
			out = append(out, a.Name())
		}
	}
	return out
}
