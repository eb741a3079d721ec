package attribute

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/agentctl/agentctl/adapters"
)

var t0 = time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)

func at(sec int) time.Time { return t0.Add(time.Duration(sec) * time.Second) }

// tui is a process started at sec in /p.
func tui(pid, sec int) Proc {
	return Proc{PID: pid, Stamp: uint64(pid), Start: at(sec), Dirs: []string{"/p"}}
}

// sess is a session of /p begun at created, last written at updated.
func sess(id string, created, updated int) Session {
	return Session{ID: id, Dir: "/p", Created: at(created), Updated: at(updated)}
}

// want is the expected outcome of one session: its verdict, the pids that
// may hold it, and the evidence of a tie.
type want struct {
	verdict Verdict
	pids    []int
	by      string
}

func TestSolve(t *testing.T) {
	t.Parallel()
	resumes := func(p Proc) Proc { p.Resumes = true; return p }
	pin := func(p Proc, id, by string) Proc { p.Pin, p.PinBy = id, by; return p }
	only := func(p Proc, ids ...string) Proc { p.Only, p.OnlyBy = append([]string{}, ids...), "argv"; return p }
	held := func(p Proc, sec int, ids ...string) Proc { p.Held, p.HeldAt = ids, at(sec); return p }
	// ended is a process that held one of ids at 0 and was first seen
	// gone at sec.
	ended := func(pid, sec int, ids ...string) Proc {
		return Proc{PID: pid, Stamp: uint64(pid), Dirs: []string{"/p"}, Held: ids, Ended: at(sec)}
	}
	elsewhere := func(s Session) Session { s.Dir = "/q"; return s }
	cases := []struct {
		name     string
		procs    []Proc
		sessions []Session
		want     map[string]want // sessions absent: no candidate (ended)
		ties     map[int]string  // pid -> session
	}{
		{
			name:     "one TUI, its one session",
			procs:    []Proc{tui(1, 0)},
			sessions: []Session{sess("a", 1, 3)},
			want:     map[string]want{"a": {Running, []int{1}, ByProof}},
			ties:     map[int]string{1: "a"},
		},
		{
			name:     "a session begun before the process started is not its own",
			procs:    []Proc{tui(1, 10)},
			sessions: []Session{sess("old", 0, 20)},
			want:     map[string]want{},
		},
		{
			name:     "a session of another folder is not its own",
			procs:    []Proc{tui(1, 0)},
			sessions: []Session{elsewhere(sess("a", 1, 3))},
			want:     map[string]want{},
		},
		{
			// Issue 24: two hand-started TUIs of one agent in one folder.
			name:     "two TUIs in one folder: each tied to its own",
			procs:    []Proc{tui(1, 0), tui(2, 10)},
			sessions: []Session{sess("a", 1, 30), sess("b", 11, 12)},
			want:     map[string]want{"a": {Running, []int{1}, ByProof}, "b": {Running, []int{2}, ByProof}},
			ties:     map[int]string{1: "a", 2: "b"},
		},
		{
			name:     "two TUIs started in the same second: both running, which pid is open",
			procs:    []Proc{tui(1, 0), tui(2, 1)},
			sessions: []Session{sess("a", 2, 30), sess("b", 3, 31)},
			want:     map[string]want{"a": {Running, []int{1, 2}, ""}, "b": {Running, []int{1, 2}, ""}},
			ties:     map[int]string{},
		},
		{
			name:     "two TUIs that hide their arguments, both written since both started: running, pid 1 or 2",
			procs:    []Proc{resumes(tui(1, 0)), resumes(tui(2, 10))},
			sessions: []Session{sess("a", 1, 20), sess("b", 11, 21)},
			want:     map[string]want{"a": {Running, []int{1, 2}, ""}, "b": {Running, []int{1, 2}, ""}},
			ties:     map[int]string{},
		},
		{
			name:     "two TUIs once told apart stay tied (memory)",
			procs:    []Proc{held(resumes(tui(1, 0)), 15, "a"), held(resumes(tui(2, 10)), 15, "b")},
			sessions: []Session{sess("a", 1, 20), sess("b", 11, 21)},
			want:     map[string]want{"a": {Running, []int{1}, ByHeld}, "b": {Running, []int{2}, ByHeld}},
			ties:     map[int]string{1: "a", 2: "b"},
		},
		{
			// Issue 24: after one of two TUIs quits, the other stays tied and
			// the quitter's session ends at once.
			name:     "one of two TUIs quits: the survivor stays tied, the quitter's session ends",
			procs:    []Proc{held(resumes(tui(1, 0)), 15, "a"), ended(2, 45, "b")},
			sessions: []Session{sess("a", 1, 20), sess("b", 11, 40)},
			want:     map[string]want{"a": {Running, []int{1}, ByHeld}, "b": {Ended, nil, ""}},
			ties:     map[int]string{1: "a"},
		},
		{
			name:     "of two TUIs holding one of two sessions each, one quits: which is left is unknown",
			procs:    []Proc{held(resumes(tui(1, 0)), 15, "a", "b"), ended(2, 30, "a", "b")},
			sessions: []Session{sess("a", 1, 20), sess("b", 11, 21)},
			want:     map[string]want{"a": {Unknown, []int{1}, ""}, "b": {Unknown, []int{1}, ""}},
			ties:     map[int]string{},
		},
		{
			name:     "of two TUIs holding one of two sessions each, one quits: the session written after its end is the survivor's",
			procs:    []Proc{held(resumes(tui(1, 0)), 15, "a", "b"), ended(2, 30, "a", "b")},
			sessions: []Session{sess("a", 1, 20), sess("b", 11, 40)},
			want:     map[string]want{"a": {Ended, nil, ""}, "b": {Running, []int{1}, ByHeld}},
			ties:     map[int]string{1: "b"},
		},
		{
			name:     "a TUI that made a session after it was tied (/new) holds the new one",
			procs:    []Proc{held(tui(1, 0), 15, "a")},
			sessions: []Session{sess("a", 1, 20), sess("c", 30, 31)},
			want:     map[string]want{"a": {Ended, nil, ""}, "c": {Running, []int{1}, ByProof}},
			ties:     map[int]string{1: "c"},
		},
		{
			name:     "a TUI with two sessions holds the latest written",
			procs:    []Proc{tui(1, 0)},
			sessions: []Session{sess("a", 1, 5), sess("b", 11, 30)},
			want:     map[string]want{"a": {Ended, nil, ""}, "b": {Running, []int{1}, ByProof}},
			ties:     map[int]string{1: "b"},
		},
		{
			name:     "a TUI with two sessions last written at the same moment: unknown",
			procs:    []Proc{tui(1, 0)},
			sessions: []Session{sess("a", 1, 5), sess("b", 2, 5)},
			want:     map[string]want{"a": {Unknown, []int{1}, ""}, "b": {Unknown, []int{1}, ""}},
			ties:     map[int]string{},
		},
		{
			// Issue 24: a one-shot beside a TUI; the one-shot's argv prompt
			// pins exactly one session.
			name:     "a one-shot beside a TUI: its prompt ties it, and the TUI is left its own",
			procs:    []Proc{tui(1, 0), only(tui(2, 10), "o")},
			sessions: []Session{sess("t", 1, 5), sess("o", 11, 12)},
			want:     map[string]want{"t": {Running, []int{1}, ByProof}, "o": {Running, []int{2}, "argv"}},
			ties:     map[int]string{1: "t", 2: "o"},
		},
		{
			name:     "a one-shot whose session is not written yet leaves the TUI its own",
			procs:    []Proc{tui(1, 0), only(tui(2, 10))},
			sessions: []Session{sess("t", 1, 12)},
			want:     map[string]want{"t": {Running, []int{1}, ByProof}},
			ties:     map[int]string{1: "t"},
		},
		{
			// Issue 24: the finished one-shot stayed unknown until the TUI
			// quit.
			name:     "a finished one-shot beside a TUI: ended, and the TUI keeps its own",
			procs:    []Proc{held(tui(1, 0), 12, "t"), ended(2, 25, "o")},
			sessions: []Session{sess("t", 1, 5), sess("o", 11, 20)},
			want:     map[string]want{"t": {Running, []int{1}, ByHeld}, "o": {Ended, nil, ""}},
			ties:     map[int]string{1: "t"},
		},
		{
			// Issue 24: `opencode --continue` by hand read ended while its
			// turn ran; `pi -c` with one TUI and one session read unknown.
			name:     "--continue of an older session, written since it started",
			procs:    []Proc{resumes(tui(1, 10))},
			sessions: []Session{sess("old", 0, 12)},
			want:     map[string]want{"old": {Running, []int{1}, ByProof}},
			ties:     map[int]string{1: "old"},
		},
		{
			name:     "--continue not yet written: the older session is not shown running",
			procs:    []Proc{resumes(tui(1, 10))},
			sessions: []Session{sess("old", 0, 5)},
			want:     map[string]want{},
		},
		{
			// Issue 24: a launched OpenCode TUI made hand-started ones in its
			// folder unknown although its session was known from its server.
			name:     "a launched TUI pinned by its launch record leaves hand-started ones theirs",
			procs:    []Proc{pin(tui(1, 0), "l", "launch"), tui(2, 5)},
			sessions: []Session{sess("l", 1, 30), sess("h", 6, 7)},
			want:     map[string]want{"l": {Running, []int{1}, "launch"}, "h": {Running, []int{2}, ByProof}},
			ties:     map[int]string{1: "l", 2: "h"},
		},
		{
			name:     "a pin to a session not in the store yet: it holds none of those there",
			procs:    []Proc{pin(tui(1, 0), "x", "argv")},
			sessions: []Session{sess("a", 1, 3)},
			want:     map[string]want{},
		},
		{
			name:     "a pin holds a released session",
			procs:    []Proc{pin(tui(1, 10), "a", "argv"), ended(2, 5, "a")},
			sessions: []Session{sess("a", 1, 3)},
			want:     map[string]want{"a": {Running, []int{1}, "argv"}},
			ties:     map[int]string{1: "a"},
		},
		{
			name:     "two processes pinned to one session: running, pid 1 or 2",
			procs:    []Proc{pin(tui(1, 0), "a", "argv"), pin(tui(2, 0), "a", "argv")},
			sessions: []Session{sess("a", 1, 3)},
			want:     map[string]want{"a": {Running, []int{1, 2}, ""}},
			ties:     map[int]string{},
		},
		{
			name:     "a process in any folder when its own cannot be read",
			procs:    []Proc{{PID: 1, Start: at(0)}},
			sessions: []Session{elsewhere(sess("a", 1, 3))},
			want:     map[string]want{"a": {Running, []int{1}, ByProof}},
			ties:     map[int]string{1: "a"},
		},
		{
			name:     "one TUI, a session it may have made and an older one: the older is not its own",
			procs:    []Proc{tui(1, 10)},
			sessions: []Session{sess("old", 0, 5), sess("a", 11, 12)},
			want:     map[string]want{"a": {Running, []int{1}, ByProof}},
			ties:     map[int]string{1: "a"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res := Solve(tc.procs, tc.sessions)
			got := map[string]want{}
			for id, o := range res.Sessions {
				w := want{verdict: o.Verdict, pids: PIDs(tc.procs, o.Holders)}
				if len(w.pids) == 0 {
					w.pids = nil
				}
				if o.Tied() {
					w.by = o.By
				}
				got[id] = w
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("sessions:\n got %v\nwant %v", got, tc.want)
			}
			ties := map[int]string{}
			for i, id := range res.Procs {
				ties[tc.procs[i].PID] = id
			}
			if tc.ties == nil {
				tc.ties = map[int]string{}
			}
			if !reflect.DeepEqual(ties, tc.ties) {
				t.Errorf("ties: got %v, want %v", ties, tc.ties)
			}
			for id, o := range res.Sessions {
				if o.Verdict == Unknown && o.Reason == "" {
					t.Errorf("%s is unknown without a reason", id)
				}
			}
		})
	}
}

