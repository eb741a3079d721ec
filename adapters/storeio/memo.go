package storeio

import (
	"reflect"
	"sync"
)

// Memo keeps the last value an adapter derived from its store (the facts
// it read, the native sessions it built from them), with what it was
// derived from: a Lister's version and the other inputs (the processes
// matched, an index's stamp). Get returns it while those are the same, so
// a query between changes reuses it rather than building it again. It
// keeps parsed data only: whatever is decided at query time (liveness)
// must be decided by the caller on each query. It is safe for concurrent
// use.
type Memo[V any] struct {
	mu      sync.Mutex
	kept    bool
	version uint64
	inputs  any
	value   V
	// hits counts the values returned, for tests and benchmarks.
	hits uint64
}

// Get returns the value kept for version and inputs, which are compared
// deeply (they are small: the processes of one agent, a few stamps).
func (m *Memo[V]) Get(version uint64, inputs any) (V, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.kept || m.version != version || !reflect.DeepEqual(m.inputs, inputs) {
		var zero V
		return zero, false
	}
	m.hits++
	return m.value, true
}

// Put keeps v as derived at version from inputs. The caller must not
// change v, nor inputs, afterwards: later Gets hand out the same value.
func (m *Memo[V]) Put(version uint64, inputs any, v V) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.kept, m.version, m.inputs, m.value = true, version, inputs, v
}

// Drop forgets the kept value: the next Get misses.
func (m *Memo[V]) Drop() {
	m.mu.Lock()
	defer m.mu.Unlock()
	var zero V
	m.kept, m.inputs, m.value = false, nil, zero
}

// Hits is how many times Get returned the kept value.
func (m *Memo[V]) Hits() uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.hits
}

// Last returns the value kept, whatever it was derived from: a hint (where
// a file was), to be checked against the store before it is trusted.
func (m *Memo[V]) Last() (V, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.value, m.kept
}
