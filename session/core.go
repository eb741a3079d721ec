// Package session is the session core: the view of every session (launch
// records ⊕ liveness ⊕ the adapters' native stores) and what can be done to
// one (launch, stop, input, transcript, logs, attach). It knows nothing of
// HTTP: the service routes each request to one call here, and the CLI's
// client offers the same operations over the socket.
package session

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/agentctl/agentctl/adapters"
	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/cgroup"
	"github.com/agentctl/agentctl/home"
	"github.com/agentctl/agentctl/internal/text"
	"github.com/agentctl/agentctl/proc"
	"github.com/agentctl/agentctl/resources"
	"github.com/agentctl/agentctl/spawn"
)

// maxPromptShown bounds the prompt a session object carries.
const maxPromptShown = 200

// Options configure the core.
type Options struct {
	Home home.Home
	// Exe is the agentctl binary each session's monitor runs as.
	Exe string
	// StandbyMonitor keeps a monitor started ahead of the next launch
	// (spawn.Starter), so a launch does not wait for a process start.
	StandbyMonitor bool
	// Adapters are the adapters the core reads and launches with: the
	// one place it finds an adapter by name.
	Adapters *adapters.Set
	// DiscoveryTimeout bounds each adapter's discovery (default 3 s).
	DiscoveryTimeout time.Duration
	Logger           *slog.Logger
	// Observers hear of launches and of the transitions the adapters show.
	Observers []Observer
	// Gate, when set, is asked before every launch (directory locks).
	Gate Gate
	// ObserveDiscovery, when set, hears how long each adapter took and
	// whether it failed (metrics).
	ObserveDiscovery func(adapter string, took time.Duration, err error)
	// Cgroups, when set, gives each launched session a cgroup of its own
	// where the machine allows it.
	Cgroups Cgroups
	// Limits are the limits of each adapter's sessions (configuration),
	// under those a launch asks for.
	Limits map[string]api.Limits
	// Admission, when set, is the admission policy now (configuration,
	// read again as it changes): caps and a memory floor (RunQueue).
	Admission func() api.Admission
	// Holds, when set, says which providers' usage limits hold their
	// sessions: a queued session of such a provider waits.
	Holds LimitBook
	// Book keeps the integrations' evidence (IntegrationHook); the
	// adapters read it as their adapters.Env.Hooks. Nil: a book of the
	// core's own, which no adapter reads.
	Book *Book
}

// Cgroups names each session's cgroup (cgroup.Manager), and says whether
// sessions get one here.
type Cgroups interface {
	Status() cgroup.Status
	Paths(id string) cgroup.Paths
}

// Observer hears what happens to sessions, as the core learns it.
type Observer interface {
	// Launched: a session this service started is running.
	Launched(api.Session)
	// Changed: a transition seen in the adapters' answers.
	Changed(Change)
}

// Gate guards launches: it may refuse one (a locked directory), and hears
// whether the start succeeded.
type Gate interface {
	// Reserve runs before the session's monitor starts; an error refuses
	// the launch.
	Reserve(id, dir, adapter string, req api.RunRequest) error
	// Started hands what was reserved to the session's process.
	Started(id, adapter string, process proc.Identity, took time.Duration)
	// Abandon undoes Reserve for a start that failed.
	Abandon(id string)
}

// Core is the session core of one service. It is made of parts with one
// job each, and composes them:
//
//   - base: what every part shares (the session folders, the adapters and
//     their discovery, the observers, the transitions detector's inbox);
//   - reader: the read side (List, Get, Explain, ...), whose reads change
//     nothing and announce nothing;
//   - launcher: the launch side (Launch, Rename, PodLaunch);
//   - the transitions detector (transitions), a loop of its own
//     (WatchTransitions);
//   - and, on Core itself, what acts on one session: stop, input, attach,
//     logs, attention, its end.
type Core struct {
	*reader
	*launcher
	attn *attention
}

