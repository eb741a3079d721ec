//go:build linux

package proc

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"testing"
)

func TestParseTCPRow(t *testing.T) {
	t.Parallel()
	if binary.NativeEndian.Uint16([]byte{1, 0}) != 1 {
		t.Skip("the rows below are a little-endian machine's")
	}
	tests := []struct {
		name, row string
		want      tcpSocket
		header    bool
		wantErr   bool
	}{
		{
			name:   "header",
			row:    "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode",
			header: true,
		},
		{
			name: "IPv4 established",
			row:  "   3: 0100007F:A7C2 0100007F:1CE3 01 00000000:00000000 00:00000000 00000000  1000        0 54321 1 0000000000000000 20 4 30 10 -1",
			want: tcpSocket{Local: netip.MustParseAddrPort("127.0.0.1:42946"), Remote: netip.MustParseAddrPort("127.0.0.1:7395"), State: 1, UID: 1000, Inode: 54321},
		},
		{
			name: "IPv4 listening on any address",
			row:  "   0: 00000000:07E8 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1638 1 00000000a032a10f 100 0 0 10 0",
			want: tcpSocket{Local: netip.MustParseAddrPort("0.0.0.0:2024"), Remote: netip.MustParseAddrPort("0.0.0.0:0"), State: 10, UID: 0, Inode: 1638},
		},
		{
			name: "IPv6 loopback",
			row:  "   1: 00000000000000000000000001000000:D431 00000000000000000000000001000000:1CE3 01 00000000:00000000 00:00000000 00000000  1000        0 777 1 0000000000000000 20 4 30 10 -1",
			want: tcpSocket{Local: netip.MustParseAddrPort("[::1]:54321"), Remote: netip.MustParseAddrPort("[::1]:7395"), State: 1, UID: 1000, Inode: 777},
		},
		{
			name: "v4-mapped end of a dual-stack listener",
			row:  "   2: 0000000000000000FFFF00000100007F:1CE3 0000000000000000FFFF00000100007F:A7C2 01 00000000:00000000 00:00000000 00000000  1000        0 778 1 0000000000000000 20 4 30 10 -1",
			want: tcpSocket{Local: netip.MustParseAddrPort("[::ffff:127.0.0.1]:7395"), Remote: netip.MustParseAddrPort("[::ffff:127.0.0.1]:42946"), State: 1, UID: 1000, Inode: 778},
		},
		{
			name: "orphaned (no inode)",
			row:  "   4: 0100007F:A7C4 0100007F:1CE3 06 00000000:00000000 03:00000F9B 00000000     0        0 0 3 0000000000000000",
			want: tcpSocket{Local: netip.MustParseAddrPort("127.0.0.1:42948"), Remote: netip.MustParseAddrPort("127.0.0.1:7395"), State: 6, UID: 0, Inode: 0},
		},
		{name: "too few fields", row: "   0: 0100007F:A7C2 0100007F:1CE3 01", wantErr: true},
		{name: "odd address", row: "   0: 0100007:A7C2 0100007F:1CE3 01 00000000:00000000 00:00000000 00000000  1000        0 1 1", wantErr: true},
		{name: "not hex", row: "   0: 0100007G:A7C2 0100007F:1CE3 01 00000000:00000000 00:00000000 00000000  1000        0 1 1", wantErr: true},
		{name: "no port", row: "   0: 0100007F 0100007F:1CE3 01 00000000:00000000 00:00000000 00000000  1000        0 1 1", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, ok, err := parseTCPRow(tt.row)
			switch {
			case tt.wantErr:
				if err == nil {
					t.Fatalf("parsed %+v, want an error", got)
				}
			case err != nil:
				t.Fatal(err)
			case ok == tt.header:
				t.Fatalf("row: %v, want %v", ok, !tt.header)
			case got != tt.want:
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

// The v4-mapped end of a dual-stack listener matches the IPv4 address it
// was accepted from.
func TestScanTCPTableUnmaps(t *testing.T) {
	t.Parallel()
	if binary.NativeEndian.Uint16([]byte{1, 0}) != 1 {
		t.Skip("the rows below are a little-endian machine's")
	}
	table := "  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n" +
		"   0: 0000000000000000FFFF00000100007F:A7C2 0000000000000000FFFF00000100007F:1CE3 01 00000000:00000000 00:00000000 00000000  1000        0 778 1\n"
	s, found, err := scanTCPTable(context.Background(), strings.NewReader(table), netip.MustParseAddrPort("127.0.0.1:42946"), netip.MustParseAddrPort("127.0.0.1:7395"))
	if err != nil || !found || s.Inode != 778 {
		t.Fatalf("found %v %+v (%v), want the socket of inode 778", found, s, err)
	}
}

// TestHelperDialTCP is not a test: run by dialer, it connects to
// $TCPPEER_TEST_ADDR and holds the connection until its standard input
// closes.
func TestHelperDialTCP(t *testing.T) {
	addr := os.Getenv("TCPPEER_TEST_ADDR")
	if addr == "" {
		t.Skip("run by dialer")
	}
	c, err := net.Dial("tcp", addr)
	if err != nil {
		os.Exit(2)
	}
	b := make([]byte, 1)
	os.Stdin.Read(b)
	c.Close()
	os.Exit(0)
}

// dialer starts a process that connects to ln, and returns it with the
// accepted connection.
func dialer(t *testing.T, ln net.Listener) (*exec.Cmd, net.Conn) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperDialTCP$")
	cmd.Env = append(os.Environ(), "TCPPEER_TEST_ADDR="+ln.Addr().String())
	if _, err := cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	conn, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return cmd, conn
}

func addrPorts(t *testing.T, c net.Conn) (local, remote netip.AddrPort) {
	t.Helper()
	return c.LocalAddr().(*net.TCPAddr).AddrPort(), c.RemoteAddr().(*net.TCPAddr).AddrPort()
}

// The process at the other end of a loopback connection is found, pinned
// with its start stamp, over IPv4 and IPv6; once it has exited it is not
// found, and no other process is taken for it.
func TestTCPPeer(t *testing.T) {
	t.Parallel()
	for _, network := range []string{"127.0.0.1:0", "[::1]:0"} {
		t.Run(network, func(t *testing.T) {
			t.Parallel()
			ln, err := net.Listen("tcp", network)
			if err != nil {
				t.Skipf("listen on %s: %v", network, err)
			}
			defer ln.Close()
			cmd, conn := dialer(t, ln)
			local, remote := addrPorts(t, conn)
			c, err := TCPPeer(context.Background(), local, remote)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			want, err := Lookup(cmd.Process.Pid)
			if err != nil {
				t.Fatal(err)
			}
			if c.PID != cmd.Process.Pid || c.Start != want.Start || c.UID != os.Getuid() {
				t.Fatalf("found pid %d start %d uid %d, want the dialer: pid %d start %d uid %d", c.PID, c.Start, c.UID, cmd.Process.Pid, want.Start, os.Getuid())
			}
			if err := c.Check(); err != nil {
				t.Fatal(err)
			}

			cmd.Process.Kill()
			cmd.Wait()
			if c, err := TCPPeer(context.Background(), local, remote); !errors.Is(err, ErrUnproven) {
				t.Fatalf("after the dialer exited: %+v, %v; want ErrUnproven", c, err)
			}
		})
	}
}

// An address that is not this machine's is another machine's peer; one
// that is, with no socket connected from it, is not taken for one.
func TestTCPPeerRemote(t *testing.T) {
	t.Parallel()
	_, err := TCPPeer(context.Background(), netip.MustParseAddrPort("127.0.0.1:7387"), netip.MustParseAddrPort("192.0.2.7:51234"))
	if !errors.Is(err, ErrRemotePeer) {
		t.Fatalf("a peer at 192.0.2.7: %v, want ErrRemotePeer", err)
	}
	for _, local := range []string{"127.0.0.2:1", "[::1]:1", "[::ffff:127.0.0.1]:1"} {
		_, err := TCPPeer(context.Background(), netip.MustParseAddrPort("127.0.0.1:7387"), netip.MustParseAddrPort(local))
		if !errors.Is(err, ErrUnproven) {
			t.Errorf("a peer at %s with no socket: %v, want ErrUnproven", local, err)
		}
	}
	// A link-local address of this machine, zone and all.
	addrs, _ := net.Interfaces()
	for _, ifc := range addrs {
		as, _ := ifc.Addrs()
		for _, a := range as {
			n, ok := a.(*net.IPNet)
			if !ok || !n.IP.IsLinkLocalUnicast() || n.IP.To4() != nil {
				continue
			}
			ip, _ := netip.AddrFromSlice(n.IP)
			peer := netip.AddrPortFrom(ip.WithZone(ifc.Name), 1)
			if _, err := TCPPeer(context.Background(), netip.MustParseAddrPort("127.0.0.1:7387"), peer); !errors.Is(err, ErrUnproven) {
				t.Errorf("a peer at this machine's %s: %v, want ErrUnproven", peer, err)
			}
		}
	}
}
