//go:build linux

package resources

import (
	"bytes"
	"fmt"
	"runtime"
	"strconv"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/proc"
)

// ReadMachine reads the host's load and memory.
func ReadMachine() (api.Machine, error) {
	m := api.Machine{CPUs: runtime.NumCPU()}
	buf := make([]byte, statBuf)
	b, err := proc.ReadSmall("/proc/loadavg", buf)
	if err != nil {
		return m, fmt.Errorf("read the load average: %w", err)
	}
	if f := bytes.Fields(b); len(f) >= 3 {
		m.Load1, _ = strconv.ParseFloat(string(f[0]), 64)
		m.Load5, _ = strconv.ParseFloat(string(f[1]), 64)
		m.Load15, _ = strconv.ParseFloat(string(f[2]), 64)
	}
	b, err = proc.ReadSmall("/proc/meminfo", buf)
	if err != nil {
		return m, fmt.Errorf("read the memory figures: %w", err)
	}
	m.MemTotalBytes, m.MemAvailableBytes = parseMeminfo(b)
	return m, nil
}
