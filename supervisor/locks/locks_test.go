package locks

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/agentctl/agentctl/proc"
)

// self is this test process: an owner that stays alive.
func self(t *testing.T) proc.Identity {
	t.Helper()
	info, err := proc.Lookup(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	return info.Identity
}

// startSleeper starts a real process to own locks and returns its identity.
func startSleeper(t *testing.T) (*exec.Cmd, proc.Identity) {
	t.Helper()
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	info, err := proc.Lookup(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	return cmd, info.Identity
}

func openTable(t *testing.T, path string) (*Table, *[]Change) {
	t.Helper()
	var mu sync.Mutex
	changes := &[]Change{}
	tab, warnings, err := Open(path, Options{OnChange: func(c Change) {
		mu.Lock()
		*changes = append(*changes, c)
		mu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(warnings) > 0 {
		t.Fatalf("unexpected warnings: %q", warnings)
	}
	return tab, changes
}

func TestCanonical(t *testing.T) {
	root := t.TempDir()
	real := filepath.Join(root, "real")
	if err := os.Mkdir(real, 0o700); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(root, "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	want, err := filepath.EvalSymlinks(real)
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(root)
	for _, spelling := range []string{real, link, link + "/", filepath.Join(link, "..", "real"), "real", "./link", real + "/./"} {
		got, err := Canonical(spelling)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("Canonical(%q) = %q, want %q", spelling, got, want)
		}
	}
	// A directory that does not exist yet resolves under its real parent.
	got, err := Canonical(filepath.Join(link, "new", "sub"))
	if err != nil {
		t.Fatal(err)
	}
	if got != filepath.Join(want, "new", "sub") {
		t.Errorf("missing tail: got %q", got)
	}
	if _, err := Canonical(""); err == nil {
		t.Error("empty path accepted")
	}
}

func TestAcquireRules(t *testing.T) {
	me := self(t)
	type step struct {
		req     Request
		wantErr error // nil: success
		holder  string
	}
	auto := func(id string, force bool) Request {
		return Request{Type: Auto, SessionID: id, Owner: me, Force: force}
	}
	manual := func(by string, force bool) Request {
		return Request{Type: Manual, By: by, Reason: "deploy", Force: force}
	}
	tests := []struct {
		name  string
		steps []step
		want  map[Kind]int
	}{
		{"second session is refused", []step{{req: auto("a", false)}, {req: auto("b", false), wantErr: ErrLocked, holder: "session a"}}, map[Kind]int{Auto: 1, Manual: 0}},
		{"same session again is one lock", []step{{req: auto("a", false)}, {req: auto("a", false)}}, map[Kind]int{Auto: 1, Manual: 0}},
		{"force adds beside", []step{{req: auto("a", false)}, {req: auto("b", true)}}, map[Kind]int{Auto: 2, Manual: 0}},
		{"manual on top of auto", []step{{req: auto("a", false)}, {req: manual("alice", false)}, {req: auto("b", false), wantErr: ErrLocked, holder: "alice (deploy)"}}, map[Kind]int{Auto: 1, Manual: 1}},
		{"manual blocks sessions", []step{{req: manual("alice", false)}, {req: auto("a", false), wantErr: ErrLocked, holder: "alice"}}, map[Kind]int{Auto: 0, Manual: 1}},
		{"manual blocks manual", []step{{req: manual("alice", false)}, {req: manual("bob", false), wantErr: ErrLocked, holder: "alice"}}, map[Kind]int{Auto: 0, Manual: 1}},
		{"forced manual replaces manual", []step{{req: manual("alice", false)}, {req: manual("bob", true)}, {req: auto("a", false), wantErr: ErrLocked, holder: "bob"}}, map[Kind]int{Auto: 0, Manual: 1}},
		{"forced session passes a manual lock", []step{{req: manual("alice", false)}, {req: auto("a", true)}}, map[Kind]int{Auto: 1, Manual: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			tab, _ := openTable(t, filepath.Join(t.TempDir(), "locks.json"))
			for i, s := range tt.steps {
				s.req.Dir = dir
				_, err := tab.Acquire(s.req)
				if s.wantErr == nil {
					if err != nil {
						t.Fatalf("step %d: %v", i, err)
					}
					continue
				}
				if !errors.Is(err, s.wantErr) {
					t.Fatalf("step %d: error %v, want %v", i, err, s.wantErr)
				}
				var le *LockedError
				if !errors.As(err, &le) || !strings.Contains(le.Holder.Holder(), s.holder) || !strings.Contains(err.Error(), s.holder) || !strings.Contains(err.Error(), "--force") {
					t.Fatalf("step %d: error %q does not name holder %q and --force", i, err, s.holder)
				}
			}
			got := tab.Count()
			if got[Auto] != tt.want[Auto] || got[Manual] != tt.want[Manual] {
				t.Errorf("counts = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestParallelAcquireOneWinner(t *testing.T) {
	me := self(t)
	tab, changes := openTable(t, filepath.Join(t.TempDir(), "locks.json"))
	root := t.TempDir()
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(root, link); err != nil {
		t.Fatal(err)
	}
	const n = 50
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			dir := root
			if i%2 == 1 {
				dir = link // the other spelling of the same directory
			}
			_, errs[i] = tab.Acquire(Request{Dir: dir, Type: Auto, SessionID: "s" + string(rune('A'+i)), Owner: me})
		}()
	}
	wg.Wait()
	winners := 0
	for _, err := range errs {
		switch {
		case err == nil:
			winners++
		case !errors.Is(err, ErrLocked):
			t.Fatalf("unexpected error: %v", err)
		}
	}
	if winners != 1 {
		t.Fatalf("%d winners, want exactly 1", winners)
	}
	if len(tab.List()) != 1 || len(*changes) != 1 {
		t.Fatalf("table has %d locks and %d changes, want 1 and 1", len(tab.List()), len(*changes))
	}
}

// An automatic lock follows its process: once the process is killed, the
// next look at the directory releases it, whoever looks.
func TestAutoLockFollowsProcess(t *testing.T) {
	tests := []struct {
		name   string
		reap   bool // a reaped process is gone; an unreaped one is a zombie
		notice func(*Table, string) error
	}{
		{"acquire notices, reaped", true, func(tab *Table, dir string) error {
			_, err := tab.Acquire(Request{Dir: dir, Type: Auto, SessionID: "next", Owner: self(t)})
			return err
		}},
		{"sweep notices, zombie", false, func(tab *Table, dir string) error {
			if got := tab.Sweep(); len(got) != 1 {
				return errors.New("sweep released nothing")
			}
			return nil
		}},
		{"check notices, zombie", false, func(tab *Table, dir string) error {
			if _, held, _ := tab.Check(dir); held {
				return errors.New("check still reports the lock")
			}
			return nil
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			tab, changes := openTable(t, filepath.Join(t.TempDir(), "locks.json"))
			cmd, id := startSleeper(t)
			if _, err := tab.Acquire(Request{Dir: dir, Type: Auto, SessionID: "s1", Owner: id}); err != nil {
				t.Fatal(err)
			}
			if _, err := tab.Acquire(Request{Dir: dir, Type: Auto, SessionID: "s2", Owner: self(t)}); !errors.Is(err, ErrLocked) {
				t.Fatalf("while the owner lives: %v, want ErrLocked", err)
			}
			if got := tab.Sweep(); len(got) != 0 {
				t.Fatalf("sweep released a live owner's lock: %v", got)
			}
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			if tt.reap {
				cmd.Wait()
			} else {
				waitZombie(t, id.PID)
			}
			if err := tt.notice(tab, dir); err != nil {
				t.Fatal(err)
			}
			var released []Change
			for _, c := range *changes {
				if c.Kind == Released {
					released = append(released, c)
				}
			}
			if len(released) != 1 || released[0].Lock.SessionID != "s1" || released[0].Reason != ReasonOwnerGone {
				t.Fatalf("released changes = %+v, want s1's lock, owner gone", released)
			}
		})
	}
}

func waitZombie(t *testing.T, pid int) {
	t.Helper()
	for range 500 {
		info, err := proc.Lookup(pid)
		if err == nil && info.Zombie {
			return
		}
		syscall.Select(0, nil, nil, nil, &syscall.Timeval{Usec: 10000})
	}
	t.Fatalf("pid %d did not become a zombie", pid)
}

func TestOwnerHandOverAndSessionRelease(t *testing.T) {
	dir := t.TempDir()
	tab, changes := openTable(t, filepath.Join(t.TempDir(), "locks.json"))
	// Reserved by the service before the session's process exists...
	if _, err := tab.Acquire(Request{Dir: dir, Type: Auto, SessionID: "s1", Owner: self(t)}); err != nil {
		t.Fatal(err)
	}
	// ...then handed to the process.
	_, id := startSleeper(t)
	if err := tab.SetOwner("s1", id); err != nil {
		t.Fatal(err)
	}
	if l := tab.List()[0]; l.PID != id.PID || l.StartTicks != id.Start {
		t.Fatalf("owner = %d/%d, want %d/%d", l.PID, l.StartTicks, id.PID, id.Start)
	}
	if err := tab.SetOwner("nobody", id); err == nil {
		t.Error("SetOwner of a session without lock succeeded")
	}
	if got := tab.ReleaseSession("s1"); len(got) != 1 {
		t.Fatalf("ReleaseSession released %d locks", len(got))
	}
	if got := tab.ReleaseSession("s1"); len(got) != 0 {
		t.Fatalf("second ReleaseSession released %d locks", len(got))
	}
	last := (*changes)[len(*changes)-1]
	if last.Kind != Released || last.Reason != ReasonSessionEnded {
		t.Fatalf("last change = %+v", last)
	}
}

func TestUnlock(t *testing.T) {
	dir := t.TempDir()
	tab, _ := openTable(t, filepath.Join(t.TempDir(), "locks.json"))
	if _, err := tab.Unlock(dir); !errors.Is(err, ErrNoManualLock) {
		t.Fatalf("unlock of a free dir: %v", err)
	}
	if _, err := tab.Acquire(Request{Dir: dir, Type: Auto, SessionID: "s1", Owner: self(t)}); err != nil {
		t.Fatal(err)
	}
	if _, err := tab.Unlock(dir); !errors.Is(err, ErrNoManualLock) || !strings.Contains(err.Error(), "session s1") {
		t.Fatalf("unlock of a session's dir: %v, want ErrNoManualLock naming the session", err)
	}
	if _, err := tab.Acquire(Request{Dir: dir, Type: Manual, By: "alice"}); err != nil {
		t.Fatal(err)
	}
	l, err := tab.Unlock(dir + "/.")
	if err != nil || l.LockedBy != "alice" {
		t.Fatalf("unlock = %+v, %v", l, err)
	}
	if c := tab.Count(); c[Manual] != 0 || c[Auto] != 1 {
		t.Fatalf("counts after unlock = %v", c)
	}
}

func TestPersistence(t *testing.T) {
	path := filepath.Join(t.TempDir(), "locks.json")
	dir := t.TempDir()
	tab, _ := openTable(t, path)
	_, id := startSleeper(t)
	if _, err := tab.Acquire(Request{Dir: dir, Type: Manual, By: "alice", Reason: "release"}); err != nil {
		t.Fatal(err)
	}
	if _, err := tab.Acquire(Request{Dir: dir, Type: Auto, SessionID: "s1", Owner: id, Force: true}); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("locks.json mode %v, want 0600", st.Mode().Perm())
	}
	again, _ := openTable(t, path)
	got := again.List()
	if len(got) != 2 {
		t.Fatalf("reloaded %d locks, want 2", len(got))
	}
	if _, err := again.Acquire(Request{Dir: dir, Type: Auto, SessionID: "s2", Owner: self(t)}); !errors.Is(err, ErrLocked) {
		t.Fatalf("reloaded table lets a second session in: %v", err)
	}
}

func TestMigrateOldFormat(t *testing.T) {
	home := t.TempDir()
	path := filepath.Join(home, "locks.json")
	dirA, dirB := t.TempDir(), t.TempDir()
	old := `[
  {"directory": "` + dirA + `", "type": "manual", "lockedBy": "alice", "reason": "release freeze", "lockedAt": "2026-03-01T10:00:00.000Z"},
  {"directory": "` + dirB + `", "type": "auto", "pid": 4242, "sessionId": "abc", "lockedAt": "2026-03-01T10:00:00.000Z"},
  {"directory": "` + dirB + `/sub", "type": "manual", "by": "bob"}
]`
	if err := os.WriteFile(path, []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	tab, warnings, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	joined := strings.Join(warnings, "\n")
	if !strings.Contains(joined, "migrated 2 manual lock(s)") || !strings.Contains(joined, "dropped the old tool's automatic lock") {
		t.Errorf("warnings = %q", warnings)
	}
	got := tab.List()
	if len(got) != 2 || got[0].LockedBy != "alice" || got[0].Reason != "release freeze" || got[0].LockedAt.Year() != 2026 || got[1].LockedBy != "bob" {
		t.Fatalf("migrated locks = %+v", got)
	}
	if _, err := os.Stat(path + ".old"); err != nil {
		t.Errorf("original not kept: %v", err)
	}
	// The migrated file is in the new format and reopens without warnings.
	if _, w, err := Open(path, Options{}); err != nil || len(w) != 0 {
		t.Fatalf("reopen after migration: %v %q", err, w)
	}
}

func TestCorruptFileMovedAside(t *testing.T) {
	path := filepath.Join(t.TempDir(), "locks.json")
	if err := os.WriteFile(path, []byte(`{"version": 1, "locks": [`), 0o600); err != nil {
		t.Fatal(err)
	}
	tab, warnings, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "moved to") {
		t.Fatalf("warnings = %q", warnings)
	}
	if len(tab.List()) != 0 {
		t.Fatal("locks from a corrupt file")
	}
	matches, _ := filepath.Glob(path + ".corrupt-*")
	if len(matches) != 1 {
		t.Fatalf("corrupt file not kept aside: %v", matches)
	}
}
