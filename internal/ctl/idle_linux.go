package ctl

import (
	"net"
	"syscall"
	"unsafe"

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
		// A raw call, as every read of the connection (internal/rawsock):
		// with MSG_DONTWAIT it cannot block.
		_, _, e := unix.RawSyscall6(unix.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&buf[0])), 1, unix.MSG_PEEK|unix.MSG_DONTWAIT, 0, 0)
		open = e == unix.EAGAIN
		return true // never wait: the answer is now
	})
	return err == nil && open
}
