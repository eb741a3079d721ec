//go:build linux

package proc

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
)

// tcpSocket is one row of /proc/net/tcp or /proc/net/tcp6.
type tcpSocket struct {
	Local, Remote netip.AddrPort
	State         uint8 // 1: established
	UID           int
	Inode         uint64 // 0 once no process holds it (closed, orphaned)
}

// Bounds of a lookup: the rows read from each table, and the descriptors
// looked at across all processes.
const (
	maxTCPRows = 1 << 20
	maxPeerFDs = 1 << 20
)

func tcpPeer(ctx context.Context, local, remote netip.AddrPort) (*Caller, error) {
	sock, found, err := findTCPSocket(ctx, remote, local)
	if err != nil {
		return nil, err
	}
	if !found {
		if !localAddr(remote.Addr()) {
			return nil, ErrRemotePeer
		}
		return nil, fmt.Errorf("%w: no socket of this machine is connected from it to %s (it went away)", ErrUnproven, local)
	}
	if sock.Inode == 0 {
		return nil, fmt.Errorf("%w: its process has closed the connection", ErrUnproven)
	}
	target := "socket:[" + strconv.FormatUint(sock.Inode, 10) + "]"
	pid, err := socketHolder(ctx, target)
	if err != nil {
		return nil, err
	}
	if pid == 0 {
		return nil, fmt.Errorf("%w: no process this user may read holds it (a process of uid %d, or one that went away)", ErrUnproven, sock.UID)
	}
	uid, err := Owner(pid)
	if err != nil {
		return nil, fmt.Errorf("%w: pid %d went away: %v", ErrUnproven, pid, err)
	}
	c := PinProcess(pid, uid)
	// Pinned, then seen to hold the socket still: the pid was not reused
	// between the search and the pin.
	if held, _ := holds(pid, target); !held {
		c.Close()
		return nil, fmt.Errorf("%w: pid %d let the connection go", ErrUnproven, pid)
	}
	if err := c.Check(); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// localAddr reports whether a is an address of this machine (this network
// namespace): a loopback address or one of its interfaces'.
func localAddr(a netip.Addr) bool {
	if a.IsLoopback() {
		return true
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return false
	}
	for _, ia := range addrs {
		if n, ok := ia.(*net.IPNet); ok {
			if ip, ok := netip.AddrFromSlice(n.IP); ok && ip.Unmap() == a {
				return true
			}
		}
	}
	return false
}

// findTCPSocket finds the socket of this network namespace whose own
// address is local and whose peer is remote, in /proc/net/tcp and tcp6
// (an IPv4 connection to a dual-stack listener is in tcp, its listener's
// end in tcp6 as v4-mapped: addresses are compared unmapped).
func findTCPSocket(ctx context.Context, local, remote netip.AddrPort) (tcpSocket, bool, error) {
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(table)
		if errors.Is(err, os.ErrNotExist) {
			continue // no IPv6
		}
		if err != nil {
			return tcpSocket{}, false, fmt.Errorf("read the socket table: %w", err)
		}
		s, found, err := scanTCPTable(ctx, f, local, remote)
		f.Close()
		if err != nil {
			return tcpSocket{}, false, fmt.Errorf("read %s: %w", table, err)
		}
		if found {
			return s, true, nil
		}
	}
	return tcpSocket{}, false, nil
}

func scanTCPTable(ctx context.Context, r io.Reader, local, remote netip.AddrPort) (tcpSocket, bool, error) {
	sc := bufio.NewScanner(r)
	for n := 0; sc.Scan(); n++ {
		if n >= maxTCPRows {
			return tcpSocket{}, false, fmt.Errorf("more than %d sockets", maxTCPRows)
		}
		if n%4096 == 0 && ctx.Err() != nil {
			return tcpSocket{}, false, ctx.Err()
		}
		s, ok, err := parseTCPRow(sc.Text())
		if err != nil {
			return tcpSocket{}, false, err
		}
		if ok && unmapPort(s.Local) == local && unmapPort(s.Remote) == remote {
			return s, true, nil
		}
	}
	return tcpSocket{}, false, sc.Err()
}

