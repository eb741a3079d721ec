package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/proc"
)

// Codex sessions as people run them: TUIs started by hand in real
// terminals (tmux), next to sessions agentctl launched.

// term is a terminal where each process runs in a tmux session of its
// own, named.
type term struct{ *tmuxServer }

func newTerm(t *testing.T, env []string) *term {
	t.Helper()
	return &term{newTmuxServer(t, env, "these scenarios run in a real terminal")}
}

// open runs argv in a new terminal named name, in dir, and returns the pid
// of the process it runs.
func (tm *term) open(name, dir string, argv ...string) int {
	tm.t.Helper()
	tm.tmux(append([]string{"new-session", "-d", "-x", "160", "-y", "45", "-s", name, "-c", dir, "--"}, argv...)...)
	return tm.panePID(name)
}

// screen is what terminal name shows.
func (tm *term) screen(name string) string { return tm.capture(name) }

// enterIfUnsent presses Enter in a Codex TUI whose composer (its last
// line that begins with ›) still holds text: on a loaded machine a TUI
// still loading its thread from the daemon keeps what was typed, and a
// person presses Enter again.
func enterIfUnsent(ts *tmuxServer, target, text string) {
	lines := strings.Split(ts.capture(target), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); strings.HasPrefix(l, "›") {
			if strings.Contains(l, text) {
				ts.tmux("send-keys", "-t", target, "Enter")
			}
			return
		}
	}
}

// openCodexTUI starts Codex's TUI by hand in terminal name, in the project,
// with args, and waits until it takes keys: its writer lock is held (by
// the TUI, or by the daemon for it) and its prompt is drawn.
func (c *codexEnv) openCodexTUI(tm *term, name string, args ...string) int {
	c.T.Helper()
	locks := func() []string {
		m, _ := filepath.Glob(filepath.Join(c.codexHome, "thread-writer-locks", "*-*-*-*-*.lock"))
		return m
	}
	before := locks()
	pid := tm.open(name, c.proj, append([]string{codexBin(c.T)}, args...)...)
	WaitFor(c.T, 90*time.Second, "codex's TUI in terminal "+name+" to open its thread", func() bool {
		for _, l := range locks() {
			if !slices.Contains(before, l) {
				return strings.TrimSpace(tm.screen(name)) != ""
			}
		}
		return false
	})
	time.Sleep(2 * time.Second) // the composer takes keys once drawn
	return pid
}

