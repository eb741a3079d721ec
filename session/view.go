package session

import (
	"slices"
	"sync"
	"time"
	"unsafe"

	"github.com/agentctl/agentctl/adapters"
	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/internal/text"
	"github.com/agentctl/agentctl/proc"
)

// nativeKey names one native session of one adapter.
type nativeKey struct{ adapter, id string }

// merge enriches launched sessions with their native facts and adds the
// sessions only the adapters know, keeping those keep accepts (all when
// keep is nil). Filtering here, rather than after, spares building every
// session of a large store for a list that shows a few. The answer is
// oldest first, as sortByCreation orders the launched sessions followed by
// the native ones in the order discovered; keep is asked in that order.
func merge(launched []api.Session, disc discovered, keep func(*api.Session) bool) []api.Session {
	return mergeSkipping(launched, disc, keep, nil)
}

// mergeSkipping is merge, where skip, when set, is asked first about each
// session only an adapter knows: true means it is not wanted, and its
// session object is not built (a list of running sessions does not build
// the ended ones).
func mergeSkipping(launched []api.Session, disc discovered, keep func(*api.Session) bool, skip func(*adapters.NativeSession) bool) []api.Session {
	p := planMerge(launched, disc, skip)
	var in listInPlace
	in.begin(p.size())
	p.each(in.slot, func(s *api.Session, built bool) bool {
		if keep == nil || keep(s) {
			return in.take(s, built)
		}
		if built {
			in.drop()
		}
		return true
	})
	return in.sessions
}

// mergePlan is a merge worked out before any session only an adapter
// knows is built: the launched sessions enriched with their native facts,
// the native sessions to build, and the order of all of them.
type mergePlan struct {
	enriched []api.Session
	build    []*adapters.NativeSession
	// olds and news order enriched and build, oldest first.
	olds, news []aged
	failed     map[string]bool
}

// planMerge works out merge's answer for launched and disc, leaving out
// the native sessions skip rejects (see mergeSkipping).
func planMerge(launched []api.Session, disc discovered, skip func(*adapters.NativeSession) bool) *mergePlan {
	// Launched sessions by native session: few, so the lookup for each
	// discovered session is cheap.
	launchedBy := map[nativeKey][]int{}
	// Resumed runs share one native session: every run is enriched, and the
	// native session is not listed again as discovered.
	// Running plain commands by pid: a command that is an agent (`run --
	// claude`) is that agent's native session too, and is listed once.
	commandAt := map[int]int{}
	for i, s := range launched {
		if s.NativeID != "" {
			k := nativeKey{nativeAdapterOf(&s), s.NativeID}
			launchedBy[k] = append(launchedBy[k], i)
		} else if s.Status == api.StatusRunning && s.PID > 0 {
			commandAt[s.PID] = i
		}
	}
	enriched := make([]api.Session, len(launched))
	copy(enriched, launched)
	for _, ss := range disc.sessions {
		if len(launchedBy) == 0 && len(commandAt) == 0 {
			break // nothing launched to enrich
		}
		for i := range ss {
			ns := &ss[i]
			k := nativeKey{ns.Adapter, ns.NativeID}
			if idx, ok := launchedBy[k]; ok {
				for _, j := range idx {
					enrich(&enriched[j], ns)
				}
				ownCounts(enriched, idx, ns)
				delete(launchedBy, k) // a duplicate in the store enriches once
				continue
			}
			if ns.Process == nil {
				continue
			}
			// The same live process (its pid and start stamp hold now, and
			// the command's did when it was derived): one session.
			if j, ok := commandAt[ns.Process.PID]; ok && proc.Alive(proc.Identity{PID: ns.Process.PID, Start: ns.Process.Start}) {
				enriched[j].NativeID, enriched[j].Agent = ns.NativeID, ns.Adapter
				enrich(&enriched[j], ns)
				delete(commandAt, ns.Process.PID)
			}
		}
	}
	// Native ids are claimed alone, not per adapter: two adapters may read
	// one store (pi and pi-rust share theirs). The launched sessions claim
	// theirs; among the native sessions, the first of an id claims it
	// (repeats).
	claimed := make(map[string]bool, len(enriched))
	for _, s := range enriched {
		if s.NativeID != "" {
			claimed[s.NativeID] = true
		}
	}
	dups := disc.repeats
	if dups == nil {
		dups = repeats(disc.sessions)
	}
	var build []*adapters.NativeSession
	for a, ss := range disc.sessions {
		for i := range ss {
			ns := &ss[i]
			if (len(claimed) > 0 && claimed[ns.NativeID]) || (len(dups) > 0 && dups[position{a, i}]) {
				continue
			}
			if skip != nil && skip(ns) {
				continue
			}
			build = append(build, ns)
		}
	}
	// The answer is made oldest first as it is built (ties keep the order
	// of launched sessions, then of discovery): sorting it afterwards
	// moved every session, a large value, twice. The launched sessions and
	// the native ones to build are each ordered by their times alone, and
	// the two runs merged.
	return &mergePlan{enriched: enriched, build: build, failed: disc.failed,
		olds: byAge(len(enriched), func(i int) time.Time { return enriched[i].CreatedAt }),
		news: byAge(len(build), func(i int) time.Time { return build[i].CreatedAt })}
}

