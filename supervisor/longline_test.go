package supervisor

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/home"
	"github.com/agentctl/agentctl/logs"
)

// A session's output of one very long line without a line end is read in
// bounded pieces: the text view cuts it in lines of at most logs.MaxLine
// bytes, a tail of n lines is at most n of them, peek shows a bounded end
// of it and says it was cut, and a follower is shown the line unfinished.
func TestALongLineIsReadInBoundedPieces(t *testing.T) {
	h := newHome(t)
	svc := startService(t, h)
	const size = 3 << 20
	sess, err := svc.run(api.RunRequest{Command: []string{"sh", "-c", "head -c 3145728 /dev/zero | tr '\\0' x; printf END; sleep 300"}, Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(h.SessionDir(sess.ID), home.LogFile)
	eventually(t, 30*time.Second, "the whole line in the log", func() bool {
		st, err := os.Stat(logPath)
		return err == nil && st.Size() >= size+3
	})
	ctx := context.Background()

	read := func(o api.LogOptions) (text string, chunks, largest int) {
		t.Helper()
		var b strings.Builder
		err := svc.client.Logs(ctx, sess.ID, o, func(ch api.LogChunk) error {
			if ch.Text != "" {
				chunks++
				largest = max(largest, len(ch.Text))
				b.WriteString(ch.Text)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return b.String(), chunks, largest
	}
	all, chunks, largest := read(api.LogOptions{})
	if largest > logs.MaxLine || chunks < size/logs.MaxLine {
		t.Errorf("the text view came in %d chunks of up to %d bytes, want pieces of at most %d", chunks, largest, logs.MaxLine)
	}
	if strings.Count(all, "x") != size || !strings.HasSuffix(all, "END") {
		t.Errorf("the text view holds %d x and ends %q, want %d and END", strings.Count(all, "x"), all[max(len(all)-10, 0):], size)
	}
	if tail, _, _ := read(api.LogOptions{Lines: 5}); len(tail) > 5*logs.MaxLine || !strings.HasSuffix(tail, "END") {
		t.Errorf("the last 5 lines are %d bytes, want at most %d ending the output", len(tail), 5*logs.MaxLine)
	}

	tr, err := svc.client.Transcript(ctx, sess.ID, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Messages) != 1 || len(tr.Messages[0].Text) != 64<<10 || !strings.HasSuffix(tr.Messages[0].Text, "END") {
		t.Errorf("peek showed %d messages, the first of %d bytes; want one of 64 KiB, the output's end", len(tr.Messages), len(tr.Messages[0].Text))
	}
	if len(tr.Warnings) == 0 || !strings.Contains(tr.Warnings[0], "cut") {
		t.Errorf("peek warnings %q: want one saying the output was cut", tr.Warnings)
	}

	// Followed, the unfinished line shows once the output pauses.
	fctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var partial string
	err = svc.client.Logs(fctx, sess.ID, api.LogOptions{Lines: 1, Follow: true, Partial: true}, func(ch api.LogChunk) error {
		if ch.Partial {
			partial = ch.Text
			cancel()
		}
		return nil
	})
	if !strings.HasSuffix(partial, "END") || len(partial) > logs.MaxLine {
		t.Errorf("the followed partial line is %d bytes ending %q (%v): want the unfinished end of the line", len(partial), partial[max(len(partial)-10, 0):], err)
	}
}