// base is what every part of the core shares.
type base struct {
	opts     Options
	log      *slog.Logger
	adapters *adapters.Set
	records  *records
	disc     *discovery
	// moves is the transitions detector: reads offer it what they saw,
	// and its loop (WatchTransitions) announces what changed.
	moves *transitions
	// mons tells a running session's monitor by its pid (principal).
	mons monitorIndex
	// acct samples what running sessions cost.
	acct *accounting
	// q is the admission queue's state (queue.go).
	q *queueState
	// book is the integrations' evidence.
	book *Book

	// ctx bounds background work (learning native ids); wg waits for it.
	ctx context.Context
	wg  sync.WaitGroup
}

// reader is the read side of the core: the merged view and one session
// of it. A read changes nothing and announces nothing.
type reader struct {
	*base
	// repeated and handleIDs keep what a list derives from every id, for
	// the next list while the ids are the same.
	repeated  repeatIndex
	handleIDs handleIndex
}

// New returns the core for opts.Home; background work it starts ends with
// ctx (Wait waits for it).
func New(ctx context.Context, opts Options) *Core {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.DiscoveryTimeout <= 0 {
		opts.DiscoveryTimeout = 3 * time.Second
	}
	q := newQueueState()
	b := &base{
		opts:     opts,
		log:      opts.Logger,
		adapters: opts.Adapters,
		q:        q,
		records:  newRecords(opts.Home, q),
		disc:     newDiscovery(opts.Adapters.All(), opts.DiscoveryTimeout),
		moves:    newTransitions(),
		acct:     newAccounting(),
		book:     opts.Book,
		ctx:      ctx,
	}
	if b.book == nil {
		b.book = NewBook()
	}
	b.disc.observe = opts.ObserveDiscovery
	r := &reader{base: b}
	return &Core{
		reader:   r,
		launcher: &launcher{reader: r, starter: spawn.NewStarter(ctx, opts.Exe, opts.StandbyMonitor, opts.Logger)},
		attn:     newAttention(),
	}
}

// Wait waits for the core's background work, once its context has ended.
func (c *Core) Wait() { c.wg.Wait(); c.starter.Wait() }

// Warm runs one discovery, so the first list after a start does not pay for
// reading every store.
func (c *reader) Warm(ctx context.Context) { c.disc.run(ctx) }

// Launched derives one session this service started, from its folder.
// ErrIncomplete means its start is still in progress.
func (c *reader) Launched(id string) (api.Session, error) { return c.records.get(id) }

// LaunchedIDs lists the session folders.
func (c *reader) LaunchedIDs() ([]string, error) { return c.records.ids() }

// AllLaunched derives every session this service started; unreadable
// records become warnings.
func (c *reader) AllLaunched() ([]api.Session, []string, error) { return c.records.all() }

// Reading says how far the adapters' discoveries under way got, nil when
// none is under way.
func (c *Core) Reading() *api.ReadingStatus {
	read, found, ok := c.disc.reading()
	if !ok {
		return nil
	}
	return &api.ReadingStatus{Found: found, Read: read}
}

// Forget drops a removed session from what the core keeps.
func (c *Core) Forget(id string) { c.records.forget(id); c.moves.forget(id); c.acct.forget(id) }

// List is the merged view, narrowed and ordered oldest first. It changes
// nothing: what it saw of running sessions is offered to the transitions
// detector, which compares and announces in a loop of its own.
func (c *reader) List(ctx context.Context, o api.ListOptions) (api.SessionList, error) {
	var in listInPlace
	warnings, err := c.list(ctx, o, &in)
	if err != nil {
		return api.SessionList{}, err
	}
	kept := in.sessions
	if kept == nil {
		kept = []api.Session{}
	}
	if o.Waiting {
		sortByWaiting(kept)
	}
	list := api.SessionList{Sessions: kept, Warnings: warnings}
	if o.Resources {
		c.withResources(ctx, kept, resources.Options{}, false)
		if m, err := resources.ReadMachine(); err == nil {
			list.Machine = &m
		}
	}
	return list, nil
}

