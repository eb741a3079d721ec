package service

// launchDaemonsDir holds system-wide launchd jobs.
const launchDaemonsDir = "/Library/LaunchDaemons"

// New returns the controller for spec on this machine: launchd, as a
// LaunchAgent of the user or a LaunchDaemon running as spec.User.
func New(spec Spec) (Controller, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	acct, err := serviceAccount(spec)
	if err != nil {
		return nil, err
	}
	return newLaunchd(spec, execRunner{}, acct.home, launchDaemonsDir, acct.uid, acct.gid), nil
}
