//go:build linux

package proc

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
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
		if kp, known := r.procs[pid]; !known || (kp.fd >= 0) != (max == 0) {
			t.Errorf("max %d: the sleep's descriptor kept: %+v", max, kp)
		}
		cmd.Process.Kill()
		cmd.Wait()
		if _, ok := find(); ok {
			t.Errorf("max %d: a process that ended is still read", max)
		}
		if _, kept := r.procs[pid]; kept {
			t.Errorf("max %d: a process that ended is kept", max)
		}
		if r.open > max && max > 0 {
			t.Errorf("%d descriptors kept, at most %d allowed", r.open, max)
		}
		r.Close()
		if r.open != 0 || len(r.procs) != 0 {
			t.Errorf("Close left %d descriptors", r.open)
		}
	}
}

// Shape reads only what it has not read before (or what lost its parent),
// Refresh what it is asked to: a spinning process's CPU time grows through
// Refresh, stays as it was through Shape alone; a process whose parent
// ended is read again, with its new parent.
func TestTableReaderShape(t *testing.T) {
	t.Parallel()
	r := NewTableReader(0)
	defer r.Close()
	// sh starts a spinner in the background and ends: the spinner's
	// parent is gone, and it is reparented.
	parent := exec.Command("sh", "-c", "sh -c 'while :; do :; done' & echo $!; sleep 1")
	out, err := parent.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	var spinner int
	if _, err := fmt.Fscan(out, &spinner); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(spinner, syscall.SIGKILL) })
	row := func(table []Info) Info {
		info, ok := NewIndex(table).Lookup(spinner)
		if !ok {
			t.Fatalf("the spinner %d is not in the table", spinner)
		}
		return info
	}
	first := row(must(r.Table()))
	if first.PPID != parent.Process.Pid {
		t.Fatalf("the spinner's parent is %d, want %d", first.PPID, parent.Process.Pid)
	}
	time.Sleep(300 * time.Millisecond)
	shaped := row(must(r.Shape()))
	if shaped.CPU != first.CPU {
		t.Errorf("Shape read the spinner again (cpu %s, then %s): nothing asked it to", first.CPU, shaped.CPU)
	}
	fresh := r.Refresh([]Info{shaped})
	if len(fresh) != 1 || fresh[0].CPU <= first.CPU {
		t.Errorf("Refresh gave %+v; want the spinner with more CPU than %s", fresh, first.CPU)
	}
	parent.Wait()
	reparented := row(must(r.Shape()))
	if reparented.PPID == parent.Process.Pid {
		t.Errorf("after its parent ended, Shape still gives the spinner's parent as %d", reparented.PPID)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
