package api

import (
	"encoding/binary"
	"fmt"
	"io"
)

// An attached terminal speaks in frames, from the session's monitor through
// the service to the client and back.
//
// A frame is one type byte, a big-endian uint32 length, and the payload.
const (
	FrameOutput = 'o' // monitor → client: terminal output
	FrameExit   = 'x' // monitor → client: the agent ended (payload: AttachExit JSON)
	FrameInput  = 'i' // client → monitor: bytes for the terminal
	FrameResize = 'r' // client → monitor: rows, cols as two big-endian uint16
)

// MaxFrame bounds a frame's payload so a broken peer cannot make us allocate
// without limit.
const MaxFrame = 1 << 20

// WriteFrame writes one frame.
func WriteFrame(w io.Writer, typ byte, payload []byte) error {
	var hdr [5]byte
	hdr[0] = typ
	binary.BigEndian.PutUint32(hdr[1:], uint32(len(payload)))
	if _, err := w.Write(hdr[:]); err != nil {
		return err
	}
	_, err := w.Write(payload)
	return err
}

// ReadFrame reads one frame.
func ReadFrame(r io.Reader) (byte, []byte, error) {
	var hdr [5]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(hdr[1:])
	if n > MaxFrame {
		return 0, nil, fmt.Errorf("frame of %d bytes exceeds the limit", n)
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(r, buf); err != nil {
		return 0, nil, err
	}
	return hdr[0], buf, nil
}

// ResizePayload encodes a window size for a FrameResize.
func ResizePayload(rows, cols uint16) []byte {
	b := make([]byte, 4)
	binary.BigEndian.PutUint16(b, rows)
	binary.BigEndian.PutUint16(b[2:], cols)
	return b
}

// AttachExit is FrameExit's payload: how the agent ended.
type AttachExit struct {
	ExitCode *int   `json:"exit_code,omitempty"`
	Signal   string `json:"signal,omitempty"`
}
