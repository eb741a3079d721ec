// Package storeiotest holds what the adapters' tests share about their
// stores' cached forms.
package storeiotest

import (
	"bytes"
	"encoding"
	"testing"
)

// DiskForm is a pointer to a value that has a binary disk form.
type DiskForm[T any] interface {
	*T
	encoding.BinaryMarshaler
	encoding.BinaryUnmarshaler
}

// FuzzDiskForm fuzzes a disk form from seed: any bytes in a cache file are
// rejected or read to a value whose own record is read back to the same
// bytes (times compare as instants, so the bytes are compared).
func FuzzDiskForm[T any, P DiskForm[T]](f *testing.F, seed P) {
	b, err := seed.MarshalBinary()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		y := P(new(T))
		if err := y.UnmarshalBinary(b); err != nil {
			return
		}
		again, err := y.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		z := P(new(T))
		if err := z.UnmarshalBinary(again); err != nil {
			t.Fatalf("its own record rejected: %v", err)
		}
		if third, _ := z.MarshalBinary(); !bytes.Equal(again, third) {
			t.Errorf("read back differently:\n%x\n%x", again, third)
		}
	})
}
