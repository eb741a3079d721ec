//go:build darwin

package proc

// pids lists every process from the kernel's table (one sysctl).
func pids() ([]int, error) {
	t, err := table()
	if err != nil {
		return nil, err
	}
	out := make([]int, 0, len(t))
	for _, p := range t {
		out = append(out, p.PID)
	}
	return out, nil
}
