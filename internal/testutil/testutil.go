// Package testutil holds the rigs tests share (agenttest: the real agent
// CLIs tests drive). Only _test.go files import what is under it:
// TestOnlyTestsImportTestutil checks that no binary links a test rig.
package testutil

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// ProcStatus reads a kB or count field of /proc/PID/status (VmRSS,
// Threads...): the kernel's own figure a measurement is held against.
func ProcStatus(t testing.TB, pid int, key string) uint64 {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, key+":"); ok {
			f := strings.Fields(v)
			n, _ := strconv.ParseUint(f[0], 10, 64)
			if len(f) > 1 && f[1] == "kB" {
				n *= 1024
			}
			return n
		}
	}
	t.Fatalf("no %s in /proc/%d/status", key, pid)
	return 0
}
