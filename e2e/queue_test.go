package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentctl/agentctl/api"
)

// writeConfig writes the installation's config.json.
func writeConfig(t *testing.T, e *Env, cfg string) {
	t.Helper()
	if err := os.MkdirAll(e.Home, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.Home, "config.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
}

// maxOverlap is the most of sessions whose [start, end] intervals overlap
// at one instant.
func maxOverlap(ss []api.Session) int {
	type edge struct {
		at    time.Time
		delta int
	}
	var edges []edge
	for _, s := range ss {
		edges = append(edges, edge{*s.StartTime, +1}, edge{*s.EndedAt, -1})
	}
	// At one instant, an end comes before a start.
	slices.SortFunc(edges, func(a, b edge) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return a.delta - b.delta
	})
	n, most := 0, 0
	for _, e := range edges {
		n += e.delta
		most = max(most, n)
	}
	return most
}

// Six real agents launched with --queue under a cap of 2: never more than 2
// run at once (sampled all along, and from their own start and end
// times), all six finish, each started once, in the order they were
// queued; a service restart mid-queue starts nothing twice and loses
// nothing.
func TestQueueSixAgentsCapTwo(t *testing.T) {
	t.Parallel()
	c := newClaudeEnv(t)
	writeConfig(t, c.Env, `{"admission": {"max_sessions": 2}}`)
	var ids []string
	for i := range 6 {
		// Each in a folder of its own: an agent locks its folder.
		dir := filepath.Join(c.proj, string(rune('a'+i)))
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		var s api.Session
		c.JSON(&s, "launch", "claude", "--json", "--queue", "--cwd", dir, "-p", "queued run "+string(rune('a'+i))+" [[sleep: 3]]")
		ids = append(ids, s.ID)
		if i >= 2 && s.Status != api.StatusQueued {
			t.Fatalf("launch %d beyond the cap of 2: %s, want queued", i+1, s.Status)
		}
	}
	// A sampler counts the running sessions all along.
	var mu sync.Mutex
	most, samples := 0, 0
	done := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			select {
			case <-done:
				return
			default:
			}
			out, _, code := c.Run("list", "--json", "--status", "running")
			if code != 0 {
				continue // the service restarting
			}
			n := strings.Count(out, `"origin": "launched"`)
			mu.Lock()
			most, samples = max(most, n), samples+1
			mu.Unlock()
		}
	}()
	// Mid-queue (two have started, some still wait), the service restarts.
	WaitFor(t, 120*time.Second, "the third to start", func() bool {
		return c.Session(ids[2]).Status != api.StatusQueued
	})
	if c.Session(ids[5]).Status != api.StatusQueued {
		t.Fatal("the sixth is no longer queued before the restart: the test restarts too late")
	}
	c.MustRun("daemon", "restart")
	var final []api.Session
	WaitFor(t, 300*time.Second, "all six to end", func() bool {
		final = final[:0]
		for _, id := range ids {
			s := c.Session(id)
			if !s.Status.Ended() {
				return false
			}
			final = append(final, s)
		}
		return true
	})
	close(done)
	<-sampled
	for i, s := range final {
		if s.Status != api.StatusExited || s.ExitCode == nil || *s.ExitCode != 0 || s.StartTime == nil || s.EndedAt == nil {
			t.Fatalf("session %d (%s): %s exit %v, want exited 0 with its start and end: %+v", i+1, s.ID, s.Status, s.ExitCode, s.Warnings)
		}
		if i > 0 && s.StartTime.Before(*final[i-1].StartTime) {
			t.Errorf("session %d started at %s, before session %d (%s): not in order", i+1, s.StartTime, i, final[i-1].StartTime)
		}
	}
	if n := maxOverlap(final); n > 2 {
		t.Errorf("%d sessions ran at once by their own start and end times, cap 2", n)
	}
	mu.Lock()
	defer mu.Unlock()
	t.Logf("%d samples of the running sessions, at most %d at once", samples, most)
	if most > 2 {
		t.Errorf("%d sessions ran at once in a sample, cap 2", most)
	}
	// Each started once: one native session per queued one, none more.
	files, _ := filepath.Glob(filepath.Join(c.home, ".claude", "projects", "*", "*.jsonl"))
	if len(files) != 6 {
		t.Errorf("%d claude sessions were made, want 6 (each queued session started once): %v", len(files), files)
	}
	natives := map[string]bool{}
	for _, s := range final {
		natives[s.NativeID] = true
	}
	if len(natives) != 6 {
		t.Errorf("%d distinct native sessions for six queued ones", len(natives))
	}
}

