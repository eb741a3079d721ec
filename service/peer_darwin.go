package service

import "golang.org/x/sys/unix"

func peerOf(fd int) (peerCred, error) {
	pid, err := unix.GetsockoptInt(fd, unix.SOL_LOCAL, unix.LOCAL_PEERPID)
	if err != nil {
		return peerCred{}, err
	}
	xucred, err := unix.GetsockoptXucred(fd, unix.SOL_LOCAL, unix.LOCAL_PEERCRED)
	if err != nil {
		return peerCred{}, err
	}
	return peerCred{PID: pid, UID: int(xucred.Uid)}, nil
}
