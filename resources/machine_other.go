//go:build !linux

package resources

import (
	"errors"
	"runtime"

	"github.com/agentctl/agentctl/api"
)

// ReadMachine knows the number of CPUs only, off Linux.
func ReadMachine() (api.Machine, error) {
	return api.Machine{CPUs: runtime.NumCPU()}, errors.New("the load and memory figures are read on Linux only")
}
