package opencode

import (
	"context"
	"fmt"

	"github.com/agentctl/agentctl/adapters"
)

// transcriptBatch is how many messages a transcript read fetches at a time,
// newest first.
const transcriptBatch = 50

// dbTranscript reads the last n messages of a session from the database
// (all when n <= 0), fetching messages newest first until n are found.
func dbTranscript(ctx context.Context, path, id string, n int) ([]adapters.Message, error) {
	db, err := adapters.OpenSQLiteReadOnly(ctx, path, 0)
	if err != nil {
		return nil, fmt.Errorf("read opencode session %s: %w", id, err)
	}
	defer db.Close()
	var out []adapters.Message
	for offset := 0; ; offset += transcriptBatch {
		msgs, err := queryMessages(ctx, db, "SELECT id, data FROM message WHERE session_id = ? ORDER BY time_created DESC, id DESC LIMIT ? OFFSET ?", id, transcriptBatch, offset)
		if err != nil {
			return nil, fmt.Errorf("read opencode session %s: %w", id, err)
		}
		if len(msgs) == 0 {
			break
		}
		ids := make([]string, len(msgs))
		for i, m := range msgs {
			ids[i] = m.id
		}
		parts, err := queryParts(ctx, db, ids)
		if err != nil {
			return nil, fmt.Errorf("read opencode session %s: %w", id, err)
		}
		for _, m := range msgs {
			out = append(entries(m.data, parts[m.id]), out...)
		}
		if n > 0 && len(out) >= n {
			return out[len(out)-n:], nil
		}
		if len(msgs) < transcriptBatch {
			break
		}
	}
	return out, nil
}