// Stop of a queued session cancels it: it never starts, also when the slot
// it waited for frees; rm of a queued one takes it away.
func TestQueueStopCancels(t *testing.T) {
	t.Parallel()
	e := NewEnv(t)
	writeConfig(t, e, `{"admission": {"max_sessions": 1}}`)
	first := e.Start("--", "sleep", "60")
	var cancelled, removed, next api.Session
	e.JSON(&cancelled, "run", "--json", "--queue", "--", "sh", "-c", "echo cancelled-ran")
	e.JSON(&removed, "run", "--json", "--queue", "--", "sh", "-c", "echo removed-ran")
	e.JSON(&next, "run", "--json", "--queue", "--name", "after", "--", "true")
	for _, s := range []api.Session{cancelled, removed, next} {
		if s.Status != api.StatusQueued || s.Queue == nil {
			t.Fatalf("launch beyond the cap: %+v, want queued with its place", s)
		}
	}
	if out := e.MustRun("daemon", "status"); !strings.Contains(out, "admission at most 1 running; 3 queued") {
		t.Errorf("daemon status with three queued under a cap of one:\n%s", out)
	}
	// A queued session holds its name, and has nothing to restart.
	if _, errOut, code := e.Run("run", "--queue", "--name", "after", "--", "true"); code == 0 || !strings.Contains(errOut, "taken by queued session "+next.ID) {
		t.Errorf("a second session named as a queued one: exit %d, %q; want refused, naming the queued one", code, errOut)
	}
	if _, errOut, code := e.Run("restart", next.ID); code == 0 || !strings.Contains(errOut, "is queued and has not started") {
		t.Errorf("restart of a queued session: exit %d, %q; want a refusal saying it has not started", code, errOut)
	}
	if next.Queue.Position != 3 {
		t.Errorf("the third queued is #%d, want #3", next.Queue.Position)
	}
	var got api.Session
	e.JSON(&got, "stop", "--json", cancelled.ID)
	if got.Status != api.StatusEnded || !strings.Contains(strings.Join(got.Warnings, " "), "cancelled") {
		t.Fatalf("stop of a queued session: %s %q, want ended, cancelled", got.Status, got.Warnings)
	}
	e.MustRun("rm", removed.ID)
	if _, _, code := e.Run("status", removed.ID); code == 0 {
		t.Errorf("rm of a queued session left it")
	}
	// The one behind moved up.
	if s := e.Session(next.ID); s.Queue == nil || s.Queue.Position != 1 {
		t.Errorf("after the two before it went: %+v, want #1", s.Queue)
	}
	e.MustRun("stop", first.ID)
	e.WaitStatus(next.ID, api.StatusExited, 30*time.Second)
	// Its events: queued, then started, then stopped.
	var types []string
	for _, ev := range e.events(t, next.ID) {
		types = append(types, ev.Type)
	}
	if !slices.Equal(types, []string{api.EventSessionQueued, api.EventSessionStarted, api.EventSessionStopped}) {
		t.Errorf("the queued session's events: %v", types)
	}
	if s := e.Session(cancelled.ID); s.Status != api.StatusEnded || s.PID != 0 {
		t.Errorf("the cancelled session after the slot freed: %s pid %d, want ended, never started", s.Status, s.PID)
	}
	if _, err := os.Stat(filepath.Join(e.SessionDir(cancelled.ID), "launch.json")); err == nil {
		t.Errorf("the cancelled session was started")
	}
	if _, err := os.Stat(e.SessionDir(removed.ID)); err == nil {
		t.Errorf("the removed session's folder is still there")
	}
}

