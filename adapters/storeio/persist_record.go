package storeio

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"
)

// RecordWriter writes a cached value's fields in a compact binary form, for
// a value whose fields are unexported (its MarshalBinary, which a DiskCache
// file then holds). Fields are written and read back in the same order; a
// change of fields or order is a change of the DiskCache's Kind.
type RecordWriter struct{ b []byte }

// Bytes returns what was written.
func (w *RecordWriter) Bytes() []byte { return w.b }

// String writes s.
func (w *RecordWriter) String(s string) {
	w.b = binary.AppendUvarint(w.b, uint64(len(s)))
	w.b = append(w.b, s...)
}

// Int writes v.
func (w *RecordWriter) Int(v int64) { w.b = binary.AppendVarint(w.b, v) }

// Bool writes v.
func (w *RecordWriter) Bool(v bool) {
	if v {
		w.b = append(w.b, 1)
	} else {
		w.b = append(w.b, 0)
	}
}

// Float writes v.
func (w *RecordWriter) Float(v float64) {
	w.b = binary.LittleEndian.AppendUint64(w.b, math.Float64bits(v))
}

// Time writes t with its zone offset (as time.Time.MarshalBinary does).
func (w *RecordWriter) Time(t time.Time) {
	b, err := t.MarshalBinary()
	if err != nil {
		// Only a zone offset that is not whole minutes fails; such a
		// time is kept as UTC, the same instant.
		b, _ = t.UTC().MarshalBinary()
	}
	w.String(string(b))
}

// Strings writes ss.
func (w *RecordWriter) Strings(ss []string) {
	w.b = binary.AppendUvarint(w.b, uint64(len(ss)))
	for _, s := range ss {
		w.String(s)
	}
}

// RecordReader reads back what a RecordWriter wrote. The first malformed
// field sets Err, after which every read returns a zero value: a reader
// checks Err once, at the end.
type RecordReader struct {
	b   []byte
	err error
}

// NewRecordReader reads b.
func NewRecordReader(b []byte) *RecordReader { return &RecordReader{b: b} }

var errShortRecord = errors.New("cached record: truncated")

func (r *RecordReader) fail(err error) {
	if r.err == nil {
		r.err = err
	}
	r.b = nil
}

// OK reports whether every read so far succeeded (bytes may be left).
func (r *RecordReader) OK() bool { return r.err == nil }

// Err is the first error met, or an error when bytes are left over: the
// check once all is read.
func (r *RecordReader) Err() error {
	if r.err == nil && len(r.b) != 0 {
		return fmt.Errorf("cached record: %d bytes left over", len(r.b))
	}
	return r.err
}

func (r *RecordReader) uvarint() uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail(errShortRecord)
		return 0
	}
	r.b = r.b[n:]
	return v
}

// String reads a string.
func (r *RecordReader) String() string {
	n := r.uvarint()
	if n > uint64(len(r.b)) {
		r.fail(errShortRecord)
		return ""
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}

// Int reads an integer.
func (r *RecordReader) Int() int64 {
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.fail(errShortRecord)
		return 0
	}
	r.b = r.b[n:]
	return v
}

// Bool reads a boolean.
func (r *RecordReader) Bool() bool {
	if len(r.b) == 0 {
		r.fail(errShortRecord)
		return false
	}
	v := r.b[0]
	r.b = r.b[1:]
	if v > 1 {
		r.fail(fmt.Errorf("cached record: bad boolean %d", v))
		return false
	}
	return v == 1
}

// Float reads a float.
func (r *RecordReader) Float() float64 {
	if len(r.b) < 8 {
		r.fail(errShortRecord)
		return 0
	}
	v := math.Float64frombits(binary.LittleEndian.Uint64(r.b))
	r.b = r.b[8:]
	return v
}

// Time reads a time.
func (r *RecordReader) Time() time.Time {
	s := r.String()
	if r.err != nil {
		return time.Time{}
	}
	var t time.Time
	if err := t.UnmarshalBinary([]byte(s)); err != nil {
		r.fail(fmt.Errorf("cached record: time: %w", err))
		return time.Time{}
	}
	return t
}

// Strings reads a list of strings.
func (r *RecordReader) Strings() []string {
	n := r.uvarint()
	if n > uint64(len(r.b)) { // each string takes at least a byte
		r.fail(errShortRecord)
		return nil
	}
	if n == 0 {
		return nil
	}
	out := make([]string, 0, n)
	for range n {
		out = append(out, r.String())
	}
	if r.err != nil {
		return nil
	}
	return out
}
