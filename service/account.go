package service

import (
	"fmt"
	"os"
	"os/user"
	"strconv"
)

// account is the user the service runs as.
type account struct {
	uid, gid int
	home     string
}

// serviceAccount finds the account spec's service runs as: the caller for a
// user service (home from $HOME, as the CLI's own default), spec.User for a
// system service.
func serviceAccount(spec Spec) (account, error) {
	if spec.Scope == ScopeUser {
		home, err := os.UserHomeDir()
		if err != nil {
			return account{}, fmt.Errorf("find your home directory: %w", err)
		}
		return account{uid: os.Getuid(), gid: os.Getgid(), home: home}, nil
	}
	u, err := user.Lookup(spec.User)
	if err != nil {
		return account{}, fmt.Errorf("look up user %q: %w", spec.User, err)
	}
	uid, err := strconv.Atoi(u.Uid)
	if err != nil {
		return account{}, fmt.Errorf("user %q has a non-numeric uid %q", spec.User, u.Uid)
	}
	gid, err := strconv.Atoi(u.Gid)
	if err != nil {
		return account{}, fmt.Errorf("user %q has a non-numeric gid %q", spec.User, u.Gid)
	}
	return account{uid: uid, gid: gid, home: u.HomeDir}, nil
}

// requireRoot refuses to change a system service without root: the unit
// directories and the system manager belong to root.
func requireRoot(spec Spec, action string) error {
	if spec.Scope == ScopeSystem && os.Geteuid() != 0 {
		return fmt.Errorf("%s a system service needs root: run it with sudo", action)
	}
	return nil
}