// parseTCPRow reads one row of /proc/net/tcp{,6}; false for its header.
//
//	sl  local_address rem_address   st tx_queue:rx_queue tr:tm->when retrnsmt   uid  timeout inode
//	 0: 0100007F:1CE3 0100007F:A7C2 01 00000000:00000000 00:00000000 00000000  1000        0 54321 ...
func parseTCPRow(line string) (tcpSocket, bool, error) {
	f := strings.Fields(line)
	if len(f) == 0 || f[0] == "sl" {
		return tcpSocket{}, false, nil
	}
	if len(f) < 10 || !strings.HasSuffix(f[0], ":") {
		return tcpSocket{}, false, fmt.Errorf("socket row %q: want at least 10 fields", line)
	}
	var s tcpSocket
	var err error
	if s.Local, err = parseTCPAddr(f[1]); err != nil {
		return tcpSocket{}, false, err
	}
	if s.Remote, err = parseTCPAddr(f[2]); err != nil {
		return tcpSocket{}, false, err
	}
	st, err := strconv.ParseUint(f[3], 16, 8)
	if err != nil {
		return tcpSocket{}, false, fmt.Errorf("socket state %q: %w", f[3], err)
	}
	s.State = uint8(st)
	if s.UID, err = strconv.Atoi(f[7]); err != nil {
		return tcpSocket{}, false, fmt.Errorf("socket uid %q: %w", f[7], err)
	}
	if s.Inode, err = strconv.ParseUint(f[9], 10, 64); err != nil {
		return tcpSocket{}, false, fmt.Errorf("socket inode %q: %w", f[9], err)
	}
	return s, true, nil
}

// parseTCPAddr reads ADDR:PORT as the kernel prints it: the address as
// 32-bit words in the machine's byte order, the port in hex.
func parseTCPAddr(s string) (netip.AddrPort, error) {
	a, p, ok := strings.Cut(s, ":")
	if !ok || len(p) != 4 || (len(a) != 8 && len(a) != 32) {
		return netip.AddrPort{}, fmt.Errorf("socket address %q: want HEX:PORT", s)
	}
	raw, err := hex.DecodeString(a)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("socket address %q: %w", s, err)
	}
	port, err := strconv.ParseUint(p, 16, 16)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("socket port %q: %w", s, err)
	}
	b := make([]byte, len(raw))
	for i := 0; i < len(raw); i += 4 {
		binary.NativeEndian.PutUint32(b[i:], binary.BigEndian.Uint32(raw[i:]))
	}
	addr, _ := netip.AddrFromSlice(b)
	return netip.AddrPortFrom(addr, uint16(port)), nil
}

// socketHolder is a process holding target ("socket:[INODE]") among those
// whose descriptors this process may read; 0 when none.
func socketHolder(ctx context.Context, target string) (int, error) {
	all, err := pids()
	if err != nil {
		return 0, err
	}
	seen := 0
	for _, pid := range all {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		held, n := holds(pid, target)
		if held {
			return pid, nil
		}
		if seen += n; seen > maxPeerFDs {
			return 0, fmt.Errorf("looked at %d open files and did not find %s", seen, target)
		}
	}
	return 0, nil
}

// holds reports whether pid has target open, and how many descriptors it
// looked at. Another user's process reads as not holding it.
func holds(pid int, target string) (bool, int) {
	dir := "/proc/" + strconv.Itoa(pid) + "/fd/"
	d, err := os.Open(dir)
	if err != nil {
		return false, 0
	}
	names, err := d.Readdirnames(maxPeerFDs)
	d.Close()
	if err != nil && !errors.Is(err, io.EOF) {
		return false, 0
	}
	for _, n := range names {
		if l, err := os.Readlink(dir + n); err == nil && l == target {
			return true, len(names)
		}
	}
	return false, len(names)
}