// TestSolveMatchesEnumeration compares Solve with the definition, read
// plainly: every map of processes to sessions (or none) is tried, those
// breaking a fact are dropped, and of the rest those giving the most
// processes a session are the consistent ones.
func TestSolveMatchesEnumeration(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(24, 1))
	for n := range 3000 {
		procs, sessions := randomInstance(rng)
		got := Solve(procs, sessions)
		want := enumerate(procs, sessions)
		if !reflect.DeepEqual(verdicts(got, sessions), want.verdicts) || !reflect.DeepEqual(got.Procs, want.ties) {
			t.Fatalf("instance %d:\nprocs %+v\nsessions %+v\nsolve   %v %v\nenumerate %v %v", n, procs, sessions,
				verdicts(got, sessions), got.Procs, want.verdicts, want.ties)
		}
	}
}

type enumerated struct {
	verdicts map[string]string // id -> verdict and holders
	ties     map[int]string
}

func verdicts(r Result, sessions []Session) map[string]string {
	out := map[string]string{}
	for _, s := range sessions {
		o, ok := r.Sessions[s.ID]
		if !ok || o.Verdict == Ended {
			out[s.ID] = string(Ended)
			continue
		}
		out[s.ID] = fmt.Sprint(o.Verdict, o.Holders)
	}
	return out
}