// size is how many sessions the plan holds.
func (p *mergePlan) size() int { return len(p.enriched) + len(p.build) }

// walk calls fn with each session of the plan, oldest first, until fn
// returns false: a launched one by its index in enriched (native -1), or
// one only an adapter knows by its index in build (launched -1).
func (p *mergePlan) walk(fn func(launched, native int) bool) {
	i, j := 0, 0
	for i < len(p.olds) || j < len(p.news) {
		var more bool
		if i < len(p.olds) && (j == len(p.news) || p.olds[i].notAfter(p.news[j])) {
			more = fn(p.olds[i].i, -1)
			i++
		} else {
			more = fn(-1, p.news[j].i)
			j++
		}
		if !more {
			return
		}
	}
}

// ids are the ids of the plan's sessions, in walk's order.
func (p *mergePlan) ids() []string {
	out := make([]string, 0, p.size())
	p.walk(func(launched, native int) bool {
		if launched >= 0 {
			out = append(out, p.enriched[launched].ID)
		} else {
			out = append(out, p.build[native].NativeID) // fillNative's id
		}
		return true
	})
	return out
}

// each hands each session of the plan to visit, oldest first, until
// visit returns false: a launched one as it is in enriched (built false),
// one only an adapter knows built into the zero session slot gives (built
// true).
func (p *mergePlan) each(slot func() *api.Session, visit func(s *api.Session, built bool) bool) {
	p.walk(func(launched, native int) bool {
		if launched >= 0 {
			return visit(&p.enriched[launched], false)
		}
		ns := p.build[native]
		s := slot()
		// An adapter that failed this time vouches for nothing.
		fillNative(s, ns, !p.failed[ns.Adapter])
		return visit(s, true)
	})
}

// aged is a place in a list and the time of what is there, as plain
// numbers: sorting these moves no pointers (moving sessions, or pointers
// to them, paid the garbage collector's write barriers) and compares no
// time.Time.
type aged struct {
	sec  int64
	nsec int32
	i    int
}

// byAge is the places 0..n-1, oldest first by at, ties in place order.
func byAge(n int, at func(i int) time.Time) []aged {
	out := make([]aged, n)
	sorted := true
	for i := range out {
		t := at(i)
		out[i] = aged{sec: t.Unix(), nsec: int32(t.Nanosecond()), i: i}
		if i > 0 && out[i].before(out[i-1]) {
			sorted = false
		}
	}
	if !sorted {
		slices.SortFunc(out, func(a, b aged) int {
			if a.before(b) {
				return -1
			}
			if b.before(a) {
				return 1
			}
			return 0
		})
	}
	return out
}

