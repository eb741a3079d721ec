package client

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"sync"

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
		if dec, err = decodeSessions(dec, m, out, maxSessions, maxSession, what); err != nil {
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

// decodeSessions reads the sessions of a list, the array whose '[' is
// dec's next token. The sessions are cut apart as they come and decoded in
// batches across the cores while the rest arrives: decoding a large list
// one session after the other was most of what `list` spent. It returns
// the decoder to go on with the list's other fields.
func decodeSessions(dec *json.Decoder, m *meter, out *api.SessionList, maxSessions int, maxSession int64, what string) (*json.Decoder, error) {
	tok, err := dec.Token()
	if err != nil {
		return dec, err
	}
	if tok == nil {
		return dec, nil // "sessions": null
	}
	if d, ok := tok.(json.Delim); !ok || d != '[' {
		return dec, fmt.Errorf("sessions: %v, not a list", tok)
	}
	if out.Sessions == nil {
		out.Sessions = []api.Session{} // an empty list, not none
	}
	m.start(0) // each session's bound is the splitter's
	sp := &splitter{r: io.MultiReader(dec.Buffered(), m), max: maxSession}
	var batches []*sessionBatch
	work := make(chan *sessionBatch)
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range work {
				b.decode()
			}
		}()
	}
	// A list sized by the service's count is decoded into in place, batch
	// by batch, rather than copied there after: room is the space it has,
	// zero as make left it (DecodeJSON starts from a zero session).
	room := out.Sessions[:cap(out.Sessions)]
	send := func(b *sessionBatch, n int) {
		if b.at = n - len(b.ends); n <= len(room) {
			b.out, b.inPlace = room[b.at:n], true
		}
		batches = append(batches, b)
		work <- b
	}
	b := &sessionBatch{}
	n := len(out.Sessions)
	for {
		elem, done, err := sp.next()
		if err == nil && !done && n >= maxSessions {
			err = fmt.Errorf("%s: %w: more than %d sessions", what, ErrTooLarge, maxSessions)
		}
		if errors.Is(err, errSessionTooLarge) {
			err = fmt.Errorf("%s: a session %w of %s", what, ErrTooLarge, text.Bytes(maxSession))
		}
		if err != nil {
			close(work)
			wg.Wait()
			return dec, err
		}
		if done {
			break
		}
		n++
		b.add(elem)
		if len(b.ends) == batchSessions {
			send(b, n)
			// The next batch is about as long as this one.
			b = &sessionBatch{raw: make([]byte, 0, len(b.raw)+len(b.raw)/4)}
		}
	}
	if len(b.ends) > 0 {
		send(b, n)
	}
	close(work)
	// What follows the array, read on by a new decoder: the list's
	// other members as an object of their own.
	rest, err := sp.afterArray()
	wg.Wait()
	if err != nil {
		return dec, err
	}
	for _, b := range batches {
		if b.err != nil {
			return dec, b.err
		}
		if b.inPlace {
			out.Sessions = room[:b.at+len(b.out)]
			continue
		}
		out.Sessions = append(out.Sessions, b.out...)
	}
	dec = json.NewDecoder(rest)
	return dec, delim(dec, '{')
}

// batchSessions is how many sessions a worker decodes at a time.
const batchSessions = 256

// sessionBatch is sessions of a list as written, one after the other
// (each ends at its ends entry), and what decoding them gave: out, the
// list's own sessions from at when inPlace.
type sessionBatch struct {
	raw     []byte
	ends    []int
	at      int
	inPlace bool
	out     []api.Session
	err     error
}

func (b *sessionBatch) add(elem []byte) {
	b.raw = append(b.raw, elem...)
	b.ends = append(b.ends, len(b.raw))
}

func (b *sessionBatch) decode() {
	if b.out == nil {
		b.out = make([]api.Session, len(b.ends))
	}
	from := 0
	for i, end := range b.ends {
		if err := b.out[i].DecodeJSON(b.raw[from:end]); err != nil {
			b.err = err
			return
		}
		from = end
	}
}

// errSessionTooLarge marks a value of the array longer than its bound.
var errSessionTooLarge = errors.New("a value over its bound")

// splitter cuts the values of a JSON array apart as they are read, without
// decoding them: it follows strings and nesting only, and each value is
// checked by its decoder. A value longer than max fails it.
type splitter struct {
	r   io.Reader
	max int64
	buf []byte
	// pos is where the scan is in buf, start where the value being cut
	// began.
	pos, start int
	eof        bool
	// more says a value was cut already: the next is after a ','.
	more bool
}