// A memory floor above the machine's MemAvailable queues a launch and
// status says why; a launch without --queue is refused naming the floor;
// lowering the floor in config.json lets the queued one start.
func TestQueueMemoryFloor(t *testing.T) {
	t.Parallel()
	e := NewEnv(t)
	writeConfig(t, e, `{"admission": {"memory_floor": "1000T"}}`)
	_, errOut, code := e.Run("run", "--", "true")
	if code == 0 || !strings.Contains(errOut, "below the memory floor") || !strings.Contains(errOut, "--queue") {
		t.Fatalf("a launch below the floor without --queue: exit %d, %q; want refused, naming the floor and --queue", code, errOut)
	}
	var s api.Session
	e.JSON(&s, "run", "--json", "--queue", "--", "true")
	if s.Status != api.StatusQueued {
		t.Fatalf("a launch below the floor with --queue: %s, want queued", s.Status)
	}
	out := e.MustRun("status", s.ID)
	if !strings.Contains(out, "MemAvailable") || !strings.Contains(out, "below the memory floor 1000TiB") {
		t.Errorf("status does not say why it waits:\n%s", out)
	}
	ex := e.MustRun("explain", s.ID)
	if !strings.Contains(ex, "below the memory floor") {
		t.Errorf("explain does not say why it waits:\n%s", ex)
	}
	if !strings.Contains(e.MustRun("list", "--queued"), s.ID[:4]) {
		t.Errorf("list --queued does not list it")
	}
	// Still queued a while later: the floor holds it.
	time.Sleep(3 * time.Second)
	if got := e.Session(s.ID); got.Status != api.StatusQueued {
		t.Fatalf("below the floor it became %s", got.Status)
	}
	writeConfig(t, e, `{"admission": {"memory_floor": "1M"}}`)
	e.WaitStatus(s.ID, api.StatusExited, 30*time.Second)
}

// A queued session admitted while its folder is another session's (an
// agent's, or --lock) is not lost: it waits for the folder, queued, and
// starts once the folder is free.
func TestQueueWaitsForLockedFolder(t *testing.T) {
	t.Parallel()
	e := NewEnv(t)
	writeConfig(t, e, `{"admission": {"max_sessions": 2}}`)
	dir := t.TempDir()
	holder := e.Start("--lock", "--cwd", dir, "--", "sleep", "60")
	other := e.Start("--", "sleep", "60")
	var s api.Session
	e.JSON(&s, "run", "--json", "--queue", "--lock", "--cwd", dir, "--", "true")
	if s.Status != api.StatusQueued {
		t.Fatalf("a launch beyond the cap: %s, want queued", s.Status)
	}
	// A slot frees; the folder is still held.
	e.MustRun("stop", other.ID)
	WaitFor(t, 30*time.Second, "the queue to find the folder locked", func() bool {
		got := e.Session(s.ID)
		return got.Queue != nil && strings.Contains(got.Queue.Reason, "in use by session "+holder.ID)
	})
	if got := e.Session(s.ID); got.Status != api.StatusQueued {
		t.Fatalf("admitted into a locked folder: %s %q, want queued", got.Status, got.Warnings)
	}
	// A launch that asks to be queued into the held folder is queued
	// (behind the one before it, or for the folder), never refused.
	var direct api.Session
	e.JSON(&direct, "run", "--json", "--queue", "--lock", "--cwd", dir, "--", "true")
	if direct.Status != api.StatusQueued || direct.Queue == nil {
		t.Fatalf("a launch into a held folder with --queue: %s, want queued", direct.Status)
	}
	e.MustRun("stop", holder.ID)
	e.WaitStatus(s.ID, api.StatusExited, 30*time.Second)
	e.WaitStatus(direct.ID, api.StatusExited, 30*time.Second)
}

