package integrate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// A JSON document as the user wrote it, for an edit that keeps the order of
// their keys and their numbers as written: objects are ordered members,
// numbers json.Number. Formatting is redone with the file's own indent (an
// edit of a JSON file keeps what JSON keeps; `--remove` gives the bytes
// back from the backup).

// member is one key of an object.
type member struct {
	key string
	val any
}

// object is a JSON object, its members in order.
type object struct{ members []member }

func (o *object) get(key string) (any, bool) {
	for _, m := range o.members {
		if m.key == key {
			return m.val, true
		}
	}
	return nil, false
}

// set replaces key's value, or appends it.
func (o *object) set(key string, v any) {
	for i := range o.members {
		if o.members[i].key == key {
			o.members[i].val = v
			return
		}
	}
	o.members = append(o.members, member{key, v})
}

func (o *object) remove(key string) {
	for i := range o.members {
		if o.members[i].key == key {
			o.members = append(o.members[:i], o.members[i+1:]...)
			return
		}
	}
}

// maxDepth bounds the nesting of a configuration file read.
const maxDepth = 200

// parseOrdered reads one JSON value, keeping its objects' order.
func parseOrdered(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	v, err := readValue(dec, 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("more than one JSON value")
	}
	return v, nil
}

func readValue(dec *json.Decoder, depth int) (any, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("nested more than %d deep", maxDepth)
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			o := &object{}
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return nil, err
				}
				v, err := readValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				o.members = append(o.members, member{k.(string), v})
			}
			_, err := dec.Token()
			return o, err
		case '[':
			a := []any{}
			for dec.More() {
				v, err := readValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				a = append(a, v)
			}
			_, err := dec.Token()
			return a, err
		}
		return nil, fmt.Errorf("unexpected %v", t)
	}
	return tok, nil
}

// encodeOrdered writes v indented by indent, ending with a newline.
func encodeOrdered(v any, indent string) ([]byte, error) {
	var compact bytes.Buffer
	if err := writeCompact(&compact, v); err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := json.Indent(&out, compact.Bytes(), "", indent); err != nil {
		return nil, err
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

func writeCompact(w *bytes.Buffer, v any) error {
	switch t := v.(type) {
	case *object:
		w.WriteByte('{')
		for i, m := range t.members {
			if i > 0 {
				w.WriteByte(',')
			}
			if err := writeCompact(w, m.key); err != nil {
				return err
			}
			w.WriteByte(':')
			if err := writeCompact(w, m.val); err != nil {
				return err
			}
		}
		w.WriteByte('}')
	case []any:
		w.WriteByte('[')
		for i, e := range t {
			if i > 0 {
				w.WriteByte(',')
			}
			if err := writeCompact(w, e); err != nil {
				return err
			}
		}
		w.WriteByte(']')
	default:
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(t); err != nil {
			return err
		}
		w.Truncate(w.Len() - 1) // Encode's newline
	}
	return nil
}

// indentOf is the indent of the file's first indented line ("  " when it
// has none).
func indentOf(b []byte) string {
	for _, line := range strings.Split(string(b), "\n") {
		trimmed := strings.TrimLeft(line, " \t")
		if trimmed != "" && len(trimmed) < len(line) {
			return line[:len(line)-len(trimmed)]
		}
	}
	return "  "
}
