package session

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/agentctl/agentctl/adapters"
	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/home"
	"github.com/agentctl/agentctl/internal/text"
	"github.com/agentctl/agentctl/proc"
	"github.com/agentctl/agentctl/spawn"
)

// Explain resolves a session and returns the evidence behind its status:
// for a session this service started, its launch and exit records and the
// pid + start stamp check of its process and monitor; for a native
// session, what the agent's own store says, which live process its adapter
// attributed to it and by which evidence, and the candidates it weighed
// (processes that may own it, ones it turned down). A launched session with
// a native id carries both.
func (c *reader) Explain(ctx context.Context, id string) (api.Explanation, error) {
	sess, err := c.Get(ctx, id)
	if err != nil {
		return api.Explanation{}, err
	}
	ex := api.Explanation{Session: sess, Rule: api.RuleNative, Evidence: []api.Evidence{}}
	if sess.Origin == api.OriginLaunched {
		ex.Rule = api.RuleLaunched
		dir := c.opts.Home.SessionDir(sess.ID)
		rec, err := spawn.ReadRecord(dir)
		if errors.Is(err, os.ErrNotExist) {
			if ev, reason, ok := queueEvidence(dir, sess); ok {
				ex.Evidence, ex.Reason = append(ex.Evidence, ev), reason
				return ex, nil
			}
		}
		if err != nil {
			return api.Explanation{}, fmt.Errorf("explain %s: %w", sess.ID, err)
		}
		st, err := spawn.Derive(dir, rec)
		if err != nil {
			return api.Explanation{}, fmt.Errorf("explain %s: %w", sess.ID, err)
		}
		ex.Evidence = append(ex.Evidence, launchedEvidence(dir, st)...)
		ex.Reason = launchedReason(st)
	}
	if a := c.adapters.Get(nativeAdapterOf(&sess)); a != nil && sess.NativeID != "" {
		found := c.disc.runOf(ctx, []adapters.Adapter{a})
		ns := findNative(found, a.Name(), sess.NativeID)
		vouched := !found.failed[a.Name()]
		ex.Evidence = append(ex.Evidence, nativeEvidence(a.Name(), ns, vouched, found.warnings)...)
		if ex.Rule == api.RuleNative {
			ex.Reason = nativeReason(ns, vouched)
		}
	}
	if sess.Activity != "" {
		says := "the session is " + sess.Activity
		if sess.WaitingFor != "" {
			says += " for " + sess.WaitingFor
		}
		if sess.ActivitySince != nil {
			says += " since " + sess.ActivitySince.Format(time.RFC3339)
		}
		ex.Evidence = append(ex.Evidence, api.Evidence{Kind: api.EvidenceActivity, Source: activitySource(sess.ActivitySource), Says: says})
	}
	if w := sess.Waiting; w != nil && w.Limit != nil {
		ex.Evidence = append(ex.Evidence, api.Evidence{Kind: api.EvidenceActivity, Source: activitySource(api.SourceNative), Says: limitSays(w.Limit, sess.OnLimit)})
	}
	return ex, nil
}

// limitSays is why a session a usage limit holds waits, and what happens
// next: "held by the usage limit of anthropic (five_hour) until …;
// on_limit resume: the service resumes it after the reset".
func limitSays(l *api.LimitHold, onLimit string) string {
	says := "held by the usage limit of " + l.Provider
	if l.Window != "" {
		says += " (" + l.Window + ")"
	}
	if l.ResetsAt != nil {
		says += " until " + l.ResetsAt.Format(time.RFC3339)
	} else {
		says += ", its reset time not given"
	}
	if l.Message != "" {
		says += ": " + text.Truncate(l.Message, 200)
	}
	switch onLimit {
	case api.OnLimitResume:
		says += "; on_limit resume: the service resumes it after the reset, one session of the provider per interval"
	case api.OnLimitWait:
		says += "; on_limit wait: resume it by hand (agentctl resume)"
	default:
		says += "; on_limit as the service's configuration says (default wait)"
	}
	return says
}

// findNative is the native session id of adapter in found, nil when the
// adapter does not list it (now).
func findNative(found discovered, adapter, id string) *adapters.NativeSession {
	for _, ss := range found.sessions {
		for i := range ss {
			if ss[i].Adapter == adapter && ss[i].NativeID == id {
				return &ss[i]
			}
		}
	}
	return nil
}

