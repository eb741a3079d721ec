package proc

import "golang.org/x/sys/unix"

func peerOfFD(fd int) (Peer, error) {
	ucred, err := unix.GetsockoptUcred(fd, unix.SOL_SOCKET, unix.SO_PEERCRED)
	if err != nil {
		return Peer{}, err
	}
	return Peer{PID: int(ucred.Pid), UID: int(ucred.Uid)}, nil
}
