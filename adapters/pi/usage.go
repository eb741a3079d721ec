package pi

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"

	"github.com/agentctl/agentctl/internal/jsonscan"
)

// usageKeys are usage's fields as JSON names them.
var usageKeys = [...]string{"input", "output", "cacheRead", "cacheWrite", "cost"}

// decodeUsage decodes a usage object as json.Unmarshal would, failing
// where it fails, without its reflection: a first read sums the usage of
// every assistant message of every session. Anything but plain keys and
// plain values goes to json.Unmarshal (FuzzDecodeUsage holds the two
// equal).
func decodeUsage(b []byte) (usage, error) {
	var u usage
	if i := jsonscan.Space(b, 0); i >= len(b) || b[i] != '{' {
		err := json.Unmarshal(b, &u) // null, or not an object
		return u, err
	}
	slow := false
	var typeErr bool
	end, err := jsonscan.Members(b, jsonscan.Space(b, 0), func(k, v []byte) {
		if slow {
			return
		}
		field := -1
		for i, name := range usageKeys {
			if len(k) == len(name) && bytes.EqualFold(k, []byte(name)) {
				field = i
			}
		}
		for _, c := range k {
			if c == '\\' || c >= 0x80 {
				slow = true // escapes and non-ASCII keys fold as only the decoder knows
				return
			}
		}
		switch {
		case field < 0 || v[0] == 'n':
			// Not a field, or null: nothing changes.
		case field == 4:
			c, ok, plain := decodeCost(v)
			switch {
			case !plain:
				slow = true
			case !ok:
				typeErr = true
			case c.known:
				u.Cost = c
			}
		case v[0] == '-' || v[0] >= '0' && v[0] <= '9':
			f, err := strconv.ParseFloat(string(v), 64)
			if err != nil {
				typeErr = true // out of range, as the decoder says
				return
			}
			*[...]*float64{&u.Input, &u.Output, &u.CacheRead, &u.CacheWrite}[field] = f
		default:
			typeErr = true
		}
	})
	if err == nil && jsonscan.Space(b, end) != len(b) {
		return usage{}, errUsageTrailing
	}
	if slow && err == nil {
		var u usage
		err := json.Unmarshal(b, &u)
		return u, err
	}
	if err != nil {
		return usage{}, err
	}
	if typeErr {
		return usage{}, errUsageType
	}
	return u, nil
}

// errUsageType marks a usage with a value of the wrong type, which
// json.Unmarshal refuses too.
var errUsageType = errors.New("usage: a value of the wrong type")

// errUsageTrailing marks a usage followed by more than white space.
var errUsageTrailing = errors.New("usage: data after the object")

// decodeCost is cost's UnmarshalJSON for a value that is not null: known
// is false when the value sets nothing; ok false when it fails; plain
// false when a key needs the decoder's judgement.
func decodeCost(v []byte) (c cost, ok, plain bool) {
	switch {
	case v[0] == '-' || v[0] >= '0' && v[0] <= '9':
		f, err := strconv.ParseFloat(string(v), 64)
		return cost{total: f, known: true}, err == nil, true
	case v[0] != '{':
		return cost{}, false, true
	}
	ok, plain = true, true
	jsonscan.Members(v, 0, func(k, tv []byte) {
		for _, ch := range k {
			if ch == '\\' || ch >= 0x80 {
				plain = false
			}
		}
		if !plain || len(k) != len("total") || !bytes.EqualFold(k, []byte("total")) {
			return
		}
		switch {
		case tv[0] == 'n':
			c = cost{} // a null total: none
		case tv[0] == '-' || tv[0] >= '0' && tv[0] <= '9':
			f, err := strconv.ParseFloat(string(tv), 64)
			if err != nil {
				ok = false
				return
			}
			c = cost{total: f, known: true}
		default:
			ok = false
		}
	})
	return c, ok, plain
}
