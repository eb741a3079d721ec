// Package top is the live view of every session behind `agentctl top`: a
// state fed by one snapshot and the service's event stream, the rows it
// derives (ordered, filtered, grouped), the screen it renders, and the
// terminal program that drives it. It is written against client.Sessions
// (plus the event stream), so other hosts can feed it later.
package top

import (
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/agentctl/agentctl/api"
)

// State is what the view knows: every session by id, the warnings of the
// last snapshot, and the link to the service. It is only ever touched by
// the program's update loop.
type State struct {
	sessions map[string]api.Session
	// touched is the sequence number of the last event applied to each
	// session, so a snapshot older than it does not undo it.
	touched map[string]uint64
	// handles caches each id's shortest unique prefix; nil when stale.
	handles map[string]string
	// Warnings are the service's own (an adapter that failed or timed out).
	Warnings []string
	// Link says what is wrong with the connection to the service ("" when
	// the event stream is up).
	Link string
	// ListErr is why the last list request failed ("" when it did not).
	ListErr string
	// Seq is the last event sequence number applied.
	Seq uint64
	// Machine is the host's load and memory, as the last snapshot said
	// (nil when it did not).
	Machine *api.Machine
}

// NewState returns an empty state.
func NewState() *State {
	return &State{sessions: map[string]api.Session{}, touched: map[string]uint64{}}
}

// Len is the number of sessions known.
func (s *State) Len() int { return len(s.sessions) }

// Session returns the session with id.
func (s *State) Session(id string) (api.Session, bool) {
	v, ok := s.sessions[id]
	return v, ok
}

// Snapshot replaces everything known with a list answer: sessions missing
// from it are gone (pruned, or out of the window), so a reconnect neither
// keeps stale rows nor duplicates any. asOf is the last event sequence
// number applied when the list was asked for: a session changed by a later
// event keeps what that event said.
func (s *State) Snapshot(l api.SessionList, asOf uint64) {
	old := s.sessions
	s.sessions = make(map[string]api.Session, len(l.Sessions))
	for _, v := range l.Sessions {
		s.sessions[v.ID] = v
	}
	for id, seq := range s.touched {
		if seq <= asOf {
			delete(s.touched, id)
			continue
		}
		if v, ok := old[id]; ok {
			s.sessions[id] = v
		}
	}
	s.Warnings = slices.Clone(l.Warnings)
	s.Machine = l.Machine
	s.handles = nil
}

// Apply takes one event. It reports whether a row may have changed, and
// whether the view must take a new snapshot (events were lost).
func (s *State) Apply(e api.Event) (changed, resync bool) {
	if e.Seq > s.Seq {
		s.Seq = e.Seq
	}
	switch {
	case e.Type == api.EventGap:
		return false, true
	case !strings.HasPrefix(e.Type, "session."):
		return false, false
	case e.Session == nil:
		// A session event without its object says only that something
		// changed: read it again.
		return false, true
	}
	old, known := s.sessions[e.Session.ID]
	if !known {
		s.handles = nil
	}
	v := *e.Session
	// An event says what changed, not what the session costs: a running
	// session keeps the figures of the last snapshot until the next.
	if v.Resources == nil && v.Status == api.StatusRunning {
		v.Resources = old.Resources
	}
	s.sessions[e.Session.ID] = v
	s.touched[e.Session.ID] = e.Seq
	return true, false
}

// Grouping is how rows are gathered under headings.
type Grouping int

const (
	GroupNone Grouping = iota
	GroupByGroup
	GroupByAdapter
)

func (g Grouping) String() string {
	switch g {
	case GroupByGroup:
		return "group"
	case GroupByAdapter:
		return "adapter"
	}
	return "none"
}

// Next is the grouping the `g` key moves to.
func (g Grouping) Next() Grouping { return (g + 1) % 3 }

// ViewOptions select and arrange the rows.
type ViewOptions struct {
	ShowEnded bool
	// Filter keeps sessions whose handle, id, name, adapter, status,
	// group, model, cwd or prompt contains it (case-insensitive).
	Filter string
	Group  Grouping
}

// noGroup heads the sessions that have no group.
const noGroup = "(no group)"

// Rank orders rows: those that need a person first, then running ones,
// those nobody can vouch for, then ended ones.
type Rank int

const (
	RankNeedsYou Rank = iota
	RankRunning
	// RankQueued: admission holds it back; it starts when admitted.
	RankQueued
	RankUnknown
	RankEnded
)

// Row is one session as the table shows it.
type Row struct {
	api.Session
	Handle string
	Rank   Rank
	// Heading is the group's heading when the rows are grouped.
	Heading string
}

// Waiting reports whether a session asks for a person: its activity says
// it waits (for a permission, a question, the next instruction).
func Waiting(s api.Session) bool {
	return s.Status == api.StatusRunning && strings.HasPrefix(strings.ToLower(s.Activity), "waiting")
}

func rankOf(s api.Session) Rank {
	switch {
	case Waiting(s):
		return RankNeedsYou
	case s.Status == api.StatusRunning:
		return RankRunning
	case s.Status == api.StatusQueued:
		return RankQueued
	case s.Status.Ended():
		return RankEnded
	}
	return RankUnknown
}