// heldThreads are the threads whose writer locks pid and its descendants
// hold: what the process itself says it works on.
func heldThreads(t *testing.T, pid int) []string {
	t.Helper()
	pids := []int{pid}
	if table, err := proc.Table(); err == nil {
		for _, d := range proc.Descendants(table, pid) {
			pids = append(pids, d.PID)
		}
	}
	var ids []string
	for _, p := range pids {
		files, _ := proc.OpenFiles(p)
		for _, f := range files {
			if filepath.Base(filepath.Dir(f)) == "thread-writer-locks" && strings.HasSuffix(f, ".lock") && !strings.HasPrefix(filepath.Base(f), ".") {
				ids = append(ids, strings.TrimSuffix(filepath.Base(f), ".lock"))
			}
		}
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}

// rowsOf are the rows of list -a that show native session id.
func rowsOf(e *Env, nativeID string) []api.Session {
	var out []api.Session
	for _, r := range e.List("-a").Sessions {
		if r.NativeID == nativeID {
			out = append(out, r)
		}
	}
	return out
}

// `launch codex -i` bound another session's native id in 4 of 10 launches
// beside other Codex sessions: the new row showed the other's prompt,
// tokens and peek, and the victim vanished or dropped to 0 tokens. Ten
// interactive launches in a row, beside an ended launched run, an ended
// run by hand and a live TUI by hand in the same folder: each is bound to
// the thread its own process holds, and every victim keeps its one row,
// its status and its tokens.
func TestCodexLaunchInteractiveBindsAnotherSessionsNativeID(t *testing.T) {
	t.Parallel()
	c := newCodexEnv(t)
	c.interactiveConfig()
	tm := newTerm(t, c.Vars)

	began := time.Now()
	// Ended: a launched run, and a run by hand; live: a TUI by hand, at its
	// prompt after one answer. Started together.
	ended := c.launch("hello [[text: launched and ended]]")
	hand := exec.Command(codexBin(t), "exec", "--json", "--skip-git-repo-check", "hello [[text: by hand and ended]]")
	hand.Env, hand.Dir = c.Vars, c.proj
	var handOut strings.Builder
	hand.Stdout = &handOut
	if err := hand.Start(); err != nil {
		t.Fatalf("codex exec by hand: %v", err)
	}
	livePID := c.openCodexTUI(tm, "live", "--no-daemon")
	tm.typeLine("live", "hello [[text: live by hand]]")
	if err := hand.Wait(); err != nil {
		t.Fatalf("codex exec by hand: %v", err)
	}
	var started struct {
		ThreadID string `json:"thread_id"`
	}
	json.Unmarshal([]byte(strings.SplitN(handOut.String(), "\n", 2)[0]), &started)
	c.WaitStatus(ended.ID, api.StatusExited, 120*time.Second)
	WaitFor(t, 30*time.Second, "the ended run's native id", func() bool {
		ended = c.Session(ended.ID)
		return ended.NativeID != ""
	})
	var liveIDs []string
	WaitFor(t, 60*time.Second, "the hand TUI's thread", func() bool {
		liveIDs = heldThreads(t, livePID)
		return len(liveIDs) == 1 && len(rowsOf(c.Env, liveIDs[0])) == 1 && rowsOf(c.Env, liveIDs[0])[0].TokensIn != nil
	})
	// Real sessions grow long (tool outputs): a starting Codex reads the
	// rollouts of its folder's threads for a while, so that whatever is
	// open then is other sessions'.
	for _, id := range []string{ended.NativeID, started.ThreadID} {
		growRollout(t, c.codexHome, id, 30)
	}
	victims := map[string]api.Session{}
	for _, id := range []string{ended.NativeID, started.ThreadID, liveIDs[0]} {
		WaitFor(t, 30*time.Second, "victim "+id+" listed with its tokens", func() bool {
			rows := rowsOf(c.Env, id)
			if len(rows) == 1 && rows[0].TokensIn != nil && *rows[0].TokensIn > 0 {
				victims[id] = rows[0]
				return true
			}
			return false
		})
	}
	t.Logf("the sessions beside: %s", time.Since(began).Round(time.Millisecond))
	began = time.Now()

	var launched []api.Session
	for i := 0; i < 10; i++ {
		var s api.Session
		c.JSON(&s, "launch", "codex", "-i", "--json", "--force", "--cwd", c.proj)
		launched = append(launched, s)
	}
	var rows []api.Session
	byID := func() map[string]api.Session {
		rows = c.List("-a").Sessions
		m := map[string]api.Session{}
		for _, r := range rows {
			m[r.ID] = r
		}
		return m
	}
	WaitFor(t, 180*time.Second, "the ten launched TUIs to hold their threads and be bound to native ids", func() bool {
		listed := byID()
		for _, s := range launched {
			if len(heldThreads(t, s.PID)) != 1 || listed[s.ID].NativeID == "" {
				return false
			}
		}
		return true
	})
	t.Logf("ten launches bound: %s", time.Since(began).Round(time.Millisecond))
	listed := byID()
	seen := map[string]string{}
	for i, s := range launched {
		launched[i] = listed[s.ID]
		got, held := listed[s.ID].NativeID, heldThreads(t, s.PID)
		if len(held) != 1 || got != held[0] {
			t.Errorf("session %s (pid %d) is bound to %s; its process holds %v", s.ID, s.PID, got, held)
		}
		if _, ok := victims[got]; ok {
			t.Errorf("session %s took the native id %s of another session (%s)", s.ID, got, victims[got].ID)
		}
		if other, dup := seen[got]; dup {
			t.Errorf("sessions %s and %s are both bound to %s", other, s.ID, got)
		}
		seen[got] = s.ID
	}
	checkListedOnce(t, c.Env, launched...)
	of := func(nativeID string) []api.Session {
		var out []api.Session
		for _, r := range rows {
			if r.NativeID == nativeID {
				out = append(out, r)
			}
		}
		return out
	}
	for id, was := range victims {
		now := of(id)
		if len(now) != 1 || now[0].ID != was.ID || now[0].Status != was.Status || now[0].TokensIn == nil || *now[0].TokensIn < *was.TokensIn {
			t.Errorf("victim %s was %s %s with %d tokens in; now listed as %+v", id, was.ID, was.Status, *was.TokensIn, now)
		}
	}
	if now := of(liveIDs[0]); len(now) != 1 || now[0].Status != api.StatusRunning {
		t.Errorf("the live hand TUI's session is listed as %+v, want running", now)
	}
	t.Logf("checked: %s", time.Since(began).Round(time.Millisecond))
	// Stopped together rather than one by one at teardown.
	var wg sync.WaitGroup
	for _, s := range launched {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.Command("stop", "--force", s.ID).Run()
		}()
	}
	wg.Wait()
}

