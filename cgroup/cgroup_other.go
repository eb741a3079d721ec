//go:build !linux

package cgroup

import (
	"context"
	"errors"
	"time"

	"golang.org/x/sys/unix"
)

var errLinux = errors.New("cgroups are Linux-only")

// Manager creates sessions' cgroups; on this system, none.
type Manager struct{}

// Detect says sessions get no cgroups here.
func Detect(home string) *Manager { return &Manager{} }

// Status says sessions get no cgroups here.
func (m *Manager) Status() Status { return Status{Reason: errLinux.Error()} }

// Paths is empty here.
func (m *Manager) Paths(id string) Paths { return Paths{} }

// Close does nothing here.
func (m *Manager) Close() {}

// Create fails here.
func Create(p Paths, l Limits) error { return errLinux }

// LimitPids fails here.
func LimitPids(p Paths, l Limits) error { return errLinux }

// Join fails here.
func Join(p Paths) (Paths, error) { return Paths{}, errLinux }

// Move fails here.
func Move(p Paths) error { return errLinux }

// Procs lists nothing here.
func Procs(p Paths) []int { return nil }

// Signal signals nothing here.
func Signal(p Paths, sig unix.Signal) int { return 0 }

// WaitEmpty has nothing to wait for here.
func WaitEmpty(ctx context.Context, p Paths, d time.Duration) bool { return true }

// Kill kills nothing here.
func Kill(ctx context.Context, p Paths, bound time.Duration) []int { return nil }

// ReadUsage knows nothing here.
func ReadUsage(p Paths) Usage { return Usage{} }

// Remove removes nothing here.
func Remove(p Paths) error { return nil }
