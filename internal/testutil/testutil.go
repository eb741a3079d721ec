// Package testutil holds the rigs tests share (agenttest: the real agent
// CLIs tests drive). Only _test.go files import what is under it:
// TestOnlyTestsImportTestutil checks that no binary links a test rig.
package testutil

import (
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
)

// RandomText is up to most pieces drawn at random from pieces, joined: text
// for a property test to compare two ways of reading.
func RandomText(r *rand.Rand, pieces []string, most int) string {
	var b strings.Builder
	for range r.IntN(most + 1) {
		b.WriteString(pieces[r.IntN(len(pieces))])
	}
	return b.String()
}

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