// ListEach is List for an answer written as it is made: the sessions
// are handed to emit one by one, oldest first, each built in one place
// that emit must not keep, and are never all held at once (a list of a
// 50,000-session store held 34 MB of them). begin is called first with
// at most how many there are. A list ordered by waiting, or with what
// sessions cost (o.Waiting, o.Resources), is made whole: use List. An
// error of emit ends the list and is returned.
func (c *reader) ListEach(ctx context.Context, o api.ListOptions, begin func(atMost int), emit func(*api.Session) error) (warnings []string, err error) {
	if o.Waiting || o.Resources {
		return nil, fmt.Errorf("list each: a list by waiting or with resources is made whole")
	}
	sink := listEmitting{started: begin, emit: emit}
	warnings, err = c.list(ctx, o, &sink)
	if err == nil {
		err = sink.err
	}
	return warnings, err
}

// listSink takes a list as it is made.
type listSink interface {
	// begin: the list holds at most n sessions.
	begin(n int)
	// slot is a zero session to build the next one in.
	slot() *api.Session
	// take: s, built in the last slot or launched, is in the list; false
	// when the sink takes no more.
	take(s *api.Session, built bool) bool
	// drop: the session built in the last slot is not.
	drop()
}

// listInPlace makes the list a slice made once at its size, each session
// only an adapter knows built in its place in it, not built and then
// copied (grown session by session, a large list was copied over and
// over).
type listInPlace struct{ sessions []api.Session }

func (l *listInPlace) begin(n int) { l.sessions = make([]api.Session, 0, n) }
func (l *listInPlace) slot() *api.Session {
	l.sessions = append(l.sessions, api.Session{})
	return &l.sessions[len(l.sessions)-1]
}
func (l *listInPlace) take(s *api.Session, built bool) bool {
	if !built {
		l.sessions = append(l.sessions, *s)
	}
	return true
}
func (l *listInPlace) drop() {
	l.sessions[len(l.sessions)-1] = api.Session{} // holds nothing it no longer shows
	l.sessions = l.sessions[:len(l.sessions)-1]
}

// listEmitting hands each session on as it is made, in one place.
type listEmitting struct {
	started func(int)
	emit    func(*api.Session) error
	one     api.Session
	err     error
}

func (l *listEmitting) begin(n int) {
	if l.started != nil {
		l.started(n)
	}
}
func (l *listEmitting) slot() *api.Session {
	l.one = api.Session{}
	return &l.one
}
func (l *listEmitting) take(s *api.Session, _ bool) bool {
	l.err = l.emit(s)
	return l.err == nil
}
func (l *listEmitting) drop() {}

// list makes the list o asks for into sink, oldest first, each session
// with its handle, and returns its warnings.
func (c *reader) list(ctx context.Context, o api.ListOptions, sink listSink) ([]string, error) {
	f, err := newFilter(o, time.Now())
	if err != nil {
		return nil, err
	}
	launched, disc, warnings, err := c.gather(ctx)
	if err != nil {
		return nil, err
	}
	followed := c.moves.followed()
	// A session only an adapter knows that cannot pass the filter is not
	// built, unless the transitions detector follows it; its id still
	// counts for the handles. Sized as the ids the last list knew: grown
	// id by id, it was copied over and over.
	skipped := make([]string, 0, c.handleIDs.size())
	plan := planMerge(launched, disc, func(ns *adapters.NativeSession) bool {
		if f.mayKeepNative(ns, !disc.failed[ns.Adapter]) || followed[ns.NativeID] {
			return false
		}
		skipped = append(skipped, ns.NativeID)
		return true
	})
	// The handles are found among every id before the first session is
	// made: each is its shortest unique prefix among them all.
	hs := c.handleIDs.handles(skipped, plan.ids())
	sink.begin(plan.size())
	var seen []api.Session
	var unknown unknownRows
	n, cut := -1, false
	plan.each(sink.slot, func(s *api.Session, built bool) bool {
		n++
		if followable(s, followed) {
			seen = append(seen, *s)
		}
		if !f.keep(s) {
			if built {
				sink.drop()
			}
			return true
		}
		s.Handle = hs[n]
		unknown.add(s)
		cut = !sink.take(s, built)
		return !cut
	})
	if cut {
		return warnings, nil // what was seen is not all there is
	}
	c.moves.offer(seen)
	if f.status == "" && !f.all {
		warnings = append(warnings, unknown.reasons()...)
	}
	return warnings, nil
}