// before orders by time, then by place.
func (a aged) before(b aged) bool {
	if a.sec != b.sec {
		return a.sec < b.sec
	}
	if a.nsec != b.nsec {
		return a.nsec < b.nsec
	}
	return a.i < b.i
}

// notAfter says a's time is b's or earlier.
func (a aged) notAfter(b aged) bool {
	return a.sec < b.sec || a.sec == b.sec && a.nsec <= b.nsec
}

// position is a native session's place in a discovery's answer: the
// adapter's slice, and the session's index in it.
type position struct{ adapter, index int }

// repeats finds the native sessions whose id a session before them has
// (two adapters reading one store, or one store holding an id twice):
// only the first is listed. Usually none: nil then.
func repeats(sessions [][]adapters.NativeSession) map[position]bool {
	n := 0
	for _, ss := range sessions {
		n += len(ss)
	}
	seen := make(map[string]struct{}, n)
	var out map[position]bool
	for a, ss := range sessions {
		for i := range ss {
			if _, ok := seen[ss[i].NativeID]; ok {
				if out == nil {
					out = map[position]bool{}
				}
				out[position{a, i}] = true
				continue
			}
			seen[ss[i].NativeID] = struct{}{}
		}
	}
	return out
}

// repeatIndex keeps the repeats of the last discovery's answer: an
// adapter that found nothing new answers with the very slice it answered
// before, so a list between changes finds them without a map of every id.
type repeatIndex struct {
	mu     sync.Mutex
	of     []sliceID
	found  map[position]bool
	passed bool
}

// sliceID names one adapter's answer: its backing array and length.
type sliceID struct {
	first *adapters.NativeSession
	n     int
}

// repeats is repeats(sessions), from the last call's when every adapter
// answered with the same slices; never nil (an empty map: none).
func (x *repeatIndex) repeats(sessions [][]adapters.NativeSession) map[position]bool {
	of := make([]sliceID, len(sessions))
	for i, ss := range sessions {
		of[i] = sliceID{unsafe.SliceData(ss), len(ss)}
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.passed && slices.Equal(x.of, of) {
		return x.found
	}
	found := repeats(sessions)
	if found == nil {
		found = map[position]bool{}
	}
	x.of, x.found, x.passed = of, found, true
	return found
}

// sortByCreation orders sessions oldest first (ties keep their order). It
// sorts indices rather than the sessions themselves: a session is a large
// value, and moving thousands of them dominated list's time. The order
// is then applied in place, cycle by cycle, each session moved once: a
// sorted copy was a second answer's worth of memory (32 MB at 50,000
// sessions) on every list.
func sortByCreation(ss []api.Session) {
	idx := make([]int, len(ss))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return ss[a].CreatedAt.Compare(ss[b].CreatedAt) })
	// idx[i] is the session that goes to i; a done place points at itself.
	for i := range idx {
		if idx[i] == i {
			continue
		}
		held := ss[i]
		j := i
		for {
			k := idx[j]
			idx[j] = j
			if k == i {
				ss[j] = held
				break
			}
			ss[j] = ss[k]
			j = k
		}
	}
}

// nativeAdapterOf is the adapter whose native session s is: its own, or,
// for a plain command that is an agent, that agent's.
func nativeAdapterOf(s *api.Session) string {
	if s.Agent != "" {
		return s.Agent
	}
	return s.Adapter
}

