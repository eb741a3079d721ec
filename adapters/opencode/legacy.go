package opencode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/agentctl/agentctl/adapters"
	"github.com/agentctl/agentctl/adapters/storeio"
	"github.com/agentctl/agentctl/internal/text"
)

// The JSON tree OpenCode wrote before 1.0, under storage/:
//
//	session/<projectID>/<sessionID>.json   the session
//	message/<sessionID>/<messageID>.json   its messages
//	part/<messageID>/<partID>.json         their parts
//
// 1.x no longer writes it, so in practice it only changes when a user runs
// an old release; it is cached by file and folder stats all the same.

// maxJSONFile bounds one file of the tree.
const maxJSONFile = 32 << 20

// legacySessionFile is a storage/session file.
type legacySessionFile struct {
	ID        string `json:"id"`
	ParentID  string `json:"parentID"`
	Directory string `json:"directory"`
	Title     string `json:"title"`
	Time      struct {
		Created json.RawMessage `json:"created"`
		Updated json.RawMessage `json:"updated"`
	} `json:"time"`
}

// legacyDetails is what a session's messages say, with the stats it was
// read at.
type legacyDetails struct {
	sessionKey storeio.FileKey
	messageKey storeio.FileKey
	s          *session
}

type legacyStore struct {
	files *storeio.FileCache[*legacySessionFile]

	mu      sync.Mutex
	details map[string]legacyDetails // by session id
}

func newLegacyStore() *legacyStore {
	return &legacyStore{files: storeio.NewFileCache[*legacySessionFile](100_000), details: map[string]legacyDetails{}}
}

// readJSONFile decodes a small JSON file as far as it goes.
func readJSONFile(f io.Reader, v any) error {
	b, err := io.ReadAll(io.LimitReader(f, maxJSONFile+1))
	if err != nil {
		return err
	}
	if len(b) > maxJSONFile {
		return fmt.Errorf("over %d MB", maxJSONFile>>20)
	}
	return decodeJSON(b, v)
}

// load returns the sessions of the tree at root (none when it is absent).
func (l *legacyStore) load(ctx context.Context, root string) ([]*session, error) {
	projects, err := os.ReadDir(filepath.Join(root, "session"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read opencode storage: %w", err)
	}
	var out []*session
	seen := map[string]bool{}
	for _, p := range projects {
		if !p.IsDir() {
			continue
		}
		dir := filepath.Join(root, "session", p.Name())
		entries, err := os.ReadDir(dir)
		if err != nil {
			continue // vanished or unreadable: only its sessions are unknown
		}
		for _, e := range entries {
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("read opencode storage: %w", err)
			}
			if e.IsDir() || !strings.HasSuffix(e.Name(), ".json") {
				continue
			}
			path := filepath.Join(dir, e.Name())
			s := l.session(root, path)
			if s == nil {
				continue
			}
			seen[path] = true
			out = append(out, s)
		}
	}
	l.files.Retain(func(p string) bool { return seen[p] })
	return out, nil
}

// session reads one session file and its messages, from the cache when
// the file and the session's message folder are unchanged.
func (l *legacyStore) session(root, path string) *session {
	info, key, err := l.files.Get(path, func(f *os.File, _ storeio.FileKey, _ *storeio.Entry[*legacySessionFile]) (*legacySessionFile, error) {
		var v legacySessionFile
		if err := readJSONFile(f, &v); err != nil {
			return nil, fmt.Errorf("read %s: %w", path, err)
		}
		return &v, nil
	})
	id := strings.TrimSuffix(filepath.Base(path), ".json")
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return &session{id: id, path: path, warnings: []string{err.Error()}}
	}
	if info.ID != "" {
		id = info.ID
	}
	if info.ParentID != "" {
		return nil
	}
	msgDir := filepath.Join(root, "message", id)
	var msgKey storeio.FileKey
	if fi, err := os.Stat(msgDir); err == nil {
		msgKey = storeio.KeyOf(msgDir, fi)
	}
	l.mu.Lock()
	d, ok := l.details[id]
	l.mu.Unlock()
	if ok && d.sessionKey.Same(key) && d.messageKey.Same(msgKey) {
		return d.s
	}
	s := &session{id: id, path: path, directory: info.Directory, created: timeOf(info.Time.Created), updated: timeOf(info.Time.Updated)}
	msgs, err := readLegacyMessages(msgDir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		s.warnings = append(s.warnings, err.Error())
	}
	summarize(s, msgs, func(mid string) []partData { return readLegacyParts(filepath.Join(root, "part", mid)) })
	l.mu.Lock()
	l.details[id] = legacyDetails{sessionKey: key, messageKey: msgKey, s: s}
	l.mu.Unlock()
	return s
}