// fill reads more into buf, keeping what follows start.
func (s *splitter) fill() error {
	if s.eof {
		return io.ErrUnexpectedEOF
	}
	if s.start > 0 {
		n := copy(s.buf, s.buf[s.start:])
		s.buf = s.buf[:n]
		s.pos -= s.start
		s.start = 0
	}
	if cap(s.buf)-len(s.buf) < 32<<10 {
		s.buf = slices.Grow(s.buf, max(64<<10, len(s.buf)))
	}
	n, err := s.r.Read(s.buf[len(s.buf):cap(s.buf)])
	s.buf = s.buf[:len(s.buf)+n]
	if errors.Is(err, io.EOF) {
		s.eof = true
		if n == 0 {
			return io.ErrUnexpectedEOF
		}
		return nil
	}
	return err
}

// peek skips white space and returns the next byte, not consumed.
func (s *splitter) peek() (byte, error) {
	for {
		for s.pos < len(s.buf) {
			switch c := s.buf[s.pos]; c {
			case ' ', '\t', '\n', '\r':
				s.pos++
			default:
				return c, nil
			}
		}
		s.start = s.pos
		if err := s.fill(); err != nil {
			return 0, err
		}
	}
}

// next returns the array's next value as written (valid until the next
// call), or done at its ']'.
func (s *splitter) next() (value []byte, done bool, err error) {
	value, done, err = s.cut()
	if err == nil && int64(len(value)) > s.max {
		return nil, false, errSessionTooLarge
	}
	return value, done, err
}

func (s *splitter) cut() (value []byte, done bool, err error) {
	c, err := s.peek()
	if err != nil {
		return nil, false, err
	}
	if c == ']' {
		s.pos++
		return nil, true, nil
	}
	if s.more {
		if c != ',' {
			return nil, false, fmt.Errorf("invalid character %q after an array element", c)
		}
		s.pos++
		if c, err = s.peek(); err != nil {
			return nil, false, err
		}
		if c == ']' {
			return nil, false, errors.New("invalid character ']' after a ',' in an array")
		}
	}
	s.more = true
	s.start = s.pos
	depth, inString := 0, false
	for {
		for s.pos < len(s.buf) {
			if inString {
				i := quoteOrBackslash(s.buf[s.pos:])
				if i < 0 {
					s.pos = len(s.buf)
					break
				}
				s.pos += i
				if s.buf[s.pos] == '\\' {
					if s.pos+1 >= len(s.buf) {
						break // the escaped byte is not read yet
					}
					s.pos += 2
					continue
				}
				inString = false
				s.pos++
				if depth == 0 {
					return s.buf[s.start:s.pos], false, nil
				}
				continue
			}
			switch c := s.buf[s.pos]; c {
			case '"':
				inString = true
			case '{', '[':
				depth++
			case '}', ']':
				if depth == 0 {
					return s.buf[s.start:s.pos], false, nil // a number or a word ends
				}
				depth--
				if depth == 0 {
					s.pos++
					return s.buf[s.start:s.pos], false, nil
				}
			case ',', ' ', '\t', '\n', '\r':
				if depth == 0 {
					return s.buf[s.start:s.pos], false, nil
				}
			}
			s.pos++
		}
		if int64(s.pos-s.start) > s.max {
			return nil, false, errSessionTooLarge
		}
		if err := s.fill(); err != nil {
			if s.eof && depth == 0 && !inString && s.pos > s.start {
				return s.buf[s.start:s.pos], false, nil
			}
			return nil, false, err
		}
	}
}

// quoteOrBackslash is the index of b's first '"' or '\\', or -1: two
// IndexByte calls, where IndexAny builds its set on every call.
func quoteOrBackslash(b []byte) int {
	q := bytes.IndexByte(b, '"')
	end := q
	if q < 0 {
		end = len(b)
	}
	if e := bytes.IndexByte(b[:end], '\\'); e >= 0 {
		return e
	}
	return q
}

// afterArray returns what follows the array's ']' as an object of its own:
// "{" and the members after the ',' (or "{}" at the list's end).
func (s *splitter) afterArray() (io.Reader, error) {
	c, err := s.peek()
	if err != nil {
		return nil, err
	}
	switch c {
	case ',':
		s.pos++
	case '}':
	default:
		return nil, fmt.Errorf("invalid character %q after the sessions", c)
	}
	return io.MultiReader(strings.NewReader("{"), bytes.NewReader(s.buf[s.pos:]), s.r), nil
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