// enrich copies native facts into a launched session; status stays derived
// from the process, except for the agent's own busy/idle signal.
func enrich(s *api.Session, ns *adapters.NativeSession) {
	if ns.Model != "" {
		s.Model = ns.Model
	}
	s.TokensIn, s.TokensOut, s.CostUSD = ns.TokensIn, ns.TokensOut, ns.CostUSD
	s.TotalsPending = ns.TotalsPending
	if !ns.UpdatedAt.IsZero() {
		t := ns.UpdatedAt
		s.LastActivity = &t
	}
	if s.Prompt == "" {
		s.Prompt = text.Truncate(ns.FirstPrompt, maxPromptShown)
	}
	// First-hand evidence (hooks, the terminal, the agent's server)
	// outranks the store's, except a busy whose end the store recorded
	// after it: the report of that end was missed (an agent's event
	// stream cut and reopened on a loaded machine), and the store's record
	// is the newer first-hand word.
	if a := nativeActivity(s.Status, ns.State); a != "" && (s.ActivitySource == "" || endedSince(s, a, ns.UpdatedAt)) {
		if s.ActivitySource != "" {
			at := ns.UpdatedAt
			s.ActivitySince = &at
		}
		s.Activity, s.ActivitySource = a, api.SourceNative
		if ns.Hook != nil {
			at := ns.Hook.At
			s.ActivitySource, s.ActivitySince = api.SourceIntegration, &at
		}
	}
	nativeWaiting(s, ns)
	s.LimitWindows = limitWindows(ns.Windows)
	s.Warnings = append(s.Warnings, ns.Warnings...)
}

// endedSince reports whether s reads busy from evidence older than the
// store's record of an idle agent (native, updated at updated).
func endedSince(s *api.Session, native string, updated time.Time) bool {
	return s.Activity == api.ActivityBusy && native == api.ActivityIdle && s.ActivitySince != nil && updated.After(*s.ActivitySince)
}

// nativeWaiting is what the agent's own records say a running session's
// process waits for (Claude's registry: a permission prompt, a dialog),
// where no hook or terminal notification decided its activity.
func nativeWaiting(s *api.Session, ns *adapters.NativeSession) {
	if nativeLimit(s, ns.Limit) {
		return
	}
	if s.Status != api.StatusRunning || ns.WaitingFor == "" || (s.ActivitySource != "" && s.ActivitySource != api.SourceNative && s.ActivitySource != api.SourceIntegration) {
		return
	}
	s.Activity, s.ActivitySource, s.WaitingFor = api.ActivityWaiting, api.SourceNative, ns.WaitingFor
	s.Waiting = &api.Waiting{For: ns.WaitingFor, Kind: "native"}
	if h := ns.Hook; h != nil && h.WaitingFor == ns.WaitingFor {
		// The integration's report says more: what for, and the request
		// `approve` answers.
		s.ActivitySource = api.SourceIntegration
		s.Waiting = &api.Waiting{For: h.WaitingFor, Request: h.Request, Tool: h.Tool, Input: h.Input, Text: h.Text, Kind: h.Event}
	}
	if !ns.WaitingSince.IsZero() {
		at := ns.WaitingSince
		s.ActivitySince = &at
	}
}

// nativeLimit marks a session whose last turn a usage limit ended, as the
// agent's own records say: held, waiting for the limit (a running session
// reads activity waiting; an ended one keeps no activity but says what
// holds it, for a resume after the reset). Evidence from hooks or the
// terminal newer than the limit's record outranks it when it says a turn
// began since (busy) or a person is asked something; that the agent is
// idle or waits for input is what the limit explains.
func nativeLimit(s *api.Session, l *adapters.LimitHit) bool {
	if l == nil {
		return false
	}
	newer := s.ActivitySource != "" && s.ActivitySource != api.SourceNative && s.ActivitySince != nil && s.ActivitySince.After(l.At)
	if newer && (s.Activity == api.ActivityBusy || s.Activity == api.ActivityWaiting && s.WaitingFor != api.WaitingInput) {
		return false
	}
	hold := api.LimitHold{Provider: l.Provider, Window: l.Window, Message: l.Message}
	if !l.ResetsAt.IsZero() {
		t := l.ResetsAt
		hold.ResetsAt = &t
	}
	if !l.At.IsZero() {
		t := l.At
		hold.Since = &t
	}
	s.WaitingFor = api.WaitingLimit
	s.Waiting = &api.Waiting{For: api.WaitingLimit, Text: l.Message, Limit: &hold, Kind: "native"}
	if s.Status == api.StatusRunning {
		s.Activity, s.ActivitySource, s.ActivitySince = api.ActivityWaiting, api.SourceNative, nil
		if !l.At.IsZero() {
			at := l.At
			s.ActivitySince = &at
		}
	}
	return true
}