// summarize fills s from its messages (oldest first), reading parts only
// of the first message.
func summarize(s *session, msgs []messageData, parts func(id string) []partData) {
	if len(msgs) == 0 {
		return
	}
	if msgs[0].Role == "user" {
		s.firstPrompt = text.Ellipsis(textParts(parts(msgs[0].ID)), promptRunes)
	}
	s.last = lastOf(msgs[len(msgs)-1])
	var in, out, cost float64
	var anyTokens, anyCost bool
	for _, m := range msgs {
		if m.Role != "assistant" {
			continue
		}
		if m.ModelID != "" {
			s.model = joinModel(m.ProviderID, m.ModelID)
		}
		if m.Tokens != nil {
			i, ok1 := number(m.Tokens.Input)
			o, ok2 := number(m.Tokens.Output)
			if ok1 && ok2 {
				in, out, anyTokens = in+i, out+o, true
			}
		}
		if c, ok := number(m.Cost); ok {
			cost, anyCost = cost+c, true
		}
	}
	if anyTokens {
		s.tokensIn, s.tokensOut, s.hasTokens = int64(in), int64(out), true
	}
	if anyCost {
		s.cost, s.hasCost = cost, true
	}
}

// readLegacyMessages reads a session's message files, oldest first.
func readLegacyMessages(dir string) ([]messageData, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []messageData
	bad := 0
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		var m messageData
		f, err := os.Open(filepath.Join(dir, e.Name()))
		if err != nil {
			continue // vanished between the listing and the read
		}
		err = readJSONFile(f, &m)
		f.Close()
		if err != nil {
			bad++
			continue
		}
		if m.ID == "" {
			m.ID = strings.TrimSuffix(e.Name(), ".json")
		}
		out = append(out, m)
	}
	sort.SliceStable(out, func(i, j int) bool {
		ti, tj := timeOf(out[i].Time.Created), timeOf(out[j].Time.Created)
		if !ti.Equal(tj) {
			return ti.Before(tj)
		}
		return out[i].ID < out[j].ID
	})
	if bad > 0 {
		return out, fmt.Errorf("%d unreadable message files in %s", bad, dir)
	}
	return out, nil
}

// readLegacyParts reads a message's parts, in file name order; a part that
// is not JSON is kept as text.
func readLegacyParts(dir string) []partData {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []partData
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil || len(b) > maxJSONFile {
			continue
		}
		var p partData
		if decodeJSON(b, &p) != nil {
			if t := strings.TrimSpace(string(b)); t != "" && strings.ToValidUTF8(t, "") == t {
				raw, _ := json.Marshal(t)
				p = partData{Type: "text", Text: raw}
			} else {
				continue
			}
		}
		if p.Type == "" && len(p.Text) > 0 {
			p.Type = "text"
		}
		out = append(out, p)
	}
	return out
}

// transcript reads a legacy session's messages.
func (l *legacyStore) transcript(ctx context.Context, root, id string, n int) ([]adapters.Message, error) {
	msgs, err := readLegacyMessages(filepath.Join(root, "message", id))
	if err != nil && len(msgs) == 0 {
		return nil, fmt.Errorf("read opencode session %s: %w", id, err)
	}
	var out []adapters.Message
	for i := len(msgs) - 1; i >= 0; i-- {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("read opencode session %s: %w", id, err)
		}
		out = append(entries(msgs[i], readLegacyParts(filepath.Join(root, "part", msgs[i].ID))), out...)
		if n > 0 && len(out) >= n {
			return out[len(out)-n:], nil
		}
	}
	return out, nil
}
