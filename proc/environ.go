package proc

import "errors"

// ErrNoEnviron means this system does not let a process read another's
// environment (macOS, without entitlements); callers use other evidence.
var ErrNoEnviron = errors.New("reading another process's environment is not supported here")
