//go:build darwin

package proc

// pin is empty on macOS, which has no pidfds: the pid and its start stamp
// read at accept tell the process (refused once the pid is gone).
type pin struct{}

var noPin = pin{}

func pinPeerFD(fd int) (*Caller, error) {
	p, err := peerOfFD(fd)
	if err != nil {
		return nil, err
	}
	c := &Caller{Peer: p}
	if c.PID > 0 {
		c.stamp()
	}
	return c, nil
}

func openPin(int) pin { return noPin }

func (pin) exited() bool { return false }
func (pin) close() error { return nil }