// allowed is the facts about one pair, written apart from may.
func allowed(procs []Proc, i int, s Session) bool {
	p := procs[i]
	if p.Pin != "" {
		return p.Pin == s.ID
	}
	for k, q := range procs {
		if k == i {
			continue
		}
		if q.Pin == s.ID {
			return false
		}
		if q.Pin == "" && len(q.Held) == 1 && q.Held[0] == s.ID && (q.Ended.IsZero() || s.Updated.Compare(q.Ended) <= 0) {
			return false
		}
	}
	switch {
	case !p.Ended.IsZero():
		return slices.Contains(p.Held, s.ID) && s.Updated.Compare(p.Ended) <= 0
	case len(p.Dirs) > 0 && p.Dirs[0] != s.Dir:
		return false
	case p.Only != nil && !slices.Contains(p.Only, s.ID):
		return false
	case len(p.Held) > 0:
		return slices.Contains(p.Held, s.ID) || s.Created.Add(Slack).Compare(p.HeldAt) >= 0
	}
	return s.Created.Add(Slack).Compare(p.Start) >= 0 || (p.Resumes && s.Updated.Add(Slack).Compare(p.Start) >= 0)
}

func enumerate(procs []Proc, sessions []Session) enumerated {
	n, m := len(procs), len(sessions)
	var consistent [][]int
	best := -1
	assign := make([]int, n)
	total := 1
	for range n {
		total *= m + 1
	}
	for code := range total {
		c := code
		for i := range assign {
			assign[i] = c%(m+1) - 1
			c /= m + 1
		}
		ok, size := true, 0
		used := map[int]bool{}
		for i, j := range assign {
			if j < 0 {
				continue
			}
			if used[j] || !allowed(procs, i, sessions[j]) {
				ok = false
				break
			}
			used[j] = true
			size++
		}
		// Each live process holds the latest written it could hold that
		// no other holds; none only when every one it could hold is held.
		for i, j := range assign {
			if !procs[i].Ended.IsZero() {
				continue
			}
			for k, s := range sessions {
				if !ok {
					break
				}
				if used[k] || !allowed(procs, i, s) {
					continue
				}
				if j < 0 || s.Updated.After(sessions[j].Updated) {
					ok = false
				}
			}
		}
		if !ok || size < best {
			continue
		}
		if size > best {
			best, consistent = size, nil
		}
		consistent = append(consistent, slices.Clone(assign))
	}
	out := enumerated{verdicts: map[string]string{}, ties: map[int]string{}}
	for j, s := range sessions {
		holders := map[int]bool{}
		held := 0
		for _, a := range consistent {
			for i, k := range a {
				if k == j && procs[i].Ended.IsZero() {
					holders[i] = true
					held++
				}
			}
		}
		switch {
		case held == 0:
			out.verdicts[s.ID] = string(Ended)
		case held == len(consistent):
			out.verdicts[s.ID] = fmt.Sprint(Running, sortedKeys(holders))
		default:
			out.verdicts[s.ID] = fmt.Sprint(Unknown, sortedKeys(holders))
		}
	}
	for i := range procs {
		if !procs[i].Ended.IsZero() {
			continue
		}
		first, same := -2, true
		for _, a := range consistent {
			if first == -2 {
				first = a[i]
			} else if a[i] != first {
				same = false
			}
		}
		if same && first >= 0 && running(out.verdicts[sessions[first].ID]) {
			out.ties[i] = sessions[first].ID
		}
	}
	return out
}

