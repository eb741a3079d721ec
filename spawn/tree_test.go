package spawn

import (
	"context"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentctl/agentctl/home"
	"github.com/agentctl/agentctl/proc"
)

func TestTreeMembers(t *testing.T) {
	leader := proc.Identity{PID: 100, Start: 7}
	row := func(pid, ppid, pgid, sid int, start uint64) proc.Info {
		return proc.Info{Identity: proc.Identity{PID: pid, Start: start}, PPID: ppid, PGID: pgid, SID: sid}
	}
	zombie := row(71, 100, 100, 100, 9)
	zombie.Zombie = true
	for _, tc := range []struct {
		name  string
		tree  Tree
		table []proc.Info
		want  []int
	}{
		{
			name: "group, session and what they started",
			tree: Tree{Leader: leader, PGID: 100},
			table: []proc.Info{
				row(1, 0, 1, 1, 1),
				row(100, 50, 100, 100, 7),
				row(101, 100, 100, 100, 9), // in the group
				row(102, 101, 102, 100, 9), // own group, same session
				row(103, 102, 103, 103, 9), // setsid below the session
				row(200, 1, 200, 200, 9),   // someone else
			},
			want: []int{100, 101, 102, 103},
		},
		{
			name: "the leader died and its pid names another group now",
			tree: Tree{Leader: leader, PGID: 100},
			table: []proc.Info{
				row(100, 1, 100, 100, 8), // recycled: another start stamp
				row(101, 100, 100, 100, 9),
			},
			want: nil,
		},
		{
			name: "the leader died and its group lives on",
			tree: Tree{Leader: leader, PGID: 100},
			table: []proc.Info{
				row(101, 1, 100, 100, 9),
			},
			want: []int{101},
		},
		{
			name: "everything below the monitor, the monitor and the spared service left out",
			tree: Tree{Leader: leader, PGID: 100, Root: 50, Spare: func(p proc.Info) bool { return p.PID == 60 }},
			table: []proc.Info{
				row(50, 1, 50, 50, 1),
				row(100, 50, 100, 100, 7),
				row(55, 50, 55, 55, 9), // an orphan that came back to the monitor
				row(60, 50, 60, 60, 9), // the service started from inside
				row(61, 60, 61, 60, 9), // and what it started
				row(70, 1, 70, 70, 9),  // someone else
				zombie,                 // nobody to kill
			},
			want: []int{55, 100},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []int
			for _, p := range tc.tree.Members(tc.table) {
				got = append(got, p.PID)
			}
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Errorf("members = %v, want %v", got, tc.want)
			}
		})
	}
}

// A stop without the monitor looks the session's processes up before the
// leader dies: a child that called setsid, and is orphaned when its parent
// is killed, is in neither the group nor the tree by then, and still dies.
func TestKillTreeEndsASetsidChildAfterItsLeaderDied(t *testing.T) {
	pidFile := t.TempDir() + "/child"
	cmd := exec.Command("sh", "-c", "setsid sh -c 'echo $$ >"+pidFile+"; exec sleep 300' & wait")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go cmd.Wait()
	var child int
	deadline := time.Now().Add(5 * time.Second)
	for child == 0 && time.Now().Before(deadline) {
		b, _ := os.ReadFile(pidFile)
		child, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		time.Sleep(10 * time.Millisecond)
	}
	if child == 0 {
		t.Fatal("the setsid child did not start")
	}
	t.Cleanup(func() { syscall.Kill(child, syscall.SIGKILL) })
	leader, err := proc.Lookup(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	tree := Tree{Leader: leader.Identity, PGID: cmd.Process.Pid}
	table, err := proc.Table()
	if err != nil {
		t.Fatal(err)
	}
	seen := tree.Members(table)
	if len(seen) < 2 {
		t.Fatalf("members before the stop = %v, want the leader and its child", seen)
	}
	syscall.Kill(cmd.Process.Pid, syscall.SIGKILL) // the leader dies first
	time.Sleep(100 * time.Millisecond)
	survivors, err := KillTree(context.Background(), tree, 5*time.Second, seen)
	if err != nil || len(survivors) > 0 {
		t.Fatalf("KillTree = %v, %v; want nothing left", survivors, err)
	}
	c, err := proc.Lookup(child)
	if err == nil && !c.Zombie {
		t.Fatalf("the setsid child %d survived", child)
	}
}

// An orphan that left both the group and the tree (its parent died, it
// called setsid) is still the session's by the marker in its environment.
func TestTreeFindsAnOrphanByItsSessionMarker(t *testing.T) {
	out, err := exec.Command("sh", "-c", home.SessionEnv+"=s-orphan setsid sleep 300 >/dev/null 2>&1 & echo $!").Output()
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	var found bool
	deadline := time.Now().Add(5 * time.Second)
	for !found && time.Now().Before(deadline) {
		table, err := proc.Table()
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range (Tree{ID: "s-orphan"}).Members(table) {
			found = found || p.PID == pid
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !found {
		t.Fatalf("the orphan %d marked with the session's id was not found", pid)
	}
	table, _ := proc.Table()
	for _, p := range (Tree{ID: "another-session"}).Members(table) {
		if p.PID == pid {
			t.Fatalf("the orphan %d was taken for another session's", pid)
		}
	}
}
