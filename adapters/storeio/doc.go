// Package storeio holds the readers every adapter shares to read an
// agent's native store cheaply: a file cache validated by a stat on every
// query, a folder lister that re-reads only what changed, JSON Lines read
// from the head, the tail or whole, read-only SQLite, a bounded worker pool,
// and lookups by unique id prefix.
package storeio