func running(verdict string) bool {
	return len(verdict) >= len(Running) && verdict[:len(Running)] == string(Running)
}

// randomInstance is a small folder or two: up to 4 processes and 5
// sessions on a coarse clock (so Slack matters), with pins, prompts,
// resumes, proven pairs and releases drawn at random.
func randomInstance(rng *rand.Rand) ([]Proc, []Session) {
	dirs := []string{"/p", "/q"}
	sessions := make([]Session, rng.IntN(6))
	for j := range sessions {
		c := rng.IntN(10)
		sessions[j] = Session{ID: fmt.Sprintf("s%d", j), Dir: dirs[rng.IntN(4)/3], Created: at(c), Updated: at(c + rng.IntN(6))}
	}
	procs := make([]Proc, rng.IntN(5))
	for i := range procs {
		p := Proc{PID: 100 + i, Stamp: uint64(i), Start: at(rng.IntN(10)), Resumes: rng.IntN(3) == 0}
		if rng.IntN(6) > 0 {
			p.Dirs = []string{dirs[rng.IntN(4)/3]}
		}
		if len(sessions) > 0 {
			switch rng.IntN(8) {
			case 0:
				p.Pin = sessions[rng.IntN(len(sessions))].ID
			case 1:
				p.Pin = "missing"
			case 2:
				p.Only = []string{sessions[rng.IntN(len(sessions))].ID}
			case 3:
				p.Only = []string{}
			case 4, 5:
				for _, s := range sessions {
					if rng.IntN(2) == 0 {
						p.Held = append(p.Held, s.ID)
					}
				}
				p.HeldAt = at(rng.IntN(12))
				if rng.IntN(2) == 0 {
					p.Ended = at(rng.IntN(16))
				}
			}
		}
		procs[i] = p
	}
	return procs, sessions
}

