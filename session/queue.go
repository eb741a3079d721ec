package session

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/home"
	"github.com/agentctl/agentctl/internal/atomicfile"
	"github.com/agentctl/agentctl/internal/envvar"
	"github.com/agentctl/agentctl/internal/text"
	"github.com/agentctl/agentctl/resources"
)

// queuePoll is how often the queue is looked at while a session waits in
// it, for what no event tells: the machine's memory, a provider's limit.
const queuePoll = 2 * time.Second

// maxQueuedRecord bounds a queued session's record (its request carries the
// caller's environment and the whole prompt).
const maxQueuedRecord = 16 << 20

// QueueObserver, when an Observer is one too, hears of sessions queued.
type QueueObserver interface {
	Queued(api.Session)
}

// queuedRecord is a queued session's record (home.QueuedFile), then its
// claim (home.ClaimedFile) or its cancel (home.CancelledFile).
type queuedRecord struct {
	// Request is the launch, normalised, with the caller's environment;
	// dropped once the session started or was cancelled.
	Request  api.RunRequest `json:"request"`
	QueuedAt time.Time      `json:"queued_at"`
	// ClaimedAt is when its start was claimed; Error, why that start
	// failed.
	ClaimedAt   *time.Time `json:"claimed_at,omitempty"`
	Error       string     `json:"error,omitempty"`
	CancelledAt *time.Time `json:"cancelled_at,omitempty"`
}

// queueState is the queue as the service holds it; the records on disk are
// the truth, this is where each session stands now.
type queueState struct {
	// mu is held over one admission: its decision and the starts it makes
	// (caps count what runs, so no two decide at once).
	mu sync.Mutex
	// wake asks the queue's loop to look again (a session ended).
	wake chan struct{}

	pmu      sync.Mutex
	places   map[string]api.QueuePlace
	kinds    map[string]string
	starting map[string]bool
}

func newQueueState() *queueState {
	return &queueState{wake: make(chan struct{}, 1), places: map[string]api.QueuePlace{}, kinds: map[string]string{}, starting: map[string]bool{}}
}

func (q *queueState) place(id string) (api.QueuePlace, bool) {
	q.pmu.Lock()
	defer q.pmu.Unlock()
	p, ok := q.places[id]
	return p, ok
}

func (q *queueState) isStarting(id string) bool {
	q.pmu.Lock()
	defer q.pmu.Unlock()
	return q.starting[id]
}

func (q *queueState) setStarting(id string, on bool) {
	q.pmu.Lock()
	defer q.pmu.Unlock()
	if on {
		q.starting[id] = true
	} else {
		delete(q.starting, id)
	}
}

func (q *queueState) setPlaces(plan admitPlan) {
	q.pmu.Lock()
	defer q.pmu.Unlock()
	q.places, q.kinds = plan.places, plan.kinds
}

func (q *queueState) setPlace(id string, p api.QueuePlace, kind string) {
	q.pmu.Lock()
	defer q.pmu.Unlock()
	q.places[id], q.kinds[id] = p, kind
}

// QueuedBy counts the queued sessions by what holds them (QueueHeld*), as
// the queue last saw them.
func (c *Core) QueuedBy() map[string]int {
	c.q.pmu.Lock()
	defer c.q.pmu.Unlock()
	out := map[string]int{}
	for _, k := range c.q.kinds {
		out[k]++
	}
	return out
}

// poke asks the queue's loop to look again, without waiting.
func (q *queueState) poke() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// WakeQueue asks the queue to look again at once: a slot may have freed.
func (c *Core) WakeQueue() { c.q.poke() }

// Admission is the admission policy now; zero admits everything.
func (c *Core) Admission() api.Admission { return c.admission() }

// admission is the admission policy now; zero admits everything.
func (c *base) admission() api.Admission {
	if c.opts.Admission == nil {
		return api.Admission{}
	}
	return c.opts.Admission()
}

