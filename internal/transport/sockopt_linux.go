package transport

import (
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// setReuse lets every node on a host bind the same group address and port
// (SO_REUSEADDR for the multicast semantics, SO_REUSEPORT so that sockets
// of different users or processes may share it too).
func setReuse(_, _ string, rc syscall.RawConn) error {
	return control(rc, func(fd int) error {
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1); err != nil {
			return err
		}
		return unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEPORT, 1)
	})
}

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
