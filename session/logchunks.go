package session

import (
	"bytes"

	"github.com/agentctl/agentctl/api"
)

// maxChunk bounds the bytes one log chunk carries: a tail of any size is a
// stream of chunks, never one message a client must hold whole.
const maxChunk = 64 << 10

// sendRaw emits b in chunks of at most maxChunk bytes.
func sendRaw(b []byte, emit func(api.LogChunk) error) error {
	for len(b) > 0 {
		n := min(len(b), maxChunk)
		if err := emit(api.LogChunk{Data: b[:n]}); err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}

// sendText emits text, whole lines each ending in a newline, in chunks of
// about maxChunk bytes cut at line ends, each without its final newline.
func sendText(text []byte, asData bool, emit func(api.LogChunk) error) error {
	for len(text) > 0 {
		n := len(text)
		if n > maxChunk {
			// The last line end within maxChunk; a longer line goes whole.
			if i := bytes.LastIndexByte(text[:maxChunk], '\n'); i >= 0 {
				n = i + 1
			} else if i := bytes.IndexByte(text, '\n'); i >= 0 {
				n = i + 1
			}
		}
		if err := emit(textChunk(string(text[:n-1]), asData, false)); err != nil {
			return err
		}
		text = text[n:]
	}
	return nil
}

// textChunk carries text in Text, or in Data when asData.
func textChunk(text string, asData, partial bool) api.LogChunk {
	if asData {
		return api.LogChunk{Data: []byte(text), Partial: partial}
	}
	return api.LogChunk{Text: text, Partial: partial}
}
