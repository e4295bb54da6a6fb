package ctl

import (
	"errors"
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// idleOpen reports whether an idle connection is still open: nothing to
// read on it (the daemon sends nothing unasked) and no end of stream (the
// daemon closed it, e.g. it restarted). One non-blocking peek.
func idleOpen(c net.Conn) bool {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return true
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	open := false
	var buf [1]byte
	err = raw.Read(func(fd uintptr) bool {
		_, _, perr := unix.Recvfrom(int(fd), buf[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
		open = errors.Is(perr, unix.EAGAIN)
		return true // never wait: the answer is now
	})
	return err == nil && open
}
