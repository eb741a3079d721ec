package attribute

import (
	"fmt"

	"github.com/agentctl/agentctl/adapters"
	"github.com/agentctl/agentctl/adapters/storeio"
)

// Attribution is what an adapter reports of one session from a Result.
type Attribution struct {
	// Ref is the live process tied to the session; nil when none is.
	Ref *adapters.ProcessRef
	// Running says every consistent assignment gives it a live process
	// (Ref, or one of Holders).
	Running bool
	// Unknown says the facts cannot decide: Holders may be working on it.
	Unknown bool
	// Holders are the pids that hold it in some consistent assignment,
	// when it is not tied.
	Holders []int
	// Evidence and Warning say so, for `explain` and the list.
	Evidence []adapters.Evidence
	Warning  string
}

// Of is the attribution of session id by res (agent names the agent in
// what it says): the zero value when no live process can hold it.
func Of(agent string, procs []Proc, res Result, id string) Attribution {
	o, ok := res.Sessions[id]
	if !ok || o.Verdict == Ended {
		return Attribution{}
	}
	pids := PIDs(procs, o.Holders)
	switch {
	case o.Tied():
		p := procs[o.Holders[0]]
		return Attribution{Running: true, Ref: &adapters.ProcessRef{PID: p.PID, Start: p.Stamp, Evidence: o.By}}
	case o.Verdict == Running:
		a := Attribution{Running: true, Holders: pids,
			Warning: fmt.Sprintf("running in %s: every assignment of the live %s processes consistent with the facts gives it one of them, and which is not known", Holders(procs, o), agent)}
		for _, pid := range pids {
			a.Evidence = append(a.Evidence, adapters.Evidence{Kind: adapters.EvidenceCandidate, PID: pid,
				Says: fmt.Sprintf("a live %s process that holds this session in some assignment consistent with the facts; every such assignment gives it one of %s", agent, Holders(procs, o))})
		}
		return a
	}
	a := Attribution{Unknown: true, Holders: pids, Warning: storeio.ContendersWarning(agent, pids) + " (" + o.Reason + ")"}
	for _, pid := range pids {
		a.Evidence = append(a.Evidence, adapters.Evidence{Kind: adapters.EvidenceContender, PID: pid,
			Says: fmt.Sprintf("a live %s process that may be working on this session: %s", agent, o.Reason)})
	}
	return a
}

// PinTies pins each of procs that an integration's reports tied to a
// session (ties: adapters.HookTie, first-hand) to that session, whose ID
// in the solver key gives (nil: the native id itself; "" when the store
// has no such session yet: the pin then says the process holds none of
// the store's). It runs before Solve: the pin also settles the sessions
// the others in the folder may hold.
func PinTies(procs []Proc, ties []adapters.HookTie, key func(nativeID string) string) {
	if len(ties) == 0 {
		return
	}
	for i := range procs {
		t := adapters.TieOf(ties, procs[i].PID, procs[i].Stamp)
		if t == nil || procs[i].gone() {
			continue
		}
		id := t.NativeID
		if key != nil {
			if id = key(t.NativeID); id == "" {
				id = "integration:" + t.NativeID
			}
		}
		procs[i].Pin, procs[i].PinBy = id, t.Source()
	}
}
