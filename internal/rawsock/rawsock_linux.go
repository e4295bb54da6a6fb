package rawsock

import (
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Conn is a stream connection (TCP or unix) whose Read is recvfrom and
// whose Write is sendto (MSG_NOSIGNAL: a peer gone is EPIPE, never a
// SIGPIPE), both with MSG_DONTWAIT, as raw system calls. Everything
// else (deadlines, Close, the addresses) is the embedded connection's, and
// it passes SyscallConn and CloseWrite on.
type Conn struct {
	net.Conn
	rc syscall.RawConn
}

// Wrap returns c with raw reads and writes, or c itself if its
// descriptor cannot be reached (not a socket of package net).
func Wrap(c net.Conn) net.Conn {
	if _, ok := c.(*Conn); ok {
		return c // once: Unwrap takes one layer off
	}
	sc, ok := c.(syscall.Conn)
	if !ok {
		return c
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return c
	}
	return &Conn{Conn: c, rc: rc}
}

// Read reads what the socket holds, up to len(b), waiting in the poller
// (with the connection's read deadline) while it holds nothing. 0 bytes
// from a socket with room to read is the end of the stream: io.EOF.
func (c *Conn) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	var (
		n     int
		errno syscall.Errno
	)
	err := c.rc.Read(func(fd uintptr) bool {
		for {
			r, _, e := unix.RawSyscall6(unix.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), unix.MSG_DONTWAIT, 0, 0)
			switch e {
			case unix.EINTR:
				continue
			case unix.EAGAIN:
				return false // nothing yet: wait in the poller
			}
			n, errno = int(r), e
			return true
		}
	})
	switch {
	case err != nil:
		return 0, renameOp(err, "read") // a deadline, or the connection closed: net's own errors
	case errno != 0:
		return 0, c.opError("read", os.NewSyscallError("recvfrom", errno))
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

// Write writes all of b, waiting in the poller (with the connection's
// write deadline) while the socket has no room. It returns what was
// written before an error.
func (c *Conn) Write(b []byte) (int, error) {
	var (
		n     int
		errno syscall.Errno
	)
	err := c.rc.Write(func(fd uintptr) bool {
		for n < len(b) {
			p := b[n:]
			r, _, e := unix.RawSyscall6(unix.SYS_SENDTO, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)), unix.MSG_DONTWAIT|unix.MSG_NOSIGNAL, 0, 0)
			switch e {
			case 0:
				n += int(r)
			case unix.EINTR:
			case unix.EAGAIN:
				return false // no room: wait in the poller
			default:
				errno = e
				return true
			}
		}
		return true
	})
	switch {
	case err != nil:
		return n, renameOp(err, "write")
	case errno != 0:
		return n, c.opError("write", os.NewSyscallError("sendto", errno))
	}
	return n, nil
}

// SyscallConn gives the descriptor, as the wrapped connection's does
// (a peek, a socket option).
func (c *Conn) SyscallConn() (syscall.RawConn, error) { return c.rc, nil }

// CloseWrite shuts down the writing side, as the wrapped connection's
// does (net/http half-closes before it drops a connection with a request
// body it will not read, so that the answer is read before a reset).
func (c *Conn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return c.opError("close", errors.ErrUnsupported)
}

// renameOp names a *net.OpError of the raw calls ("raw-read") as
// net.Conn's own would ("read"): a link's or a call's error reads the
// same in the logs and in status as before.
func renameOp(err error, op string) error {
	if oe, ok := err.(*net.OpError); ok {
		oe.Op = op
	}
	return err
}

func (c *Conn) opError(op string, err error) error {
	return &net.OpError{Op: op, Net: c.LocalAddr().Network(), Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
}