// Rows derives the table: filtered, ordered by rank, then the most recent
// first, then id; grouped under headings when asked.
func (s *State) Rows(o ViewOptions) []Row {
	handles := s.Handles()
	filter := strings.ToLower(strings.TrimSpace(o.Filter))
	rows := make([]Row, 0, len(s.sessions))
	for id, v := range s.sessions {
		r := Row{Session: v, Handle: handles[id], Rank: rankOf(v)}
		if r.Rank == RankEnded && !o.ShowEnded {
			continue
		}
		if filter != "" && !matches(r, filter) {
			continue
		}
		switch o.Group {
		case GroupByGroup:
			r.Heading = r.Group
			if r.Heading == "" {
				r.Heading = noGroup
			}
		case GroupByAdapter:
			r.Heading = r.Adapter
		}
		rows = append(rows, r)
	}
	sort.Slice(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		if a.Heading != b.Heading {
			// Sessions without a group come after the groups.
			if (a.Heading == noGroup) != (b.Heading == noGroup) {
				return b.Heading == noGroup
			}
			return a.Heading < b.Heading
		}
		if a.Rank != b.Rank {
			return a.Rank < b.Rank
		}
		if ta, tb := recency(a.Session), recency(b.Session); !ta.Equal(tb) {
			return ta.After(tb)
		}
		return a.ID < b.ID
	})
	return rows
}

// recency is when a session last did something known: its end, its last
// activity, its start.
func recency(s api.Session) time.Time {
	switch {
	case s.EndedAt != nil:
		return *s.EndedAt
	case s.LastActivity != nil:
		return *s.LastActivity
	}
	return s.CreatedAt
}

func matches(r Row, filter string) bool {
	for _, f := range []string{r.Handle, r.ID, r.Name, r.Adapter, string(r.Status), r.Activity, r.Group, r.Model, r.Cwd, r.Prompt, strings.Join(r.Command, " ")} {
		if strings.Contains(strings.ToLower(f), filter) {
			return true
		}
	}
	return false
}

// minHandle is the shortest id prefix shown.
const minHandle = 6

// Handles names each session for a person: its name when it has a unique
// one, else the shortest prefix of its id no other id shares (what every
// command accepts).
func (s *State) Handles() map[string]string {
	if s.handles != nil {
		return s.handles
	}
	ids := make([]string, 0, len(s.sessions))
	names := map[string]int{}
	for id, v := range s.sessions {
		ids = append(ids, id)
		if v.Name != "" {
			names[v.Name]++
		}
	}
	sort.Strings(ids)
	h := make(map[string]string, len(ids))
	for i, id := range ids {
		if n := s.sessions[id].Name; n != "" && names[n] == 1 {
			h[id] = n
			continue
		}
		l := minHandle
		if i > 0 {
			l = max(l, commonPrefix(id, ids[i-1])+1)
		}
		if i+1 < len(ids) {
			l = max(l, commonPrefix(id, ids[i+1])+1)
		}
		h[id] = id[:min(l, len(id))]
	}
	s.handles = h
	return h
}

func commonPrefix(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// Counts is what the header sums up.
type Counts struct {
	Running, Waiting, Queued, Unknown, EndedToday int
	// CostToday sums the cost of the sessions active today; Costed says
	// whether any of them reported one.
	CostToday float64
	Costed    bool
	// CPUPercent and Memory add up the running sessions' figures;
	// Sampled says whether any had them.
	CPUPercent float64
	Memory     uint64
	Sampled    bool
}

// Limited counts the sessions a usage limit holds, by provider, with the
// latest reset each provider's limits give (zero when none does).
func (s *State) Limited() (held map[string]int, resets map[string]time.Time) {
	for _, v := range s.sessions {
		w := v.Waiting
		if w == nil || w.Limit == nil {
			continue
		}
		if held == nil {
			held, resets = map[string]int{}, map[string]time.Time{}
		}
		held[w.Limit.Provider]++
		if r := w.Limit.ResetsAt; r != nil && r.After(resets[w.Limit.Provider]) {
			resets[w.Limit.Provider] = *r
		}
	}
	return held, resets
}

// Count sums up every session known (not only the rows shown).
func (s *State) Count(now time.Time) Counts {
	var c Counts
	y, m, d := now.Date()
	today := time.Date(y, m, d, 0, 0, 0, 0, now.Location())
	for _, v := range s.sessions {
		switch rankOf(v) {
		case RankNeedsYou:
			c.Waiting++
			c.Running++
		case RankRunning:
			c.Running++
		case RankQueued:
			c.Queued++
		case RankUnknown:
			c.Unknown++
		case RankEnded:
			if v.EndedAt != nil && !v.EndedAt.Before(today) {
				c.EndedToday++
			}
		}
		if r := v.Resources; r != nil && v.Status == api.StatusRunning {
			if r.CPUPercent != nil {
				c.CPUPercent += *r.CPUPercent
			}
			if r.MemoryBytes != nil {
				c.Memory += *r.MemoryBytes
			}
			c.Sampled = true
		}
		if v.CostUSD != nil && (v.Status == api.StatusRunning || !recency(v).Before(today)) {
			c.CostToday += *v.CostUSD
			c.Costed = true
		}
	}
	return c
}