// A hand Codex TUI whose terminal was killed mid-tool read ended in 0.1 s,
// while its turn went on in the shared app-server daemon (the tool ran to
// its end, the model was asked again, the tokens rose on the ended row).
// The session is running (busy) while the daemon runs its turn, whatever
// became of the TUI, and has ended once the turn has.
func TestHandCodexTUIKilledMidToolReadsEndedWhileItsTurnRuns(t *testing.T) {
	t.Parallel()
	c := newCodexEnv(t)
	c.interactiveConfig()
	tm := newTerm(t, c.Vars)
	pid := c.openCodexTUI(tm, "tui")
	const tool = "14.83"
	tm.typeLine("tui", "work [[sleep: "+tool+"]]")
	WaitFor(t, 90*time.Second, "the tool to run in the daemon", func() bool { return liveArgv("sleep", tool) })
	var row api.Session
	WaitFor(t, 30*time.Second, "the TUI's session listed running and busy", func() bool {
		for _, r := range c.List("-a").Sessions {
			if r.Adapter == "codex" && r.Cwd == c.proj && r.Status == api.StatusRunning && r.Activity == api.ActivityBusy {
				row = r
				return true
			}
		}
		return false
	})
	tm.tmux("kill-session", "-t", "tui")
	waitGone(t, pid, 30*time.Second)
	killed := time.Now()
	asked := len(c.srv.Requests())
	// While the daemon's tool runs, the session runs.
	for liveArgv("sleep", tool) {
		rows := rowsOf(c.Env, row.NativeID)
		if len(rows) != 1 || rows[0].Status != api.StatusRunning || rows[0].Activity != api.ActivityBusy {
			t.Fatalf("%s after its terminal was killed, with the daemon's tool running, the session is listed as %+v", time.Since(killed).Round(time.Millisecond), rows)
		}
		time.Sleep(500 * time.Millisecond)
	}
	WaitFor(t, 90*time.Second, "the session to end once the daemon's turn has", func() bool {
		rows := rowsOf(c.Env, row.NativeID)
		return len(rows) == 1 && rows[0].Status.Ended()
	})
	if len(c.srv.Requests()) <= asked {
		t.Errorf("the model was not asked after the terminal was killed: the turn did not go on in the daemon")
	}
}