// admitLaunch is a launch under an admission policy: started when the
// queue before it and the caps allow, else queued (req.Queue) or refused
// with the cap that holds it.
func (c *Core) admitLaunch(ctx context.Context, req api.RunRequest, pol api.Admission) (api.Session, error) {
	if err := req.Normalize(); err != nil {
		return api.Session{}, invalid(err)
	}
	c.q.mu.Lock()
	defer c.q.mu.Unlock()
	facts, waiting, since, err := c.admitState(pol)
	if err != nil {
		return api.Session{}, err
	}
	// The new launch comes last: it does not pass those queued before it.
	const newcomer = ""
	now := time.Now().UTC()
	since[newcomer] = now
	plan := decide(facts, append(waiting, slotOf(newcomer, req)), since)
	place, waits := plan.places[newcomer]
	kind := plan.kinds[newcomer]
	if !waits {
		sess, err := c.launchAs(ctx, req, "")
		if !req.Queue || api.CodeOf(err) != api.CodeLocked {
			return sess, err
		}
		// Admitted, but its folder is another session's: queued, it
		// waits for the folder.
		place, kind = api.QueuePlace{Reason: err.Error()}, QueueHeldLock
	} else if !req.Queue {
		if kind == QueueHeldLimit {
			return api.Session{}, faultf(ErrAdmission, "not started: %s; launch with --queue to start it after the reset, or --force to start it now", place.Reason)
		}
		return api.Session{}, faultf(ErrAdmission, "not started: %s; launch with --queue to queue it (it starts, in order, when admitted), or change config.json's \"admission\"", place.Reason)
	}
	sess, err := c.enqueue(req, now)
	if err != nil {
		return api.Session{}, err
	}
	// The queue's loop looks again: at what it now holds (its poll), and
	// at those before it that may start now.
	c.q.poke()
	place.Since = now
	c.q.setPlace(sess.ID, place, kind)
	sess.Queue = &place
	for _, o := range c.queueObservers() {
		o.Queued(sess)
	}
	c.log.Info("session queued", "session", sess.ID, "adapter", sess.Adapter, "position", place.Position, "reason", place.Reason)
	return sess, nil
}

func (c *base) queueObservers() []QueueObserver {
	var out []QueueObserver
	for _, o := range c.opts.Observers {
		if qo, ok := o.(QueueObserver); ok {
			out = append(out, qo)
		}
	}
	return out
}

// enqueue makes a queued session: its folder and its record, the request
// whole (0600: the environment may hold secrets).
func (c *Core) enqueue(req api.RunRequest, now time.Time) (api.Session, error) {
	if req.Name != "" {
		c.naming.Lock()
		defer c.naming.Unlock()
		if err := c.nameFree(req.Name, ""); err != nil {
			return api.Session{}, err
		}
	}
	id := home.NewID(now)
	dir := c.opts.Home.SessionDir(id)
	if err := os.Mkdir(dir, 0o700); err != nil {
		return api.Session{}, fmt.Errorf("create session folder: %w", err)
	}
	rec := queuedRecord{Request: req, QueuedAt: now}
	if err := atomicfile.WriteJSON(filepath.Join(dir, home.QueuedFile), rec, 0o600); err != nil {
		os.RemoveAll(dir)
		return api.Session{}, fmt.Errorf("queue the session: %w", err)
	}
	return c.records.get(id)
}

// admitState reads what an admission decides on: the policy's facts (what
// runs, the machine's memory when a floor is set) and the queued sessions,
// oldest first, with when each was queued.
func (c *base) admitState(pol api.Admission) (admitFacts, []slot, map[string]time.Time, error) {
	all, _, err := c.records.all()
	if err != nil {
		return admitFacts{}, nil, nil, err
	}
	f := admitFacts{policy: pol, held: c.opts.Holds}
	var waiting []api.Session
	for _, s := range all {
		switch {
		case s.Status == api.StatusRunning:
			f.running = append(f.running, slot{id: s.ID, adapter: s.Adapter, provider: api.Provider(s.Adapter, s.Model), group: s.Group})
		case s.Status == api.StatusQueued && !c.q.isStarting(s.ID):
			waiting = append(waiting, s)
		}
	}
	sort.SliceStable(waiting, func(i, j int) bool {
		a, b := waiting[i].CreatedAt, waiting[j].CreatedAt
		if !a.Equal(b) {
			return a.Before(b)
		}
		return waiting[i].ID < waiting[j].ID
	})
	slots := make([]slot, 0, len(waiting)+1)
	since := make(map[string]time.Time, len(waiting)+1)
	for _, s := range waiting {
		slots = append(slots, slot{id: s.ID, adapter: s.Adapter, provider: api.Provider(s.Adapter, s.Model), group: s.Group})
		since[s.ID] = s.CreatedAt
	}
	if pol.MemoryFloorBytes > 0 {
		m, err := resources.ReadMachine()
		f.memAvailable, f.memErr = m.MemAvailableBytes, err
	}
	return f, slots, since, nil
}

// RunQueue starts queued sessions as admission lets them, in order, until
// ctx ends (Wait waits for it): at once, when WakeQueue is called (a
// session ended), and every queuePoll while any waits. A service started
// again takes the queue up from the records.
func (c *Core) RunQueue(ctx context.Context) {
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		t := time.NewTimer(0)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-c.q.wake:
			case <-t.C:
			}
			if c.admitQueued(ctx) > 0 {
				t.Reset(queuePoll)
			}
		}
	}()
}