// lookAtRunning is the transitions detector's own look at the view: the
// sessions it follows or that run with a known activity. Sessions only an
// adapter knows that cannot be running are not built.
func (c *reader) lookAtRunning(ctx context.Context) ([]api.Session, error) {
	followed := c.moves.followed()
	running := filter{status: api.StatusRunning}
	var seen []api.Session
	_, _, err := c.view(ctx, func(s *api.Session) bool {
		if followable(s, followed) {
			seen = append(seen, *s)
		}
		return false
	}, func(ns *adapters.NativeSession, failed bool) bool {
		return !running.mayKeepNative(ns, !failed) && !followed[ns.NativeID]
	})
	return seen, err
}

// LimitsView is what the usage-limits book needs of the sessions active
// since then: every launched one, and those only an adapter knows that may
// run or whose agent recorded a limit or its account's windows. The rest
// of a big store is never built, so the book's loop costs what the few
// sessions that matter cost.
func (c *reader) LimitsView(ctx context.Context, since time.Duration) ([]api.Session, error) {
	f, err := newFilter(api.ListOptions{All: true, Since: since}, time.Now())
	if err != nil {
		return nil, err
	}
	running := filter{status: api.StatusRunning}
	kept, _, err := c.view(ctx, f.keep, func(ns *adapters.NativeSession, failed bool) bool {
		if !f.mayKeepNative(ns, !failed) {
			return true
		}
		return ns.Limit == nil && len(ns.Windows) == 0 && !running.mayKeepNative(ns, !failed)
	})
	return kept, err
}

// maxUnknownReasons bounds the warnings that explain unknown rows one by
// one; past it, one warning counts them.
const maxUnknownReasons = 10

// unknownRows says why each unknown row of a list is listed: a list of
// running sessions shows them too, since nobody can say they are not
// running, and says why.
type unknownRows struct {
	n   int
	why []string
}

// add counts s if it is unknown.
func (u *unknownRows) add(s *api.Session) {
	if s.Status != api.StatusUnknown {
		return
	}
	u.n++
	if u.n > maxUnknownReasons {
		return
	}
	why := "nothing can vouch for it right now"
	if len(s.Warnings) > 0 {
		why = s.Warnings[len(s.Warnings)-1]
	}
	u.why = append(u.why, fmt.Sprintf("%s (%s) is listed as unknown: it may be running; %s (see `agentctl explain %s`)", s.Handle, s.Adapter, why, s.Handle))
}

// reasons are the warnings for the unknown rows counted.
func (u *unknownRows) reasons() []string {
	if u.n > maxUnknownReasons {
		return append(u.why, fmt.Sprintf("%d more sessions are listed as unknown (see `agentctl explain ID` for each)", u.n-maxUnknownReasons))
	}
	return u.why
}

// view is the merged view: launched sessions and those only adapters
// know, those keep accepts (all when keep is nil). skip, when set, is asked
// about each session only an adapter knows before its session object is
// built (see mergeSkipping); failed says its adapter failed this time. A
// session skip leaves out must be one keep would reject.
func (c *reader) view(ctx context.Context, keep func(*api.Session) bool, skip func(ns *adapters.NativeSession, failed bool) bool) ([]api.Session, []string, error) {
	launched, disc, warnings, err := c.gather(ctx)
	if err != nil {
		return nil, nil, err
	}
	var skipNative func(*adapters.NativeSession) bool
	if skip != nil {
		skipNative = func(ns *adapters.NativeSession) bool { return skip(ns, disc.failed[ns.Adapter]) }
	}
	return mergeSkipping(launched, disc, keep, skipNative), warnings, nil
}

