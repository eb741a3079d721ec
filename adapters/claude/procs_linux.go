//go:build linux

package claude

import (
	"os"
	"strconv"
)

// candidatePIDs lists every pid, from /proc directly: cheaper than
// proc.Table, which reads each process's stat, when only a few processes
// (those whose argv is Claude's) need their identity.
func candidatePIDs() ([]int, error) {
	d, err := os.Open("/proc")
	if err != nil {
		return nil, err
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	pids := make([]int, 0, len(names))
	for _, n := range names {
		if pid, err := strconv.Atoi(n); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}
