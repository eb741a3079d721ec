//go:build linux

package proc

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

// parseStat reads the CPU time (with the waited-for children's), the
// resident set and the tasks of a row, past a command name that holds
// spaces and parentheses.
func TestParseStatUsage(t *testing.T) {
	t.Parallel()
	page := uint64(os.Getpagesize())
	for _, tc := range []struct {
		name    string
		line    string
		usage   bool
		cpu     time.Duration
		rss     uint64
		threads int
	}{
		{
			name:  "node",
			line:  "4242 (node) S 4200 4242 4242 34816 4242 4194560 9000 0 12 0 350 150 20 30 20 0 11 0 123456 1234567890 25600 18446744073709551615 1 1 0 0 0 0 0 16781312 134234626 0 0 0 17 1 0 0 0 0 0",
			usage: true, cpu: 5500 * time.Millisecond, rss: 25600 * page, threads: 11,
		},
		{
			name:  "a name with spaces and parentheses",
			line:  "77 (a (b) c) R 1 77 77 0 -1 4194304 0 0 0 0 100 0 0 0 20 0 1 0 999 4096 10 18446744073709551615",
			usage: true, cpu: time.Second, rss: 10 * page, threads: 1,
		},
		{
			name: "a row cut before rss",
			line: "78 (short) S 1 78 78 0 -1 0 0 0 0 0 1 1 0 0 20 0 1 0 999",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			info, err := parseStat(1, []byte(tc.line), time.Now())
			if err != nil {
				t.Fatal(err)
			}
			if info.Usage != tc.usage || info.CPU != tc.cpu || info.RSS != tc.rss || info.Threads != tc.threads {
				t.Errorf("usage %v cpu %s rss %d threads %d; want %v %s %d %d", info.Usage, info.CPU, info.RSS, info.Threads, tc.usage, tc.cpu, tc.rss, tc.threads)
			}
		})
	}
}

// The process table gives this process's own usage, as the kernel counts it.
func TestTableUsage(t *testing.T) {
	t.Parallel()
	table, err := Table()
	if err != nil {
		t.Fatal(err)
	}
	ix := NewIndex(table)
	me, ok := ix.Lookup(os.Getpid())
	if !ok || !me.Usage || me.RSS == 0 || me.Threads < 1 {
		t.Fatalf("own row %+v, %v; want usage figures", me, ok)
	}
	if got := ix.InGroup(me.PGID); len(got) == 0 {
		t.Errorf("InGroup(%d) is empty; this process is in it", me.PGID)
	}
}

// A TableReader reads what Table reads, through descriptors it keeps; a
// process that ended gives its descriptor back, and a reader that may keep
// none reads all the same.
func TestTableReader(t *testing.T) {
	t.Parallel()
	for _, max := range []int{0, 1} {
		r := NewTableReader(max)
		cmd := exec.Command("sleep", "30")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		pid := cmd.Process.Pid
		find := func() (Info, bool) {
			table, err := r.Table()
			if err != nil {
				t.Fatal(err)
			}
			return NewIndex(table).Lookup(pid)
		}
		first, ok := find()
		again, ok2 := find()
		if !ok || !ok2 || first.Start != again.Start || !again.Usage {
			t.Fatalf("max %d: the sleep read %+v then %+v", max, first, again)
		}
		if _, kept := r.fds[pid]; kept != (max == 0) {
			t.Errorf("max %d: the sleep's descriptor kept: %v", max, kept)
		}
		cmd.Process.Kill()
		cmd.Wait()
		if _, ok := find(); ok {
			t.Errorf("max %d: a process that ended is still read", max)
		}
		if _, kept := r.fds[pid]; kept {
			t.Errorf("max %d: the descriptor of a process that ended is kept", max)
		}
		if len(r.fds) > max && max > 0 {
			t.Errorf("%d descriptors kept, at most %d allowed", len(r.fds), max)
		}
		r.Close()
		if len(r.fds) != 0 {
			t.Errorf("Close left %d descriptors", len(r.fds))
		}
	}
}