// gather reads what a view merges: the launch records, and what every
// adapter discovers (its repeated ids found), with the warnings of both.
func (c *reader) gather(ctx context.Context) ([]api.Session, discovered, []string, error) {
	launched, warnings, err := c.records.all()
	if err != nil {
		return nil, discovered{}, nil, err
	}
	disc := c.disc.run(adapters.WithLaunched(ctx, launchPins(launched)))
	disc.repeats = c.repeated.repeats(disc.sessions)
	return launched, disc, append(warnings, disc.warnings...), nil
}

// launchPins are the launch records of running sessions whose native id is
// known, per adapter (pid -> native id): they pin those processes to their
// sessions in the adapters' attribution.
func launchPins(launched []api.Session) map[string]map[int]string {
	var out map[string]map[int]string
	for _, s := range launched {
		if s.Status != api.StatusRunning || s.NativeID == "" || s.PID <= 0 {
			continue
		}
		if out == nil {
			out = map[string]map[int]string{}
		}
		if out[s.Adapter] == nil {
			out[s.Adapter] = map[int]string{}
		}
		out[s.Adapter][s.PID] = s.NativeID
	}
	return out
}

// Get resolves an id or unique prefix to the merged session object, with
// the warnings of the adapters it asked.
func (c *reader) Get(ctx context.Context, prefix string) (api.Session, error) {
	sess, err := c.get(ctx, prefix)
	if err != nil {
		return api.Session{}, err
	}
	one := []api.Session{sess}
	c.withResources(ctx, one, resources.Options{IO: true}, true)
	return one[0], nil
}

// get is Get without what the session costs.
func (c *reader) get(ctx context.Context, prefix string) (api.Session, error) {
	sess, warnings, err := c.lookup(ctx, prefix)
	if err != nil {
		return api.Session{}, err
	}
	sess.Warnings = append(sess.Warnings, warnings...)
	if among, err := c.knownIDs(); err == nil {
		// Not through the list's kept index: one id is compared with the
		// others, and the index stays the list's.
		sess.Handle = handles([]string{sess.ID}, append(among, sess.ID))[sess.ID]
	}
	return sess, nil
}

// knownIDs are the ids a list finds handles among: the launched sessions'
// and, from each adapter's last answer, the native ids no launched session
// claims (those are listed under the launched id). A handle Get gives is
// then the one list prints.
func (c *reader) knownIDs() ([]string, error) {
	launched, _, err := c.records.all()
	if err != nil {
		return nil, err
	}
	return c.knownIDsOf(launched), nil
}

// knownIDsOf is knownIDs for the launched sessions at hand.
func (c *reader) knownIDsOf(launched []api.Session) []string {
	ids := make([]string, 0, len(launched))
	claimed := make(map[string]bool, len(launched))
	for _, s := range launched {
		ids = append(ids, s.ID)
		if s.NativeID != "" {
			claimed[s.NativeID] = true
		}
	}
	return c.disc.knownIDs(ids, claimed)
}

