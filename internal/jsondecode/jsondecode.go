// Package jsondecode decodes the records of the agents' stores: the result
// and the error of encoding/json's Unmarshal, in about two thirds of its
// time. A first read of a big store decodes millions of lines, and
// encoding/json scans each twice (once to validate it, once to decode it);
// a decoder that does both in one pass answers when it can.
package jsondecode

import (
	"bytes"
	"encoding/json"
	"reflect"
	"unicode/utf8"

	fast "github.com/segmentio/encoding/json"
)

// Unmarshal decodes data into v, which must point to a zero value, as
// encoding/json's Unmarshal does. The one-pass decoder answers for valid
// UTF-8 that it decodes without an error; anything else (a syntax error, a
// value of the wrong type, invalid UTF-8, which encoding/json replaces,
// nesting that could pass encoding/json's limit) is decoded again by
// encoding/json, from the zero value, so the partial results and the
// errors are encoding/json's (a wrong type in one field still yields the
// others, which the adapters rely on).
func Unmarshal(data []byte, v any) error {
	if utf8.Valid(data) && !mayNestTooDeep(data) {
		if err := fast.Unmarshal(data, v); err == nil {
			return nil
		}
		if rv := reflect.ValueOf(v); rv.Kind() == reflect.Pointer && !rv.IsNil() {
			rv.Elem().SetZero()
		}
	}
	return json.Unmarshal(data, v)
}

// maxDepth is how deep encoding/json lets a value nest before it refuses
// the input; the one-pass decoder has no such limit.
const maxDepth = 10000

// mayNestTooDeep reports whether data has enough opening brackets to nest
// past maxDepth (counting those in strings too: a false alarm only costs
// the slower decoder).
func mayNestTooDeep(data []byte) bool {
	return len(data) > maxDepth && bytes.Count(data, []byte{'{'})+bytes.Count(data, []byte{'['}) > maxDepth
}
