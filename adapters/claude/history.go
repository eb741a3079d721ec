package claude

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"

	"github.com/agentctl/agentctl/adapters/storeio"
)

// history.jsonl holds one line per prompt typed in an interactive session:
// {"display": text, "timestamp": ms, "project": cwd, "sessionId": id}. It is
// the fast index of first prompts for sessions whose transcript does not
// start with one (or has none yet). Headless (-p) runs do not write it.

type historyLine struct {
	Display   string `json:"display"`
	Timestamp int64  `json:"timestamp"`
	Project   string `json:"project"`
	SessionID string `json:"sessionId"`
}

type historyEntry struct {
	prompt string
	cwd    string
}

// historyIndex maps a session id to its first prompt, read incrementally.
type historyIndex struct {
	byID        map[string]historyEntry
	offset      int64
	fingerprint []byte
}

func readHistory(f *os.File, key storeio.FileKey, prev *storeio.Entry[historyIndex]) (historyIndex, error) {
	var h historyIndex
	if prev != nil && storeio.ResumeOffset(f, key, prev.Key, prev.Value.offset, prev.Value.fingerprint) > 0 {
		// Appended: continue on a copy, the cached index stays as it was.
		h.offset = prev.Value.offset
		h.byID = make(map[string]historyEntry, len(prev.Value.byID))
		for k, v := range prev.Value.byID {
			h.byID[k] = v
		}
	} else {
		h.byID = map[string]historyEntry{}
	}
	res, err := storeio.ScanLines(io.NewSectionReader(f, h.offset, key.Size-h.offset), maxLine, func(line []byte) error {
		var l historyLine
		if json.Unmarshal(line, &l) != nil || l.SessionID == "" || l.Display == "" {
			return nil
		}
		if _, ok := h.byID[l.SessionID]; !ok {
			h.byID[l.SessionID] = historyEntry{prompt: keep(l.Display), cwd: l.Project}
		}
		return nil
	})
	if err != nil {
		return historyIndex{}, err
	}
	h.offset += res.Consumed
	if h.fingerprint, err = storeio.Fingerprint(f, h.offset); err != nil {
		return historyIndex{}, err
	}
	return h, nil
}

// historyIndex returns the prompt index, empty when there is no history,
// and the key of the history's version it was read from (zero: none).
func (a *Adapter) historyIndex() (map[string]historyEntry, storeio.FileKey) {
	h, key, err := a.history.Get(filepath.Join(a.configDir(), "history.jsonl"), readHistory)
	if err != nil {
		return nil, storeio.FileKey{}
	}
	return h.byID, key
}
