// Package attribute decides which live process of an agent holds which of
// the agent's native sessions, as a proof over plain facts rather than a
// rule of thumb. It is written once and shared by the adapters: each turns
// what it reads (processes, their start, argv, environment, open files, a
// server's answer, agentctl's launch records) into Procs and Sessions, and
// Solve says of every session whether every assignment consistent with
// those facts gives it a live process (running, even when which pid is
// open), none does (ended), or the facts cannot decide (unknown, with the
// candidates).
//
// The facts an assignment must respect:
//
//   - a process holds one session at a time, and a session is held by one
//     process;
//   - a process holds only a session of its folder begun after it started
//     (a resuming process, one written since it started), and only one it
//     may hold by what its argv says (a one-shot's prompt);
//   - a pin (an argument naming the session, an open file, a server's
//     answer, a launch record) ties a pair, and excludes that session for
//     the others;
//   - what an earlier answer proved (Memory) holds on: a process held one
//     of some sessions then, and holds one of them or one begun since; a
//     process that has ended since held one of them, which has ended with
//     it (unless written after its end: then it was not its);
//   - a process holds the latest-written session it could hold (a TUI that
//     made several over its life, /new, works on the last one);
//   - a process that could hold a session holds one: of the assignments
//     respecting the facts above, only those giving the most processes a
//     session are consistent.
//
// A session is running when every consistent assignment gives it a live
// process, ended when none does.
//
// Everything here is a pure function of its input, so the table of cases
// and the brute-force comparison in the tests are fast.
package attribute

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Slack covers the resolution of a process's start time (the boot time is
// known to the second) and an agent writing its session's creation time
// a moment before or after it started.
const Slack = 2 * time.Second

// maxLeaves bounds the assignments enumerated for one group of processes
// that share candidates; beyond it the group's sessions are unknown.
const maxLeaves = 200_000

// Proc is a live process of the agent, with what is known of it.
type Proc struct {
	PID int
	// Stamp is the process's start stamp (proc.Identity.Start): with PID
	// it names the process across queries.
	Stamp uint64
	Start time.Time
	// Dirs are the spellings of the folder it works in (its cwd, with
	// symlinks resolved); none: any folder.
	Dirs []string
	// Pin is the session it is known to hold, and PinBy the evidence
	// ("argv", "environ", "open-file", "server", "launch"). A pin naming a
	// session not in the store yet means it holds none of those there.
	Pin, PinBy string
	// Only, when not nil, lists the sessions it may hold (those whose first
	// prompt is its argv's message), and OnlyBy says why.
	Only   []string
	OnlyBy string
	// Resumes says it may hold a session begun before it started, when
	// written since (--continue, or arguments the process hides).
	Resumes bool
	// Held are the sessions an earlier answer proved it held one of, at
	// HeldAt (Memory sets them): it holds one of them or one begun since.
	Held   []string
	HeldAt time.Time
	// Ended, when set, says the process has ended (first seen gone then):
	// it stands for what it held (one of Held, not written after its end),
	// which has ended with it. Memory adds such processes.
	Ended time.Time
}

// gone says p has ended.
func (p Proc) gone() bool { return !p.Ended.IsZero() }

// Session is a native session of the agent.
type Session struct {
	ID      string
	Dir     string
	Created time.Time
	Updated time.Time
}

// Verdict is what the facts say of one session.
type Verdict string

const (
	// Running: every consistent assignment gives it a live process.
	Running Verdict = "running"
	// Ended: no consistent assignment does.
	Ended Verdict = "ended"
	// Unknown: some do and some do not.
	Unknown Verdict = "unknown"
)

// Evidence for a tie the facts prove without a pin (see
// adapters.ProcessRef.Evidence).
const (
	// ByProof: the only consistent assignment gives it this process
	// (folder, start times, what was written when).
	ByProof = "cwd+start"
	// ByHeld: an earlier answer proved the pair, and nothing since moved it.
	ByHeld = "held"
)

// Outcome is the verdict on one session a live process could hold.
type Outcome struct {
	Verdict Verdict
	// Holders are the processes that hold it in some consistent
	// assignment (indexes into the Procs given to Solve), in order: one
	// for a running session is its tied process.
	Holders []int
	// By is the evidence of a tie (one holder, running).
	By string
	// Reason says why, for an unknown session.
	Reason string
}