// growRollout appends mb tool outputs of 1 MB each to the rollout of
// thread id, as a long session's rollout has.
func growRollout(t *testing.T, codexHome, id string, mb int) {
	t.Helper()
	paths, _ := filepath.Glob(filepath.Join(codexHome, "sessions", "*", "*", "*", "rollout-*-"+id+".jsonl"))
	if len(paths) != 1 {
		t.Fatalf("rollouts of %s: %v", id, paths)
	}
	f, err := os.OpenFile(paths[0], os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := strings.Repeat("z", 1<<20)
	for i := 0; i < mb; i++ {
		line, _ := json.Marshal(map[string]any{"timestamp": time.Now().UTC().Format(time.RFC3339Nano), "type": "response_item",
			"payload": map[string]any{"type": "function_call_output", "call_id": fmt.Sprintf("call_grow_%d", i), "output": out}})
		if _, err := f.Write(append(line, '\n')); err != nil {
			t.Fatal(err)
		}
	}
}

// Two Codex TUIs started by hand in one folder, and a one-shot beside them:
// each is tied at once to its own thread by the writer lock it holds
// (running, with its own pid; busy while its tool runs), the one-shot has
// ended once done, and when one TUI quits its session has ended within
// 2 s while the other stays running and tied.
func TestTwoHandCodexTUIsInOneFolderAndAOneShot(t *testing.T) {
	t.Parallel()
	c := newCodexEnv(t)
	c.interactiveConfig()
	tm := newTerm(t, c.Vars)
	a := c.openCodexTUI(tm, "a", "--no-daemon")
	b := c.openCodexTUI(tm, "b", "--no-daemon")
	const tool = "9.17"
	tm.typeLine("a", "work [[sleep: "+tool+"]]")
	tm.typeLine("b", "hello [[text: from b]]")
	oneShot := exec.Command(codexBin(t), "exec", "--json", "--skip-git-repo-check", "hello [[text: one-shot]]")
	oneShot.Env, oneShot.Dir = c.Vars, c.proj
	var out strings.Builder
	oneShot.Stdout = &out
	if err := oneShot.Start(); err != nil {
		t.Fatal(err)
	}
	threadOf := func(pid int) string {
		if ids := heldThreads(t, pid); len(ids) == 1 {
			return ids[0]
		}
		return ""
	}
	var ta, tb string
	WaitFor(t, 60*time.Second, "both TUIs to hold their threads", func() bool {
		ta, tb = threadOf(a), threadOf(b)
		return ta != "" && tb != "" && ta != tb
	})
	row := func(rows []api.Session, id string) api.Session {
		for _, r := range rows {
			if r.NativeID == id {
				return r
			}
		}
		return api.Session{}
	}
	WaitFor(t, 60*time.Second, "a busy and b running, each tied to its own pid", func() bool {
		rows := c.List("-a").Sessions
		ra, rb := row(rows, ta), row(rows, tb)
		return ra.Status == api.StatusRunning && ra.PID == a && ra.Activity == api.ActivityBusy && rb.Status == api.StatusRunning && rb.PID == b
	})
	if err := oneShot.Wait(); err != nil {
		t.Fatalf("the one-shot: %v", err)
	}
	var started struct {
		ThreadID string `json:"thread_id"`
	}
	json.Unmarshal([]byte(strings.SplitN(out.String(), "\n", 2)[0]), &started)
	WaitFor(t, 30*time.Second, "the one-shot ended and both TUIs still tied", func() bool {
		rows := c.List("-a").Sessions
		ro, ra, rb := row(rows, started.ThreadID), row(rows, ta), row(rows, tb)
		return ro.Status.Ended() && ro.TokensIn != nil && ra.PID == a && ra.Status == api.StatusRunning && rb.PID == b && rb.Status == api.StatusRunning
	})
	WaitFor(t, 60*time.Second, "a idle after its tool", func() bool {
		r := row(c.List("-a").Sessions, ta)
		return r.Status == api.StatusRunning && r.PID == a && r.Activity == api.ActivityIdle
	})
	tm.typeLine("a", "/quit")
	waitGone(t, a, 30*time.Second)
	gone := time.Now()
	WaitFor(t, 2*time.Second, "a's session ended within 2 s of its exit", func() bool { return row(c.List("-a").Sessions, ta).Status.Ended() })
	t.Logf("a's session ended %s after its process", time.Since(gone).Round(time.Millisecond))
	if r := row(c.List("-a").Sessions, tb); r.Status != api.StatusRunning || r.PID != b {
		t.Errorf("after a quit, b's session is %s with pid %d, want running with %d", r.Status, r.PID, b)
	}
}