// limitWindows are an agent's usage windows as the API gives them.
func limitWindows(ws []adapters.LimitWindow) []api.LimitWindow {
	if len(ws) == 0 {
		return nil
	}
	out := make([]api.LimitWindow, 0, len(ws))
	for _, w := range ws {
		used := w.UsedPercent
		lw := api.LimitWindow{Provider: w.Provider, Name: w.Name, UsedPercent: &used}
		if !w.ResetsAt.IsZero() {
			t := w.ResetsAt
			lw.ResetsAt = &t
		}
		if !w.At.IsZero() {
			t := w.At
			lw.At = &t
		}
		out = append(out, lw)
	}
	return out
}

// fromNative is the session object for a session only an adapter knows.
// Its id is the native id.
func fromNative(ns *adapters.NativeSession, vouched bool) api.Session {
	var s api.Session
	fillNative(&s, ns, vouched)
	return s
}

// fillNative makes *s, a zero session, fromNative's session.
func fillNative(s *api.Session, ns *adapters.NativeSession, vouched bool) {
	s.ID, s.Adapter, s.Origin, s.NativeID = ns.NativeID, ns.Adapter, api.OriginDiscovered, ns.NativeID
	s.Cwd, s.CreatedAt = ns.Cwd, ns.CreatedAt
	enrich(s, ns)
	alive := ns.Process != nil && proc.Alive(proc.Identity{PID: ns.Process.PID, Start: ns.Process.Start})
	if alive {
		s.PID = ns.Process.PID
	}
	s.Status, s.Activity = nativeStatus(ns.State, alive, vouched)
	if s.Activity != "" && ns.Hook != nil {
		at := ns.Hook.At
		s.ActivitySource, s.ActivitySince = api.SourceIntegration, &at
	}
	nativeWaiting(s, ns)
}

// ownCounts gives each run of one native session (idx into runs) its own
// tokens and cost, so that they add up to the native session's total: a
// run counts from its baseline (what the native session had when it
// began; none for the run that created it) to the next run's baseline, or
// to the total for the last. A run whose bounds are not known has unknown
// counts rather than the total. Where runs share the native session, each
// carries the total apart, as NativeTotal.
func ownCounts(runs []api.Session, idx []int, ns *adapters.NativeSession) {
	total := api.Usage{TokensIn: ns.TokensIn, TokensOut: ns.TokensOut, CostUSD: ns.CostUSD}
	order := slices.Clone(idx)
	slices.SortStableFunc(order, func(a, b int) int { return runs[a].CreatedAt.Compare(runs[b].CreatedAt) })
	if len(order) == 1 && runs[order[0]].ResumeOf == "" && runs[order[0]].Baseline == nil {
		return // the one run that created it: its counts are the total
	}
	// start is each run's baseline; nil when not known.
	start := func(s *api.Session) *api.Usage {
		switch {
		case s.Baseline != nil:
			return s.Baseline
		case s.ResumeOf == "":
			return &api.Usage{TokensIn: new(int64), TokensOut: new(int64), CostUSD: new(float64)}
		}
		return nil
	}
	for n, j := range order {
		s := &runs[j]
		end := &total
		if n+1 < len(order) {
			end = start(&runs[order[n+1]])
		}
		from := start(s)
		t := total
		s.NativeTotal = &t
		if from == nil || end == nil {
			s.TokensIn, s.TokensOut, s.CostUSD = nil, nil, nil
			continue
		}
		s.TokensIn = diff(end.TokensIn, from.TokensIn)
		s.TokensOut = diff(end.TokensOut, from.TokensOut)
		s.CostUSD = diff(end.CostUSD, from.CostUSD)
	}
}

// diff is b's count from a to b, nil when either is unknown, never below
// zero (a native session rewritten shorter).
func diff[T int64 | float64](b, a *T) *T {
	if a == nil || b == nil {
		return nil
	}
	d := max(*b-*a, 0)
	return &d
}