// admitQueued is one look at the queue: it starts what admission lets
// start and notes where the others stand. It returns how many still wait.
func (c *Core) admitQueued(ctx context.Context) int {
	c.q.mu.Lock()
	defer c.q.mu.Unlock()
	facts, waiting, since, err := c.admitState(c.admission())
	if err != nil {
		c.log.Warn("read the queue", "err", err)
		return 1
	}
	plan := decide(facts, waiting, since)
	c.q.setPlaces(plan)
	for _, id := range plan.start {
		if ctx.Err() != nil {
			return 1
		}
		c.startQueued(ctx, id)
	}
	return len(plan.places)
}

// startQueued claims a queued session's start and starts it. The claim is
// one rename on disk, made before the monitor starts: a session is started
// once or never, and a service that stops in between leaves it saying so.
func (c *Core) startQueued(ctx context.Context, id string) {
	dir := c.opts.Home.SessionDir(id)
	rec, err := claimQueued(dir, time.Now().UTC())
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			c.log.Warn("claim a queued session's start", "session", id, "err", err)
		}
		return // cancelled or removed meanwhile
	}
	c.q.setStarting(id, true)
	defer c.q.setStarting(id, false)
	req := rec.Request
	// It starts now: what it asked for, not a queue again.
	req.Queue = false
	_, err = c.launchAs(context.WithoutCancel(ctx), req, id)
	if api.CodeOf(err) == api.CodeLocked {
		// Its folder is another session's now: the gate refused it
		// before its monitor started, so nothing started, and it waits
		// for the folder in its place, queued again.
		uerr := unclaim(dir, rec)
		if uerr == nil {
			c.q.setPlace(id, api.QueuePlace{Reason: err.Error(), Since: rec.QueuedAt}, QueueHeldLock)
			return
		}
		c.log.Warn("queue a session whose folder is locked again", "session", id, "err", uerr)
	}
	rec.Request.Env, rec.Request.EnvOverrides = nil, nil
	if err != nil {
		rec.Error = err.Error()
		c.log.Warn("a queued session's start failed", "session", id, "err", err)
	} else {
		c.log.Info("queued session started", "session", id, "queued_for", time.Since(rec.QueuedAt).Round(time.Second))
	}
	// Its environment is not kept past its start.
	if werr := atomicfile.WriteJSON(filepath.Join(dir, home.ClaimedFile), rec, 0o600); werr != nil {
		c.log.Warn("record a queued session's start", "session", id, "err", werr)
	}
}

// claimQueued claims the start of the queued session in dir: its record
// is renamed to the claim, then the claim says when. os.ErrNotExist: it is
// not queued (cancelled, or claimed before).
func claimQueued(dir string, now time.Time) (queuedRecord, error) {
	claimed := filepath.Join(dir, home.ClaimedFile)
	if err := os.Rename(filepath.Join(dir, home.QueuedFile), claimed); err != nil {
		return queuedRecord{}, err
	}
	var rec queuedRecord
	if err := atomicfile.ReadJSON(claimed, &rec, maxQueuedRecord); err != nil {
		return rec, fmt.Errorf("read the claimed record: %w", err)
	}
	rec.ClaimedAt = &now
	if err := atomicfile.WriteJSON(claimed, rec, 0o600); err != nil {
		return rec, fmt.Errorf("record the claim: %w", err)
	}
	return rec, nil
}

// unclaim queues again a session whose claimed start did not begin: its
// claim, as it was queued, is renamed back.
func unclaim(dir string, rec queuedRecord) error {
	rec.ClaimedAt = nil
	claimed := filepath.Join(dir, home.ClaimedFile)
	if err := atomicfile.WriteJSON(claimed, rec, 0o600); err != nil {
		return err
	}
	return os.Rename(claimed, filepath.Join(dir, home.QueuedFile))
}

// cancelQueued cancels a queued session: it never starts. ok is false when
// it was not queued (its start was claimed first).
func (c *Core) cancelQueued(id string) (bool, error) {
	c.q.mu.Lock()
	defer c.q.mu.Unlock()
	dir := c.opts.Home.SessionDir(id)
	cancelled := filepath.Join(dir, home.CancelledFile)
	if err := os.Rename(filepath.Join(dir, home.QueuedFile), cancelled); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return false, nil
		}
		return false, fmt.Errorf("cancel queued session %s: %w", id, err)
	}
	defer c.q.poke() // the places behind it move up
	var rec queuedRecord
	if err := atomicfile.ReadJSON(cancelled, &rec, maxQueuedRecord); err != nil {
		return true, nil // cancelled all the same: the rename is the cancel
	}
	now := time.Now().UTC()
	rec.CancelledAt = &now
	rec.Request.Env, rec.Request.EnvOverrides = nil, nil
	if err := atomicfile.WriteJSON(cancelled, rec, 0o600); err != nil {
		c.log.Warn("record a queued session's cancel", "session", id, "err", err)
	}
	c.records.forget(id)
	return true, nil
}

