package client

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"

	"github.com/agentctl/agentctl/api"
)

// dataChunk is how the service writes a chunk that carries only bytes.
var (
	dataHead = []byte(`{"data":"`)
	dataTail = []byte(`"}`)
)

// decodeLogChunk decodes one line of a log stream. The common chunk, bytes
// only, is decoded straight from its base64: the general JSON decoder
// checks every byte first, which made it the slowest part of a large tail.
func decodeLogChunk(line []byte) (api.LogChunk, error) {
	if bytes.HasPrefix(line, dataHead) && bytes.HasSuffix(line, dataTail) {
		b64 := line[len(dataHead) : len(line)-len(dataTail)]
		if bytes.IndexByte(b64, '"') < 0 && bytes.IndexByte(b64, '\\') < 0 {
			data := make([]byte, base64.StdEncoding.DecodedLen(len(b64)))
			n, err := base64.StdEncoding.Decode(data, b64)
			if err == nil {
				return api.LogChunk{Data: data[:n]}, nil
			}
		}
	}
	var ch api.LogChunk
	if err := json.Unmarshal(line, &ch); err != nil {
		return ch, fmt.Errorf("decode a log chunk: %w", err)
	}
	return ch, nil
}
