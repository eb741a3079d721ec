package orchestrate

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/agentctl/agentctl/api"
)

// MemberStatus is one row of a group's comparison.
type MemberStatus struct {
	Session  api.Session `json:"session"`
	Member   string      `json:"member,omitempty"`
	Branch   string      `json:"branch,omitempty"`
	Worktree string      `json:"worktree,omitempty"`
	// DurationS is how long the session ran (so far, while it runs), in
	// seconds; nil when its start is unknown.
	DurationS *float64 `json:"duration_s,omitempty"`
	// Diff is the size of the worktree's changes against the commit the
	// member's branch started from; nil when unknown, and DiffError says
	// why.
	Diff      *DiffStat `json:"diff,omitempty"`
	DiffError string    `json:"diff_error,omitempty"`
}

// GroupStatus compares a group's sessions: status, duration, tokens and
// cost come with the sessions; the diff of each member's worktree is
// measured now. Rows are in start order.
func GroupStatus(ctx context.Context, sessions []api.Session, now time.Time) []MemberStatus {
	rows := make([]MemberStatus, len(sessions))
	var wg sync.WaitGroup
	for i, s := range sessions {
		r := &rows[i]
		r.Session = s
		r.Member = s.Labels[LabelMember]
		r.Branch = s.Labels[LabelBranch]
		r.Worktree = s.Labels[LabelWorktree]
		r.DurationS = duration(s, now)
		base := s.Labels[LabelBaseCommit]
		if r.Worktree == "" || base == "" {
			r.DiffError = "not started in a worktree by agentctl"
			continue
		}
		if _, err := os.Stat(r.Worktree); errors.Is(err, fs.ErrNotExist) {
			r.DiffError = "worktree removed"
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			d, err := Diff(ctx, r.Worktree, base)
			if err != nil {
				r.DiffError = err.Error()
				return
			}
			r.Diff = &d
		}()
	}
	wg.Wait()
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].Session.CreatedAt.Before(rows[j].Session.CreatedAt) })
	return rows
}

func duration(s api.Session, now time.Time) *float64 {
	start := s.CreatedAt
	if s.StartTime != nil {
		start = *s.StartTime
	}
	if start.IsZero() {
		return nil
	}
	end := now
	if s.EndedAt != nil {
		end = *s.EndedAt
	} else if s.Status.Ended() {
		// Ended with no end time known (a discovered or lost session):
		// how long it ran is unknown.
		return nil
	}
	d := end.Sub(start).Seconds()
	if d < 0 {
		d = 0
	}
	return &d
}
