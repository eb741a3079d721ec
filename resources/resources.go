// Package resources samples what each session costs the machine: CPU
// (percent over the interval between two samples, and seconds in all),
// memory (current and peak), tasks and storage I/O, read from the
// session's cgroup where it has one (cgroup.json in its folder), else
// summed over its process tree from one read of the process table shared
// by every session of the sample. Nothing samples on a timer: figures are
// read when asked, and the last sample of each session is kept in memory,
// for the next one's CPU percent. The highest memory seen is kept in the
// session's folder, so an ended session still says its peak.
package resources

import (
	"context"
	"sync"
	"time"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/proc"
)

// Target is one session to sample.
type Target struct {
	ID string
	// Dir is the session's folder: its cgroup.json, its peak record.
	Dir string
	// Started is when the session started: a first sample's CPU percent
	// is its average since then.
	Started time.Time
	// Members lists the session's processes in an indexed process table,
	// when it has no cgroup.
	Members func(*proc.Index) []proc.Info
}

// Options say what a sample reads beyond CPU, memory and tasks.
type Options struct {
	// IO reads each process's storage I/O counters too (/proc/PID/io, one
	// more file per process), or the cgroup's.
	IO bool
}

// minWindow is the shortest interval a CPU percent is measured over: two
// samples closer than that (two clients asking at once) share the older
// one's baseline.
const minWindow = 250 * time.Millisecond

// reuseWithin is how recent a session's last sample may be to be given
// again rather than read again: clients that ask at once (a top, a stats,
// a script polling status) share one read.
const reuseWithin = 250 * time.Millisecond

// forgetAfter drops the kept sample of a session nobody asked about for
// that long (it ended, or nobody looks).
const forgetAfter = 10 * time.Minute

// Sampler samples sessions and keeps each one's last sample. It is safe
// for concurrent use.
type Sampler struct {
	mu   sync.Mutex
	last map[string]*kept
	// specs is what each session's home.CgroupFile said when last read.
	specs map[string]specRead
	// now is the clock (tests).
	now func() time.Time

	// readMu guards rd, which keeps files open between samples. It is
	// taken before mu, never while mu is held.
	readMu sync.Mutex
	rd     *reader
}

// kept is what the sampler remembers of a session between samples.
type kept struct {
	at  time.Time
	cpu time.Duration
	// pct and window are the last CPU percent and what it was measured
	// over, given again to a sample that comes within minWindow.
	pct    float64
	window time.Duration
	// peak is the highest memory seen; recorded what the session's folder
	// holds (read once, on first sight).
	peak, recorded uint64
	seen           time.Time
	// res is the last sample, read at res.SampledAt with opts.
	res  api.Resources
	opts Options
}

// specRead is one read of a session's home.CgroupFile: a cgroup (ok), or none
// as of at.
type specRead struct {
	spec cgroupSpec
	ok   bool
	at   time.Time
}

// specRecheck is how long a session found without a cgroup is taken to
// have none: a monitor writes its home.CgroupFile as the session starts, so
// this only bounds how late one written later is seen.
const specRecheck = 30 * time.Second

// New returns a sampler that has sampled nothing.
func New() *Sampler {
	return &Sampler{last: map[string]*kept{}, specs: map[string]specRead{}, now: time.Now, rd: newReader()}
}

// Close releases what the sampler keeps open.
func (s *Sampler) Close() {
	s.readMu.Lock()
	s.rd.close()
	s.readMu.Unlock()
}

// cachedSpec is what is known of id's cgroup: known says whether it need
// not be read again.
func (s *Sampler) cachedSpec(id string, now time.Time) (spec cgroupSpec, ok, known bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, found := s.specs[id]
	if !found || (!r.ok && now.Sub(r.at) > specRecheck) {
		return cgroupSpec{}, false, false
	}
	return r.spec, r.ok, true
}

// keepSpec notes what id's home.CgroupFile said.
func (s *Sampler) keepSpec(id string, spec cgroupSpec, ok bool, at time.Time) {
	s.mu.Lock()
	s.specs[id] = specRead{spec: spec, ok: ok, at: at}
	s.mu.Unlock()
}

// figures is one read of one session, before the CPU percent.
type figures struct {
	source           string
	cpu              *time.Duration
	mem, peak        *uint64
	tasks, processes *int
	ioRead, ioWrite  *uint64
}