// A service that stopped between a queued session's claim and its start
// (the claim on disk, no launch record) leaves it saying so: the service
// started again reads it unknown, then lost, with the reason, and never
// starts it.
func TestQueueClaimWithoutStartIsNeverStarted(t *testing.T) {
	t.Parallel()
	e := NewEnv(t)
	writeConfig(t, e, `{"admission": {"max_sessions": 1}}`)
	first := e.Start("--", "sleep", "60")
	var s api.Session
	e.JSON(&s, "run", "--json", "--queue", "--", "sh", "-c", "echo started-twice")
	e.MustRun("daemon", "stop")
	// What the claim leaves: the record renamed, when it was claimed.
	dir := e.SessionDir(s.ID)
	b, err := os.ReadFile(filepath.Join(dir, "queued.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rec map[string]any
	if err := json.Unmarshal(b, &rec); err != nil {
		t.Fatal(err)
	}
	claim := func(at time.Time) {
		t.Helper()
		rec["claimed_at"] = at
		b, _ := json.Marshal(rec)
		if err := os.WriteFile(filepath.Join(dir, "claimed.json"), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	claim(time.Now())
	if err := os.Remove(filepath.Join(dir, "queued.json")); err != nil {
		t.Fatal(err)
	}
	// The slot frees as the service starts again.
	killPID(t, first.PID, syscall.SIGKILL)
	got := e.Session(s.ID)
	if got.Status != api.StatusUnknown || !strings.Contains(strings.Join(got.Warnings, " "), "never started twice") {
		t.Fatalf("a claim without a start, just now: %s %q, want unknown, saying why", got.Status, got.Warnings)
	}
	e.WaitStatus(first.ID, api.StatusKilled, 10*time.Second)
	// The queue has looked (a slot is free) and started nothing.
	var other api.Session
	e.JSON(&other, "run", "--json", "--queue", "--", "true")
	e.WaitStatus(other.ID, api.StatusExited, 30*time.Second)
	if _, err := os.Stat(filepath.Join(dir, "launch.json")); err == nil {
		t.Fatal("the claimed session was started again")
	}
	if ex := e.MustRun("explain", s.ID); !strings.Contains(ex, "claimed") {
		t.Errorf("explain does not name the claim:\n%s", ex)
	}
	claim(time.Now().Add(-time.Hour))
	got = e.Session(s.ID)
	if got.Status != api.StatusLost || !strings.Contains(strings.Join(got.Warnings, " "), "not started again") {
		t.Errorf("a claim without a start, an hour ago: %s %q, want lost, saying why", got.Status, got.Warnings)
	}
}

// A matrix launch beyond the cap queues its excess: every member has its
// session, those beyond the cap queued, and all of them run, in turn.
func TestQueueMatrixBeyondTheCap(t *testing.T) {
	t.Parallel()
	e := NewEnv(t)
	writeConfig(t, e, `{"admission": {"max_sessions": 1}}`)
	repo := orchRepo(t)
	mfile := filepath.Join(filepath.Dir(repo), "three.yaml")
	matrix := "prompt: the task\ncwd: app\nmatrix:\n  - adapter: exec\n    model: [m1, m2, m3]\n"
	if err := os.WriteFile(mfile, []byte(matrix), 0o644); err != nil {
		t.Fatal(err)
	}
	res, stderr, code := e.groupResult("run", "--json", "--matrix", mfile, "--", "sh", "-c", "sleep 1; echo done > done.txt")
	if code != 0 || len(res.Members) != 3 {
		t.Fatalf("a matrix beyond the cap: exit %d, %d members, stderr %s", code, len(res.Members), stderr)
	}
	queued := 0
	for _, m := range res.Members {
		if m.Session == nil {
			t.Fatalf("member %s has no session: %s", m.Suffix, m.Error)
		}
		if m.Session.Status == api.StatusQueued {
			queued++
		}
	}
	if queued != 2 {
		t.Errorf("%d members queued, want 2 beyond the cap of 1", queued)
	}
	for _, m := range res.Members {
		e.WaitStatus(m.Session.ID, api.StatusExited, 60*time.Second)
		if b, _ := os.ReadFile(filepath.Join(m.Cwd, "done.txt")); strings.TrimSpace(string(b)) != "done" {
			t.Errorf("member %s did not run in its worktree", m.Suffix)
		}
	}
}
