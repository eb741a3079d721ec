package proc

import "golang.org/x/sys/unix"

func peerOfFD(fd int) (Peer, error) {
	pid, err := unix.GetsockoptInt(fd, unix.SOL_LOCAL, unix.LOCAL_PEERPID)
	if err != nil {
		return Peer{}, err
	}
	xucred, err := unix.GetsockoptXucred(fd, unix.SOL_LOCAL, unix.LOCAL_PEERCRED)
	if err != nil {
		return Peer{}, err
	}
	return Peer{PID: pid, UID: int(xucred.Uid)}, nil
}