// Sample reads the targets' figures now, by session id. A session whose
// figures cannot be read at all is left out.
func (s *Sampler) Sample(ctx context.Context, targets []Target, o Options) map[string]api.Resources {
	out := make(map[string]api.Resources, len(targets))
	if len(targets) == 0 {
		return out
	}
	// What was sampled a moment ago (with as much as asked) is given again.
	now := s.now()
	stale := make([]Target, 0, len(targets))
	s.mu.Lock()
	for _, t := range targets {
		if k := s.last[t.ID]; k != nil && !k.res.SampledAt.IsZero() && now.Sub(k.res.SampledAt) < reuseWithin && (k.opts.IO || !o.IO) {
			k.seen = now
			out[t.ID] = k.res
			continue
		}
		stale = append(stale, t)
	}
	s.mu.Unlock()
	if len(stale) == 0 {
		return out
	}
	read := s.read(ctx, stale, o)
	now = s.now()
	var grown []peakWrite
	// The peaks that grew are written once the lock is let go.
	defer func() {
		for _, w := range grown {
			writePeak(w.dir, w.peak, now)
		}
	}()
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, t := range stale {
		f := read[i]
		if f == nil {
			continue
		}
		k := s.last[t.ID]
		if k == nil {
			k = &kept{recorded: readPeak(t.Dir)}
			k.peak = k.recorded
			s.last[t.ID] = k
		}
		k.seen = now
		r := api.Resources{SampledAt: now, Source: f.source, MemoryBytes: f.mem, PIDs: f.tasks, Processes: f.processes, IOReadBytes: f.ioRead, IOWriteBytes: f.ioWrite}
		if f.cpu != nil {
			secs := f.cpu.Seconds()
			r.CPUSeconds = &secs
			pct, window := s.percent(k, t, *f.cpu, now)
			if window > 0 {
				r.CPUPercent, r.CPUWindowS = &pct, window.Seconds()
			}
		}
		peak := k.peak
		if f.mem != nil {
			peak = max(peak, *f.mem)
		}
		if f.peak != nil {
			peak = max(peak, *f.peak)
		}
		k.peak = peak
		if peak > 0 {
			r.MemoryPeakBytes = &peak
			// Written when it grew by more than 1%: a session that holds
			// still costs no write, one that grows a few.
			if peak > k.recorded+k.recorded/100 {
				k.recorded = peak
				grown = append(grown, peakWrite{dir: t.Dir, peak: peak})
			}
		}
		k.res, k.opts = r, o
		out[t.ID] = r
	}
	for id, k := range s.last {
		if now.Sub(k.seen) > forgetAfter {
			delete(s.last, id)
			delete(s.specs, id)
		}
	}
	return out
}

// peakWrite is a peak to keep in a session's folder.
type peakWrite struct {
	dir  string
	peak uint64
}

// percent is the CPU percent of a session whose processes used cpu in all
// by now, and the window it is measured over, from its kept sample; it
// moves the kept sample on. s.mu is held.
func (s *Sampler) percent(k *kept, t Target, cpu time.Duration, now time.Time) (float64, time.Duration) {
	if !k.at.IsZero() {
		window := now.Sub(k.at)
		if window < minWindow {
			return k.pct, k.window
		}
		used := cpu - k.cpu
		// A process that ended unwaited-for takes its time with it: the
		// sum went down, and this window says nothing certain.
		pct := max(0, 100*used.Seconds()/window.Seconds())
		k.at, k.cpu, k.pct, k.window = now, cpu, pct, window
		return pct, window
	}
	k.at, k.cpu = now, cpu
	if t.Started.IsZero() || !now.After(t.Started) {
		return 0, 0
	}
	window := now.Sub(t.Started)
	k.pct, k.window = 100*cpu.Seconds()/window.Seconds(), window
	return k.pct, k.window
}

// Fresh says whether the sampler has a sample of id recent enough to
// measure a CPU percent over an interval (rather than since the start).
func (s *Sampler) Fresh(id string, within time.Duration) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := s.last[id]
	return k != nil && !k.at.IsZero() && s.now().Sub(k.at) <= within
}

// Forget drops what the sampler keeps of a session.
func (s *Sampler) Forget(id string) {
	s.mu.Lock()
	delete(s.last, id)
	delete(s.specs, id)
	s.mu.Unlock()
	s.readMu.Lock()
	s.rd.forget(id)
	s.readMu.Unlock()
}

// Ended is what an ended session's folder says of its cost: the peak
// memory its exit record carries (the cgroup's), else the highest the
// service saw; nil when neither says.
func Ended(dir string) *api.Resources {
	peak := exitPeak(dir)
	if peak == 0 {
		peak = readPeak(dir)
	}
	if peak == 0 {
		return nil
	}
	return &api.Resources{Source: "record", MemoryPeakBytes: &peak}
}
