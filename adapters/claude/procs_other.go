//go:build !linux

package claude

import "github.com/agentctl/agentctl/proc"

// candidatePIDs lists every pid from the process table.
func candidatePIDs() ([]int, error) {
	t, err := proc.Table()
	if err != nil {
		return nil, err
	}
	pids := make([]int, 0, len(t))
	for _, p := range t {
		pids = append(pids, p.PID)
	}
	return pids, nil
}