// lookup resolves an id or unique prefix to the merged session object and
// the warnings of the discovery that vouched for it.
func (c *reader) lookup(ctx context.Context, prefix string) (api.Session, []string, error) {
	if prefix == "" {
		return api.Session{}, nil, faultf(ErrInvalid, "an empty session id")
	}
	id, err := c.records.resolveLaunched(prefix)
	if err == nil {
		sess, err := c.records.get(id)
		if err != nil {
			return api.Session{}, nil, err
		}
		if sess.NativeID == "" && sess.Adapter == api.ExecAdapter && sess.Status == api.StatusRunning {
			c.learnCommandAgent(ctx, &sess)
		}
		if sess.NativeID == "" || c.adapters.Get(nativeAdapterOf(&sess)) == nil {
			return sess, nil, nil
		}
		merged, warnings := c.withNative(ctx, sess)
		return merged, warnings, nil
	}
	// Not launched here: maybe a session only an adapter knows. A handle
	// agentctl's own ids cannot take (OpenClaw's agent:main:dashboard:…)
	// is looked for only among the sessions of the adapters that say it is
	// one of theirs.
	if !errors.Is(err, ErrNotFound) && !errors.Is(err, ErrInvalid) {
		return api.Session{}, nil, err
	}
	accepted, err := c.nativeIDOwners(prefix)
	if err != nil {
		return api.Session{}, nil, err
	}
	// A discovered session's id is its native id, so only the native
	// sessions with the prefix are merged (with every launched one, which
	// may claim them): one id costs the discovery, not a merge of the
	// whole view. The view's transitions are left to whole-view passes.
	launched, warnings, err := c.records.all()
	if err != nil {
		return api.Session{}, nil, err
	}
	sess, more, err := c.lookupNative(adapters.WithLaunched(ctx, launchPins(launched)), prefix, accepted, launched)
	return sess, append(warnings, more...), err
}

// lookupNative resolves a prefix among the sessions only adapters know.
// The adapters whose last answer holds the prefix are asked alone, the
// others' last answers standing in for them (so a prefix they share is
// still ambiguous); when none holds it, or those asked no longer do,
// every adapter is asked. accepted, when not nil, names the adapters whose
// ids the prefix can be (the others' sessions are not candidates).
func (c *reader) lookupNative(ctx context.Context, prefix string, accepted map[string]bool, launched []api.Session) (api.Session, []string, error) {
	if a, id := c.disc.holder(prefix, accepted); a != nil {
		if ns, err := c.disc.one(ctx, a, id); err == nil {
			one := discovered{sessions: [][]adapters.NativeSession{{ns}}, failed: map[string]bool{}}
			if sess, err := c.resolveNative(id, accepted, launched, one); err == nil {
				return sess, nil, nil
			}
		}
		// Not found alone (claimed by a launched session, gone), or the
		// read failed: the discoveries below decide, and warn.
	}
	owners, last := c.disc.owners(prefix)
	if len(owners) > 0 {
		disc := c.disc.runOf(ctx, owners)
		for i, a := range owners {
			last[a.Name()] = disc.sessions[i]
		}
		stand := discovered{failed: disc.failed, warnings: disc.warnings}
		for _, a := range c.disc.adapters {
			stand.sessions = append(stand.sessions, last[a.Name()])
		}
		sess, err := c.resolveNative(prefix, accepted, launched, stand)
		if !errors.Is(err, ErrNotFound) {
			return sess, disc.warnings, err
		}
	}
	disc := c.disc.run(ctx)
	sess, err := c.resolveNative(prefix, accepted, launched, disc)
	return sess, disc.warnings, err
}

// resolveNative merges the native sessions with the prefix (and the
// launched ones, which may claim them) and resolves the prefix among them.
func (c *reader) resolveNative(prefix string, accepted map[string]bool, launched []api.Session, disc discovered) (api.Session, error) {
	low := strings.ToLower(prefix)
	narrowed := disc
	narrowed.sessions = make([][]adapters.NativeSession, len(disc.sessions))
	for i, ss := range disc.sessions {
		for _, ns := range ss {
			if (accepted == nil || accepted[ns.Adapter]) && hasPrefixFold(ns.NativeID, prefix) {
				narrowed.sessions[i] = append(narrowed.sessions[i], ns)
			}
		}
	}
	all := merge(launched, narrowed, func(sess *api.Session) bool {
		return sess.Origin == api.OriginDiscovered && (accepted == nil || accepted[sess.Adapter]) &&
			strings.HasPrefix(strings.ToLower(sess.ID), low)
	})
	ids := make([]string, 0, len(all))
	byID := make(map[string]api.Session, len(all))
	for _, sess := range all {
		ids = append(ids, sess.ID)
		byID[sess.ID] = sess
	}
	id, err := resolvePrefix(prefix, ids)
	if err != nil {
		return api.Session{}, err
	}
	return byID[id], nil
}

