package service

import "golang.org/x/sys/unix"

func peerOf(fd int) (peerCred, error) {
	ucred, err := unix.GetsockoptUcred(fd, unix.SOL_SOCKET, unix.SO_PEERCRED)
	if err != nil {
		return peerCred{}, err
	}
	return peerCred{PID: int(ucred.Pid), UID: int(ucred.Uid)}, nil
}
