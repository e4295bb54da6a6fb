package transport

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"syscall"
	"time"

	"github.com/synclab/synclab/internal/rawsock"
	"golang.org/x/sys/unix"
)

// setUserTimeout bounds how long written data may stay unacknowledged
// (TCP_USER_TIMEOUT). Keepalive only probes an idle connection; without
// this, a link to a partitioned peer with data in flight would retransmit
// for many minutes while every frame written meanwhile is lost.
func setUserTimeout(rc syscall.RawConn, d time.Duration) error {
	return control(rc, func(fd int) error {
		return unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT, int(d.Milliseconds()))
	})
}

func control(rc syscall.RawConn, fn func(fd int) error) error {
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = fn(int(fd)) }); err != nil {
		return err
	}
	return serr
}

// listenGroup binds a UDP socket to the group address itself, shared with
// the other nodes of the host. net.ListenPacket cannot do this: given a
// multicast address it binds the wildcard instead, which would collide with
// a member socket on the same port and let unicast datagrams into the
// group socket.
func listenGroup(group netip.AddrPort) (*net.UDPConn, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, unix.IPPROTO_UDP)
	if err != nil {
		return nil, os.NewSyscallError("socket", err)
	}
	for _, opt := range []int{unix.SO_REUSEADDR, unix.SO_REUSEPORT} {
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, opt, 1); err != nil {
			unix.Close(fd)
			return nil, os.NewSyscallError("setsockopt", err)
		}
	}
	if err := unix.Bind(fd, &unix.SockaddrInet4{Port: int(group.Port()), Addr: group.Addr().As4()}); err != nil {
		unix.Close(fd)
		return nil, os.NewSyscallError("bind", err)
	}
	f := os.NewFile(uintptr(fd), "udp-group")
	defer f.Close() // FilePacketConn dups the descriptor
	pc, err := net.FilePacketConn(f)
	if err != nil {
		return nil, err
	}
	conn, ok := pc.(*net.UDPConn)
	if !ok {
		pc.Close()
		return nil, fmt.Errorf("group socket is a %T, not UDP", pc)
	}
	return conn, nil
}

// setBroadcast allows sends to a broadcast address (SO_BROADCAST).
func setBroadcast(rc syscall.RawConn) error {
	return control(rc, func(fd int) error {
		return unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_BROADCAST, 1)
	})
}

// drainQueued reads, without waiting, what a TCP connection's kernel
// receive queue holds (at most drainMax bytes), handing it to fn: a
// superseded connection's backlog, counted before the reset discards it.
// It clears the read deadline (a past one would refuse the read).
func drainQueued(conn net.Conn, fn func([]byte)) {
	tc, ok := rawsock.Unwrap(conn).(*net.TCPConn)
	if !ok {
		return
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return
	}
	tc.SetReadDeadline(time.Time{})
	buf := make([]byte, 64<<10)
	total := 0
	rc.Read(func(fd uintptr) bool {
		for total < drainMax {
			n, _, err := unix.Recvfrom(int(fd), buf, unix.MSG_DONTWAIT)
			if err != nil || n <= 0 {
				break
			}
			total += n
			fn(buf[:n])
		}
		return true
	})
}