func TestMemoryKeepsWhatWasProven(t *testing.T) {
	t.Parallel()
	var m Memory
	a, b := tui(1, 0), tui(2, 10)
	a.Resumes, b.Resumes = true, true
	solve := func(now int, procs []Proc, ss []Session) ([]Proc, Result) {
		return m.Solve(at(now), procs, ss)
	}
	// Each wrote alone: told apart, and remembered.
	_, res := solve(13, []Proc{a, b}, []Session{sess("a", 1, 5), sess("b", 11, 12)})
	if !res.Sessions["a"].Tied() || !res.Sessions["b"].Tied() {
		t.Fatalf("not told apart: %+v", res.Sessions)
	}
	// Both write again: alone, that would leave which pid open.
	ss := []Session{sess("a", 1, 20), sess("b", 11, 21)}
	if res := Solve([]Proc{a, b}, ss); res.Sessions["a"].Tied() {
		t.Fatalf("the facts of the moment alone tie a: %+v", res.Sessions)
	}
	ps, res := solve(22, []Proc{a, b}, ss)
	if o := res.Sessions["a"]; !o.Tied() || ps[o.Holders[0]].PID != 1 || o.By != ByHeld {
		t.Fatalf("a: %+v", o)
	}
	// b quits after writing last: its session ends, a keeps its own.
	_, res = solve(23, []Proc{a}, ss)
	if o := res.Sessions["a"]; !o.Tied() || o.By != ByHeld {
		t.Fatalf("a after b quit: %+v", o)
	}
	if o, ok := res.Sessions["b"]; ok && o.Verdict != Ended {
		t.Fatalf("b after b quit: %+v", o)
	}
	// Written again after b ended: someone resumed it, and b no longer
	// stands for it.
	ss[1].Updated = at(30)
	if ps := m.Apply(at(31), []Proc{a}, ss); len(ps) != 1 {
		t.Fatalf("b still stands for a session written after its end: %+v", ps)
	}
}

