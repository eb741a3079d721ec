package adapters

import (
	"slices"
	"time"
)

// TieOf is the tie of ties that names the live process (pid, start), nil
// when its integration said nothing of it.
func TieOf(ties []HookTie, pid int, start uint64) *HookTie {
	for i := range ties {
		if ties[i].PID == pid && ties[i].Start == start && ties[i].NativeID != "" {
			return &ties[i]
		}
	}
	return nil
}

// WithHookTies gives each session of out whose process an integration's
// reports tied to it (ties) that evidence, and the state and waiting the
// reports said (first-hand, they outrank the store's). out is left as it
// is (it may be a cache's): the sessions changed are in a copy.
func WithHookTies(out []NativeSession, ties []HookTie) []NativeSession {
	if len(ties) == 0 {
		return out
	}
	var cp []NativeSession
	for i := range out {
		p := out[i].Process
		if p == nil {
			continue
		}
		t := TieOf(ties, p.PID, p.Start)
		if t == nil || t.NativeID != out[i].NativeID {
			continue
		}
		if cp == nil {
			cp = append([]NativeSession(nil), out...)
		}
		ns := &cp[i]
		tie := *t
		ns.Hook = &tie
		if t.State != "" {
			ns.State = t.State
		}
		if t.WaitingFor != "" {
			ns.WaitingFor, ns.WaitingSince = t.WaitingFor, t.WaitingSince
		} else if t.State != "" {
			ns.WaitingFor, ns.WaitingSince = "", time.Time{}
		}
	}
	if cp == nil {
		return out
	}
	return cp
}

// WithUnwritten adds to out, for each of ties whose session out does not
// hold, that session: running, tied to the process that reported it, in
// the folder and state its reports said. OpenCode writes a session at its
// first prompt and Pi at its first answer, while their integrations name
// it at once (Pi at its start): the session is shown from its first
// report, not from the store's write. ours says which processes use the
// adapter's own store (one of another store writes elsewhere, and is not
// this store's to show). out is left as it is (it may be a cache's).
func WithUnwritten(out []NativeSession, ties []HookTie, adapter string, ours func(pid int, start uint64) bool) []NativeSession {
	var have map[string]bool
	var added []NativeSession
	for _, t := range ties {
		if t.NativeID == "" || !ours(t.PID, t.Start) {
			continue
		}
		if have == nil {
			have = make(map[string]bool, len(out))
			for i := range out {
				have[out[i].NativeID] = true
			}
		}
		if have[t.NativeID] {
			continue
		}
		have[t.NativeID] = true
		tie := t
		ns := NativeSession{Adapter: adapter, NativeID: t.NativeID, Cwd: t.Cwd, State: NativeRunning,
			Process: &ProcessRef{PID: t.PID, Start: t.Start, Evidence: t.Source()}, Hook: &tie}
		if t.State != "" {
			ns.State = t.State
		}
		ns.WaitingFor, ns.WaitingSince = t.WaitingFor, t.WaitingSince
		added = append(added, ns)
	}
	if len(added) == 0 {
		return out
	}
	return append(slices.Clip(out), added...)
}