// nativeIDOwners says which adapters a handle can be a native id of: nil
// (any) for a handle shaped like agentctl's own ids, else the adapters
// whose NativeIDChecker accepts it; ErrInvalid when none does.
func (c *reader) nativeIDOwners(handle string) (map[string]bool, error) {
	if home.ValidID(handle) {
		return nil, nil
	}
	var owners map[string]bool
	for _, a := range c.disc.adapters {
		if ck, ok := a.(adapters.NativeIDChecker); ok && ck.ValidNativeID(handle) {
			if owners == nil {
				owners = map[string]bool{}
			}
			owners[a.Name()] = true
		}
	}
	if owners == nil {
		return nil, faultf(ErrInvalid, "%s is not a valid session id, nor the name of a session (see `agentctl list -a`)", text.Quote(handle))
	}
	return owners, nil
}

// withNative enriches one launched session from its own adapter alone, and
// returns that adapter's warnings: a failing adapter says so everywhere.
// The other runs of its native session (an original and its resumes) are
// merged beside it, so that its counts are its own, as in a list.
func (c *reader) withNative(ctx context.Context, sess api.Session) (api.Session, []string) {
	a := c.adapters.Get(nativeAdapterOf(&sess))
	var found discovered
	// Its adapter reads that session alone where it can; a store that has
	// it not (yet) enriches nothing, as a discovery without it would.
	switch ns, err := c.disc.one(ctx, a, sess.NativeID); {
	case err == nil:
		found = discovered{sessions: [][]adapters.NativeSession{{ns}}, failed: map[string]bool{}}
	case errors.Is(err, adapters.ErrNoSession):
		found = discovered{failed: map[string]bool{}}
	default:
		found = c.disc.runOf(ctx, []adapters.Adapter{a})
	}
	runs := []api.Session{sess}
	if all, _, err := c.records.all(); err == nil {
		for _, s := range all {
			if s.ID != sess.ID && nativeAdapterOf(&s) == nativeAdapterOf(&sess) && s.NativeID == sess.NativeID {
				runs = append(runs, s)
			}
		}
	}
	for _, m := range merge(runs, found, nil) {
		if m.ID == sess.ID {
			return m, found.warnings
		}
	}
	return sess, found.warnings
}

func resolvePrefix(prefix string, ids []string) (string, error) {
	var matches []string
	low := strings.ToLower(prefix)
	for _, id := range ids {
		if strings.EqualFold(id, prefix) {
			return id, nil
		}
		if strings.HasPrefix(strings.ToLower(id), low) {
			matches = append(matches, id)
		}
	}
	switch len(matches) {
	case 0:
		return "", faultf(ErrNotFound, "no session matches %s (see `agentctl list -a`)", text.Quote(prefix))
	case 1:
		return matches[0], nil
	}
	return "", &AmbiguousError{Prefix: prefix, Candidates: matches}
}

// WaitingByHand counts the running sessions agentctl did not launch (started
// by hand, seen in the agents' stores and integrations) that wait for a
// person, by what for, as the transitions detector last saw them.
func (c *Core) WaitingByHand() map[string]int { return c.moves.waitingByHand() }

// WatchTransitions runs the transitions detector as a loop of its own
// until ctx ends (Wait waits for it): it compares the views reads offer,
// and, while sessions run, looks at the view itself; the transitions it
// finds go to the observers. Reads never announce anything.
func (c *Core) WatchTransitions(ctx context.Context) {
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		c.moves.follow(ctx, c.lookAtRunning, c.notify)
	}()
}