// Tied says the session is running and which process holds it is known.
func (o Outcome) Tied() bool { return o.Verdict == Running && len(o.Holders) == 1 }

// Result is Solve's answer.
type Result struct {
	// Sessions holds an outcome for every session some live process
	// could hold (a candidate); the others no process holds: ended.
	Sessions map[string]Outcome
	// Procs maps a live process (index) to the session every consistent
	// assignment gives it; a process missing holds none, or which one is
	// open.
	Procs map[int]string
	// Holds maps a live process that holds a session in every consistent
	// assignment to the sessions it holds in some: one of them is its own.
	Holds map[int][]string
}

// Candidates are the sessions p may hold by the facts that concern p
// alone and the pins and proven pairs of the others (indexes into
// sessions).
func Candidates(procs []Proc, i int, sessions []Session) []int {
	var out []int
	for j, s := range sessions {
		if may(procs, i, s) {
			out = append(out, j)
		}
	}
	return out
}

// may says whether procs[i] may hold s.
func may(procs []Proc, i int, s Session) bool {
	p := procs[i]
	if p.Pin != "" {
		return s.ID == p.Pin
	}
	// Pinned to, or proven held by, another process (an ended one: unless
	// written after its end).
	for k, q := range procs {
		if k == i {
			continue
		}
		if q.Pin == s.ID || (q.Pin == "" && len(q.Held) == 1 && q.Held[0] == s.ID && (!q.gone() || !s.Updated.After(q.Ended))) {
			return false
		}
	}
	if p.gone() {
		return slices.Contains(p.Held, s.ID) && !s.Updated.After(p.Ended)
	}
	if len(p.Dirs) > 0 && !slices.Contains(p.Dirs, s.Dir) {
		return false
	}
	if p.Only != nil && !slices.Contains(p.Only, s.ID) {
		return false
	}
	if len(p.Held) > 0 {
		return slices.Contains(p.Held, s.ID) || !s.Created.Before(p.HeldAt.Add(-Slack))
	}
	since := p.Start.Add(-Slack)
	return !s.Created.Before(since) || (p.Resumes && !s.Updated.Before(since))
}

// Solve decides every candidate session: see the package's doc.
func Solve(procs []Proc, sessions []Session) Result {
	res := Result{Sessions: map[string]Outcome{}, Procs: map[int]string{}, Holds: map[int][]string{}}
	cands := make([][]int, len(procs))
	for i := range procs {
		cands[i] = Candidates(procs, i, sessions)
	}
	for _, group := range components(cands, len(sessions)) {
		solveGroup(procs, sessions, cands, group, &res)
	}
	return res
}

// components splits the processes into groups that share no candidate:
// each group's assignments are independent of the others'.
func components(cands [][]int, nSessions int) [][]int {
	parent := make([]int, len(cands))
	for i := range parent {
		parent[i] = i
	}
	find := func(i int) int {
		for parent[i] != i {
			parent[i] = parent[parent[i]]
			i = parent[i]
		}
		return i
	}
	owner := make([]int, nSessions)
	for j := range owner {
		owner[j] = -1
	}
	for i, cs := range cands {
		for _, j := range cs {
			if owner[j] < 0 {
				owner[j] = i
			} else {
				parent[find(i)] = find(owner[j])
			}
		}
	}
	byRoot := map[int][]int{}
	var roots []int
	for i := range cands {
		if len(cands[i]) == 0 {
			continue
		}
		r := find(i)
		if _, ok := byRoot[r]; !ok {
			roots = append(roots, r)
		}
		byRoot[r] = append(byRoot[r], i)
	}
	out := make([][]int, 0, len(roots))
	for _, r := range roots {
		out = append(out, byRoot[r])
	}
	return out
}

// tally is what the consistent assignments of one group have in common.
type tally struct {
	best    int // the most processes given a session
	count   int // assignments of that size respecting the facts
	held    map[int]int
	holders map[int]map[int]bool // session -> processes
	of      map[int]map[int]bool // process -> sessions (-1: none)
}