// Two TUIs that were never told apart each hold one of two sessions; when
// one quits, which is left is unknown until the survivor writes.
func TestMemoryOfTwoUntiedTUIs(t *testing.T) {
	t.Parallel()
	var m Memory
	a, b := tui(1, 0), tui(2, 1)
	ss := []Session{sess("a", 2, 20), sess("b", 3, 21)}
	_, res := m.Solve(at(22), []Proc{a, b}, ss)
	if o := res.Sessions["a"]; o.Verdict != Running || len(o.Holders) != 2 {
		t.Fatalf("a while both live: %+v", o)
	}
	_, res = m.Solve(at(23), []Proc{a}, ss)
	if res.Sessions["a"].Verdict != Unknown || res.Sessions["b"].Verdict != Unknown {
		t.Fatalf("after b quit, before a writes: %+v", res.Sessions)
	}
	ss[0].Updated = at(30)
	_, res = m.Solve(at(31), []Proc{a}, ss)
	if o := res.Sessions["a"]; !o.Tied() {
		t.Fatalf("a, written after b's end: %+v", o)
	}
	if o := res.Sessions["b"]; o.Verdict != Ended {
		t.Fatalf("b, which b took with it: %+v", o)
	}
}

// Issue 25: an integration's report (adapters.HookTie) pins its process to
// the session it names, first-hand: two TUIs in one folder, each with a
// session begun after both started, are each tied (the other by proof);
// a report naming a session the store does not have yet says its process
// holds none of the store's; a tie of another process, or of a process
// started again under the same pid, pins nothing.
func TestPinTies(t *testing.T) {
	t.Parallel()
	tie := func(pid int, stamp uint64, id string) adapters.HookTie {
		return adapters.HookTie{PID: pid, Start: stamp, NativeID: id, Event: "session.status", At: t0}
	}
	by := tie(0, 0, "").Source()
	two := []Session{sess("a", 2, 5), sess("b", 3, 6)}
	cases := []struct {
		name string
		ties []adapters.HookTie
		key  func(string) string
		want map[string]want
	}{
		{"no report: which TUI holds which is open", nil, nil,
			map[string]want{"a": {Running, []int{1, 2}, ""}, "b": {Running, []int{1, 2}, ""}}},
		{"a report of pid 1 ties both", []adapters.HookTie{tie(1, 1, "a")}, nil,
			map[string]want{"a": {Running, []int{1}, by}, "b": {Running, []int{2}, ByProof}}},
		{"through the adapter's key", []adapters.HookTie{tie(2, 2, "B")}, func(id string) string { return map[string]string{"B": "b"}[id] },
			map[string]want{"a": {Running, []int{1}, ByProof}, "b": {Running, []int{2}, by}}},
		{"a session not in the store yet", []adapters.HookTie{tie(2, 2, "c")}, func(string) string { return "" },
			map[string]want{"a": {Ended, nil, ""}, "b": {Running, []int{1}, ByProof}}},
		{"another start of pid 1", []adapters.HookTie{tie(1, 99, "a")}, nil,
			map[string]want{"a": {Running, []int{1, 2}, ""}, "b": {Running, []int{1, 2}, ""}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			procs := []Proc{tui(1, 0), tui(2, 1)}
			PinTies(procs, tc.ties, tc.key)
			res := Solve(procs, two)
			for id, w := range tc.want {
				o, ok := res.Sessions[id]
				if !ok {
					o.Verdict = Ended
				}
				if o.Verdict != w.verdict || !slices.Equal(PIDs(procs, o.Holders), w.pids) || (o.Tied() && o.By != w.by) {
					t.Errorf("%s: %s by %q holders %v, want %s by %q holders %v", id, o.Verdict, o.By, PIDs(procs, o.Holders), w.verdict, w.by, w.pids)
				}
			}
		})
	}
}
