package opencode

import (
	"context"
	"fmt"

	"github.com/agentctl/agentctl/adapters"
	"github.com/agentctl/agentctl/adapters/storeio"
)

// transcriptBatch is how many messages a transcript read fetches at a time,
// newest first.
const transcriptBatch = 50

// dbTranscript reads the last n messages of a session from the database
// (all when n <= 0), fetching messages newest first until n are found.
func dbTranscript(ctx context.Context, path, id string, n int) ([]adapters.Message, error) {
	db, err := storeio.OpenSQLiteReadOnly(ctx, path, 0)
	if err != nil {
		return nil, fmt.Errorf("read opencode session %s: %w", id, err)
	}
	defer db.Close()
	// batches holds each batch's messages, oldest first; the batches come
	// newest first.
	var batches [][]adapters.Message
	count := 0
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
		var batch []adapters.Message
		for i := len(msgs) - 1; i >= 0; i-- {
			batch = append(batch, entries(msgs[i].data, parts[msgs[i].id])...)
		}
		batches = append(batches, batch)
		count += len(batch)
		if (n > 0 && count >= n) || len(msgs) < transcriptBatch {
			break
		}
	}
	out := make([]adapters.Message, 0, count)
	for i := len(batches) - 1; i >= 0; i-- {
		out = append(out, batches[i]...)
	}
	if n > 0 && len(out) > n {
		out = out[len(out)-n:]
	}
	return out, nil
}
