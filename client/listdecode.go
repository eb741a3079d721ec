package client

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/internal/text"
)

// DecodeList reads a list's answer from r within the bounds of a
// service's (maxListSessions sessions of at most maxListSession bytes
// each): for another source of lists (a cluster's helper). what names
// the answer in errors.
func DecodeList(r io.Reader, what string) (api.SessionList, error) {
	var out api.SessionList
	err := decodeList(r, &out, maxListSessions, maxListSession, what)
	return out, err
}

// decodeList reads a list's answer session by session, none of which may
// take more than maxSession bytes: whole, the decoder would hold the
// whole answer (up to the list's bound) in one buffer, and a single value
// without end (one endless string) would take all of it before failing.
// what names the answer in errors.
func decodeList(r io.Reader, out *api.SessionList, maxSessions int, maxSession int64, what string) error {
	m := &meter{r: r}
	m.start(maxSession)
	dec := json.NewDecoder(m)
	if err := delim(dec, '{'); err != nil {
		return err
	}
	// Whatever else the list holds (its warnings, any field a newer
	// service adds) is decoded at the end, as one object.
	rest := map[string]json.RawMessage{}
	for dec.More() {
		m.start(maxSession)
		tok, err := dec.Token()
		if err != nil {
			return m.explain(err, what, "a list's field name")
		}
		key, _ := tok.(string)
		m.start(maxSession)
		if key != "sessions" {
			var v json.RawMessage
			if err := dec.Decode(&v); err != nil {
				return m.explain(err, what, "a list's field")
			}
			rest[key] = v
			continue
		}
		if err := decodeSessions(dec, m, out, maxSessions, maxSession, what); err != nil {
			return err
		}
	}
	if err := delim(dec, '}'); err != nil {
		return err
	}
	if len(rest) == 0 {
		return nil
	}
	b, err := json.Marshal(rest)
	if err != nil {
		return err
	}
	sessions := out.Sessions
	err = json.Unmarshal(b, out)
	out.Sessions = sessions
	return err
}

func decodeSessions(dec *json.Decoder, m *meter, out *api.SessionList, maxSessions int, maxSession int64, what string) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if tok == nil {
		return nil // "sessions": null
	}
	if d, ok := tok.(json.Delim); !ok || d != '[' {
		return fmt.Errorf("sessions: %v, not a list", tok)
	}
	if out.Sessions == nil {
		out.Sessions = []api.Session{} // an empty list, not none
	}
	for dec.More() {
		if len(out.Sessions) >= maxSessions {
			return fmt.Errorf("%s: %w: more than %d sessions", what, ErrTooLarge, maxSessions)
		}
		m.start(maxSession)
		var s api.Session
		if err := dec.Decode(&s); err != nil {
			return m.explain(err, what, "a session")
		}
		out.Sessions = append(out.Sessions, s)
	}
	return delim(dec, ']')
}

func delim(dec *json.Decoder, want json.Delim) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if d, ok := tok.(json.Delim); !ok || d != want {
		return fmt.Errorf("%v where %v was expected", tok, want)
	}
	return nil
}

// meter counts what a decoder reads since the start of a value, and
// fails a read past that value's bound.
type meter struct {
	r        io.Reader
	n, max   int64
	exceeded bool
}

func (m *meter) start(max int64) { m.n, m.max = 0, max }

func (m *meter) Read(p []byte) (int, error) {
	if m.max > 0 && m.n > m.max {
		m.exceeded = true
		return 0, ErrTooLarge
	}
	n, err := m.r.Read(p)
	m.n += int64(n)
	return n, err
}

// explain says which bound a failed decode exceeded.
func (m *meter) explain(err error, answer, what string) error {
	if m.exceeded {
		return fmt.Errorf("%s: %s %w of %s", answer, what, ErrTooLarge, text.Bytes(m.max))
	}
	return err
}