// launchedEvidence is what the launched rule reads, in its order.
func launchedEvidence(dir string, st spawn.State) []api.Evidence {
	rec := st.Record
	out := []api.Evidence{{
		Kind: api.EvidenceLaunchRecord, PID: rec.Process.PID, Source: filepath.Join(dir, home.LaunchFile),
		Says: fmt.Sprintf("agentctl started pid %d (start stamp %d) at %s, under its monitor pid %d (start stamp %d, monitor protocol %d)",
			rec.Process.PID, rec.Process.Start, rec.CreatedAt.Format(time.RFC3339), rec.Shim.PID, rec.Shim.Start, spawn.ProtocolOf(rec)),
	}}
	exit := api.Evidence{Kind: api.EvidenceExitRecord, Source: filepath.Join(dir, home.ExitFile)}
	switch e := st.Exit; {
	case e == nil:
		exit.Says = "none: the monitor has not seen the process end"
	case e.Signal != "":
		exit.Says = fmt.Sprintf("the process was killed by %s at %s", e.Signal, e.EndedAt.Format(time.RFC3339))
	case e.ExitCode != nil:
		exit.Says = fmt.Sprintf("the process exited with code %d at %s", *e.ExitCode, e.EndedAt.Format(time.RFC3339))
	default:
		exit.Says = "the process ended at " + e.EndedAt.Format(time.RFC3339)
	}
	if e := st.Exit; e != nil && e.StoppedBy != "" {
		exit.Says += " (stopped by " + e.StoppedBy + ")"
	}
	out = append(out, exit)
	out = append(out, identityEvidence(api.EvidenceProcess, "the agent's process", rec.Process))
	out = append(out, identityEvidence(api.EvidenceMonitor, "its monitor", rec.Shim))
	return out
}

// identityEvidence checks id now: alive with its recorded start stamp, gone,
// or its pid reused by another process.
func identityEvidence(kind, what string, id proc.Identity) api.Evidence {
	ev := api.Evidence{Kind: kind, PID: id.PID}
	info, err := proc.Lookup(id.PID)
	switch {
	case id.PID <= 0:
		ev.Says = what + " has no recorded pid"
	case errors.Is(err, proc.ErrNotFound):
		ev.Says = fmt.Sprintf("%s, pid %d, is gone", what, id.PID)
	case err != nil:
		ev.Says = fmt.Sprintf("%s, pid %d, could not be checked: %v", what, id.PID, err)
	case info.Start != id.Start:
		ev.Says = fmt.Sprintf("pid %d now runs another process (start stamp %d, recorded %d): %s is gone", id.PID, info.Start, id.Start, what)
	case info.Zombie:
		ev.Says = fmt.Sprintf("%s, pid %d, has exited and is not yet reaped", what, id.PID)
	default:
		ev.Says = fmt.Sprintf("%s, pid %d, is alive with the recorded start stamp %d", what, id.PID, id.Start)
	}
	return ev
}

// launchedReason says which step of the launched rule decided.
func launchedReason(st spawn.State) string {
	status, warning := launchedStatus(st)
	switch status {
	case api.StatusKilled, api.StatusExited:
		return fmt.Sprintf("%s: the exit record says so, and it comes first", status)
	case api.StatusRunning:
		return "running: no exit record, and the recorded process is alive with its recorded start stamp"
	}
	return fmt.Sprintf("%s: %s", status, warning)
}

// evidenceMeaning says what an adapter's ProcessRef.Evidence means.
var evidenceMeaning = map[string]string{
	"registry":  "the agent's own registry of live sessions names it, for this pid and start stamp",
	"argv":      "its command line names this session",
	"open-file": "it holds this session's file open",
	"environ":   "the environment marker agentctl set at launch names this session",
	"cwd+start": "every assignment of the agent's live processes to sessions consistent with the facts (folder, start times, what was written when, one session each) gives it this process",
	"server":    "the agent's own server says this is its current session",
	"prompt":    "its message (from its command line or the file that is its stdin) is the first prompt of this session alone",
	"launch":    "agentctl's launch record of this process names this session",
	"held":      "an earlier answer proved it held this session, and it began no session since",
}