// notify hands transitions to the observers.
func (c *base) notify(changes []Change) {
	for _, ch := range changes {
		for _, o := range c.opts.Observers {
			o.Changed(ch)
		}
	}
}

// filter is what a list may be narrowed to.
type filter struct {
	all     bool
	status  api.Status
	adapter string
	group   string
	labels  map[string]string
	since   time.Time
	waiting bool
}

func newFilter(o api.ListOptions, now time.Time) (filter, error) {
	f := filter{all: o.All, status: api.Status(o.Status), adapter: o.Adapter, group: o.Group, waiting: o.Waiting}
	for _, l := range o.Labels {
		k, v, ok := strings.Cut(l, "=")
		if !ok {
			return f, faultf(ErrInvalid, "label filter %s: want KEY=VALUE", text.Quote(l))
		}
		if f.labels == nil {
			f.labels = map[string]string{}
		}
		f.labels[k] = v
	}
	if o.Since < 0 {
		return f, faultf(ErrInvalid, "since %s: a duration looks back and cannot be negative", o.Since)
	}
	since := o.Since
	if since == 0 {
		since = 7 * 24 * time.Hour
	}
	f.since = now.Add(-since)
	return f, nil
}

// mayKeepNative says whether a session only an adapter knows may pass the
// filter, before its session object is built: false only when nothing
// about it can make it run (its adapter vouches for it, and neither a live
// process nor the agent's own state says it runs; see nativeStatus) and
// the filter wants running sessions (or, by default, running and unknown
// ones, and the agent's own record says it is over), or looks back (all)
// no further than its last activity.
func (f filter) mayKeepNative(ns *adapters.NativeSession, vouched bool) bool {
	canRun := vouched && (ns.Process != nil || ns.State == adapters.NativeBusy || ns.State == adapters.NativeIdle || ns.State == adapters.NativeRunning)
	if f.status == api.StatusRunning {
		return canRun
	}
	if f.status == "" && !f.all {
		// Running or unknown (see keep): only a session its adapter
		// vouches for as over is turned away.
		return canRun || mayBeUnknown(ns, vouched)
	}
	if f.all && !canRun {
		// As keep looks back: a native session has no end, its last
		// activity is its update, else its creation.
		last := ns.CreatedAt
		if !ns.UpdatedAt.IsZero() {
			last = ns.UpdatedAt
		}
		return !last.Before(f.since)
	}
	return true
}

// mayBeUnknown says whether a session only an adapter knows may read
// unknown (see nativeStatus): its adapter did not answer this time, or the
// agent's own state does not say (ambiguous evidence).
func mayBeUnknown(ns *adapters.NativeSession, vouched bool) bool {
	switch ns.State {
	case adapters.NativeDone, adapters.NativeFailed, adapters.NativeAborted:
		// Over by the agent's own record, unless a live process holds it
		// (running) or its adapter failed (unknown).
		return !vouched
	}
	return true
}

func (f filter) keep(s *api.Session) bool {
	switch {
	case f.status != "":
		if s.Status != f.status {
			return false
		}
	case !f.all:
		// Without -a, every session that may be live: running, and
		// unknown (nobody can vouch either way), never left out.
		if s.Status.Ended() {
			return false
		}
	}
	if f.all && s.Status != api.StatusRunning {
		last := s.CreatedAt
		if s.EndedAt != nil {
			last = *s.EndedAt
		} else if s.LastActivity != nil {
			last = *s.LastActivity
		}
		if last.Before(f.since) {
			return false
		}
	}
	if f.adapter != "" && s.Adapter != f.adapter {
		return false
	}
	if f.group != "" && s.Group != f.group {
		return false
	}
	for k, v := range f.labels {
		if s.Labels[k] != v {
			return false
		}
	}
	if f.waiting && (s.Status != api.StatusRunning || s.Activity != api.ActivityWaiting) {
		return false
	}
	return true
}
