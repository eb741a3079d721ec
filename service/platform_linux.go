package service

import "os"

// New returns the controller for spec on this machine: systemd, when it
// runs the machine (and, for a user service, the user's manager runs).
// Anything else is refused: agentctl never writes SysV init scripts.
func New(spec Spec) (Controller, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	paths := defaultSystemdPaths()
	if err := checkSystemd(spec, paths, os.Getenv); err != nil {
		return nil, err
	}
	acct, err := serviceAccount(spec)
	if err != nil {
		return nil, err
	}
	return newSystemd(spec, paths, execRunner{}, acct.home, acct.uid, acct.gid), nil
}
