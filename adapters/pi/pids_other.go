//go:build !linux

package pi

import "github.com/agentctl/agentctl/proc"

// allPIDs lists every process the caller may see.
func allPIDs() ([]int, error) {
	t, err := proc.Table()
	if err != nil {
		return nil, err
	}
	out := make([]int, 0, len(t))
	for _, p := range t {
		out = append(out, p.PID)
	}
	return out, nil
}