func solveGroup(procs []Proc, sessions []Session, cands [][]int, group []int, res *Result) {
	inGroup := map[int]bool{}
	for _, i := range group {
		for _, j := range cands[i] {
			inGroup[j] = true
		}
	}
	t := tally{best: -1}
	assign := make([]int, len(group)) // index into sessions, -1: none
	taken := map[int]int{}            // session -> position in group
	leaves := 0
	var walk func(k, size int) bool
	walk = func(k, size int) bool {
		if size+len(group)-k < t.best {
			return true // cannot reach the most: not consistent
		}
		if k == len(group) {
			leaves++
			if leaves > maxLeaves {
				return false
			}
			if !current(procs, sessions, cands, group, assign, taken) {
				return true
			}
			if size > t.best {
				t = tally{best: size, held: map[int]int{}, holders: map[int]map[int]bool{}, of: map[int]map[int]bool{}}
			}
			t.count++
			for pos, j := range assign {
				i := group[pos]
				if t.of[i] == nil {
					t.of[i] = map[int]bool{}
				}
				t.of[i][j] = true
				if j >= 0 && !procs[i].gone() {
					t.held[j]++
					if t.holders[j] == nil {
						t.holders[j] = map[int]bool{}
					}
					t.holders[j][i] = true
				}
			}
			return true
		}
		i := group[k]
		for _, j := range cands[i] {
			if _, ok := taken[j]; ok {
				continue
			}
			taken[j], assign[k] = k, j
			ok := walk(k+1, size+1)
			delete(taken, j)
			if !ok {
				return false
			}
		}
		assign[k] = -1
		return walk(k+1, size)
	}
	if !walk(0, 0) {
		var pids []int
		for _, i := range group {
			if !procs[i].gone() {
				pids = append(pids, i)
			}
		}
		for j := range inGroup {
			res.Sessions[sessions[j].ID] = Outcome{Verdict: Unknown, Holders: pids,
				Reason: fmt.Sprintf("too many ways (over %d) to give these %d processes their sessions to weigh them all", maxLeaves, len(group))}
		}
		return
	}
	for j := range inGroup {
		o := Outcome{Holders: sortedKeys(t.holders[j])}
		switch n := t.held[j]; {
		case n == t.count:
			o.Verdict = Running
			if len(o.Holders) == 1 {
				o.By = tieEvidence(procs[o.Holders[0]], sessions[j].ID)
			}
		case n == 0:
			o.Verdict = Ended
		default:
			o.Verdict = Unknown
			o.Reason = "the facts allow an assignment that gives it " + pidList(procs, o.Holders) + " and one that gives it no live process"
		}
		res.Sessions[sessions[j].ID] = o
	}
	for _, i := range group {
		if procs[i].gone() || t.of[i][-1] {
			continue
		}
		for j := range t.of[i] {
			res.Holds[i] = append(res.Holds[i], sessions[j].ID)
			if len(t.of[i]) == 1 && res.Sessions[sessions[j].ID].Verdict == Running {
				res.Procs[i] = sessions[j].ID
			}
		}
		slices.Sort(res.Holds[i])
	}
}

// current checks that every live process of the assignment holds the
// latest written of the sessions it could hold that no other holds, and
// that one left without a session could hold none.
func current(procs []Proc, sessions []Session, cands [][]int, group []int, assign []int, taken map[int]int) bool {
	for pos, j := range assign {
		if procs[group[pos]].gone() {
			continue
		}
		for _, c := range cands[group[pos]] {
			if _, held := taken[c]; held {
				continue
			}
			if j < 0 || sessions[c].Updated.After(sessions[j].Updated) {
				return false
			}
		}
	}
	return true
}

// tieEvidence is the strongest fact behind p holding id.
func tieEvidence(p Proc, id string) string {
	switch {
	case p.Pin == id && p.PinBy != "":
		return p.PinBy
	case slices.Contains(p.Held, id):
		return ByHeld
	case p.Only != nil && p.OnlyBy != "":
		return p.OnlyBy
	}
	return ByProof
}

func sortedKeys(m map[int]bool) []int {
	out := make([]int, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// PIDs are the pids of the processes at idx, in order.
func PIDs(procs []Proc, idx []int) []int {
	out := make([]int, len(idx))
	for n, i := range idx {
		out[n] = procs[i].PID
	}
	return out
}

// pidList says "pid 1", "pid 1 or 2".
func pidList(procs []Proc, idx []int) string {
	s := make([]string, len(idx))
	for n, i := range idx {
		s[n] = strconv.Itoa(procs[i].PID)
	}
	return "pid " + strings.Join(s, " or ")
}

// Holders says which processes may hold a session: "pid 123 or 456".
func Holders(procs []Proc, o Outcome) string { return pidList(procs, o.Holders) }
