package adapters

import "time"

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