// nativeEvidence is what the native rule reads: the adapter's answer, the
// store's record, the attributed process, and the candidates it weighed.
func nativeEvidence(adapter string, ns *adapters.NativeSession, vouched bool, warnings []string) []api.Evidence {
	var out []api.Evidence
	if !vouched {
		out = append(out, api.Evidence{Kind: api.EvidenceAdapter, Source: adapter,
			Says: "the adapter could not answer this time, so it vouches for nothing: " + strings.Join(warnings, "; ")})
	}
	if ns == nil {
		if vouched {
			out = append(out, api.Evidence{Kind: api.EvidenceStore, Source: adapter, Says: "the agent's store does not list this session (now)"})
		}
		return out
	}
	store := api.Evidence{Kind: api.EvidenceStore, Source: ns.Path}
	if store.Source == "" {
		store.Source = adapter
	}
	switch ns.State {
	case adapters.NativeUnknown:
		store.Says = "its state is not known"
	case adapters.NativeBusy, adapters.NativeIdle, adapters.NativeRunning:
		store.Says = "the agent is " + string(ns.State)
	default:
		store.Says = "the last turn is " + string(ns.State)
	}
	if !ns.UpdatedAt.IsZero() {
		store.Says += "; last written " + ns.UpdatedAt.Format(time.RFC3339)
	}
	out = append(out, store)
	if p := ns.Process; p != nil {
		ev := identityEvidence(api.EvidenceAttributed, "the attributed process", proc.Identity{PID: p.PID, Start: p.Start})
		meaning := evidenceMeaning[p.Evidence]
		if meaning == "" {
			meaning = "evidence: " + p.Evidence
		}
		ev.Says = fmt.Sprintf("attributed by %s (%s); %s", p.Evidence, meaning, ev.Says)
		out = append(out, ev)
	}
	for _, e := range ns.Evidence {
		kind := api.EvidenceRejected
		switch e.Kind {
		case adapters.EvidenceContender:
			kind = api.EvidenceContender
		case adapters.EvidenceCandidate:
			kind = api.EvidenceCandidate
		}
		out = append(out, api.Evidence{Kind: kind, PID: e.PID, Source: e.Source, Says: e.Says})
	}
	return out
}

// nativeReason says which step of the native rule decided.
func nativeReason(ns *adapters.NativeSession, vouched bool) string {
	if ns == nil {
		if !vouched {
			return "unknown: its adapter could not answer, and nothing else vouches for it"
		}
		return "its adapter no longer lists it"
	}
	alive := ns.Process != nil && proc.Alive(proc.Identity{PID: ns.Process.PID, Start: ns.Process.Start})
	status, _ := nativeStatus(ns.State, alive, vouched)
	switch {
	case !vouched:
		return "unknown: its adapter could not answer this time, and vouches for nothing"
	case alive:
		return fmt.Sprintf("running: a live process (pid %d) is attributed to it by %s", ns.Process.PID, ns.Process.Evidence)
	case status == api.StatusRunning && candidates(ns) != "":
		return fmt.Sprintf("running: every assignment of the live processes consistent with the facts gives it one of pid %s, and which is not known (see the candidates)", candidates(ns))
	case status == api.StatusRunning:
		return fmt.Sprintf("running: the agent's own record says it is %s", ns.State)
	case status == api.StatusEnded:
		return fmt.Sprintf("ended: no live process is attributed to it, and the agent's own record says its last turn is %s", ns.State)
	}
	for _, e := range ns.Evidence {
		if e.Kind == adapters.EvidenceContender {
			return "unknown: no process is tied to it, and live processes that may own it run (see the contenders); it stays unknown only while one lives"
		}
	}
	return "unknown: no process is tied to it, and the agent's own record does not say how its last turn ended"
}

// candidates lists the pids of ns's candidate evidence: "1 or 2".
func candidates(ns *adapters.NativeSession) string {
	var pids []string
	for _, e := range ns.Evidence {
		if e.Kind == adapters.EvidenceCandidate {
			pids = append(pids, strconv.Itoa(e.PID))
		}
	}
	return strings.Join(pids, " or ")
}

func activitySource(s string) string {
	switch s {
	case api.SourceHook:
		return "the agent's hooks"
	case api.SourceTerminal:
		return "the terminal (notifications, title)"
	case api.SourceNative:
		return "the agent's own store"
	}
	return s
}