// queueEvidence is what explain says of a session that has no launch
// record but a queue record: which record, and why it waits or what became
// of it. ok is false when it has none.
func queueEvidence(dir string, sess api.Session) (ev api.Evidence, reason string, ok bool) {
	for _, name := range []string{home.QueuedFile, home.ClaimedFile, home.CancelledFile} {
		path := filepath.Join(dir, name)
		if _, err := os.Lstat(path); err != nil {
			continue
		}
		ev = api.Evidence{Kind: api.EvidenceQueueRecord, Source: path}
		switch name {
		case home.QueuedFile:
			ev.Says = fmt.Sprintf("queued at %s; not started: nothing claimed its start", sess.CreatedAt.Format(time.RFC3339))
			reason = "queued: admission holds it back"
			if q := sess.Queue; q != nil {
				reason = fmt.Sprintf("queued (#%d, since %s): it waits because %s", q.Position, q.Since.Format(time.RFC3339), q.Reason)
				if q.Position == 0 {
					reason = "queued: " + q.Reason
				}
			}
		case home.ClaimedFile:
			ev.Says = "its start was claimed (the queued record renamed), and no launch record is there"
			reason = fmt.Sprintf("%s: ", sess.Status)
			if len(sess.Warnings) > 0 {
				reason += sess.Warnings[len(sess.Warnings)-1]
			}
		case home.CancelledFile:
			ev.Says = "the queued record was cancelled (stop or rm) before any start claimed it"
			reason = "ended: cancelled while queued; it never started"
		}
		return ev, reason, true
	}
	return ev, "", false
}

// queuedSession derives a session that has no launch record from its queue
// records: queued, cancelled, or claimed and not (yet) started. ok is false
// when it has none of them.
func (r *records) queuedSession(id, dir string) (api.Session, bool) {
	for _, name := range []string{home.QueuedFile, home.ClaimedFile, home.CancelledFile} {
		var rec queuedRecord
		err := atomicfile.ReadJSON(filepath.Join(dir, name), &rec, maxQueuedRecord)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			s := untrusted(id, fmt.Errorf("its queue record %s cannot be read: %w", name, err))
			return s, true
		}
		return r.fromQueued(id, name, rec), true
	}
	return api.Session{}, false
}

// fromQueued is the session object of a queue record (file name).
func (r *records) fromQueued(id, name string, rec queuedRecord) api.Session {
	req := rec.Request
	s := api.Session{
		ID: id, Adapter: api.CanonicalAdapter(req.Adapter), Origin: api.OriginLaunched, Name: req.Name, Group: req.Group,
		CreatedAt: rec.QueuedAt, Cwd: req.Cwd, Model: req.Model, Prompt: text.Truncate(req.Prompt, maxPromptShown),
		Labels: req.Labels, ResumeOf: req.ResumeOf, RestartOf: req.RestartOf,
	}
	if s.Adapter == api.ExecAdapter {
		s.Command = req.Command
	}
	if len(req.EnvOverrides) > 0 {
		s.EnvSet = envvar.Keys(req.EnvOverrides)
		sort.Strings(s.EnvSet)
	}
	switch name {
	case home.QueuedFile:
		s.Status = api.StatusQueued
		place, ok := r.q.place(id)
		if !ok {
			place = api.QueuePlace{Reason: "not yet looked at by the service's queue"}
		}
		place.Since = rec.QueuedAt
		s.Queue = &place
	case home.CancelledFile:
		s.Status = api.StatusEnded
		s.EndedAt = rec.CancelledAt
		s.Warnings = append(s.Warnings, "cancelled while queued: it never started")
	case home.ClaimedFile:
		claimed := rec.QueuedAt
		if rec.ClaimedAt != nil {
			claimed = *rec.ClaimedAt
		}
		switch {
		case r.q.isStarting(id):
			s.Status = api.StatusQueued
			s.Queue = &api.QueuePlace{Reason: "starting now", Since: rec.QueuedAt}
		case rec.Error != "":
			s.Status = api.StatusLost
			s.EndedAt = &claimed
			s.Warnings = append(s.Warnings, "its queued start failed: "+rec.Error)
		case time.Since(claimed) < incompleteGrace:
			s.Status = api.StatusUnknown
			s.Warnings = append(s.Warnings, fmt.Sprintf("its queued start was claimed at %s and has no launch record yet: the start may be under way, or the service stopped between the claim and the start; it is never started twice", claimed.Local().Format(time.DateTime)))
		default:
			s.Status = api.StatusLost
			s.EndedAt = &claimed
			s.Warnings = append(s.Warnings, fmt.Sprintf("its queued start was claimed at %s but no launch record followed (the service stopped between the claim and the start); it is not started again: launch it anew", claimed.Local().Format(time.DateTime)))
		}
	}
	return s
}
