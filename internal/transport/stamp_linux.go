package transport

import (
	"encoding/binary"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// oobSize holds one SCM_TIMESTAMPNS control message (a struct timespec)
// with room to spare for anything else the kernel attaches.
var oobSize = unix.CmsgSpace(16) * 2

// enableRxTimestamps asks the kernel to stamp every received datagram with
// CLOCK_REALTIME at the moment the packet entered the stack
// (SO_TIMESTAMPNS), delivered as an SCM_TIMESTAMPNS control message.
func enableRxTimestamps(rc syscall.RawConn) error {
	var serr error
	err := rc.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1)
	})
	if err != nil {
		return err
	}
	return serr
}

// parseRxTimestamp finds the SCM_TIMESTAMPNS stamp among the control
// messages of one recvmsg. It parses by hand so that the hot path does not
// allocate.
func parseRxTimestamp(oob []byte) (time.Time, bool) {
	for len(oob) >= unix.SizeofCmsghdr {
		l, level, typ := cmsgHeader(oob)
		if l < unix.SizeofCmsghdr || l > len(oob) {
			return time.Time{}, false
		}
		data := oob[unix.CmsgLen(0):l]
		if level == unix.SOL_SOCKET && typ == unix.SCM_TIMESTAMPNS {
			// struct timespec in native layout: two longs.
			switch len(data) {
			case 16:
				sec := int64(binary.NativeEndian.Uint64(data[0:]))
				nsec := int64(binary.NativeEndian.Uint64(data[8:]))
				return time.Unix(sec, nsec), true
			case 8:
				sec := int32(binary.NativeEndian.Uint32(data[0:]))
				nsec := int32(binary.NativeEndian.Uint32(data[4:]))
				return time.Unix(int64(sec), int64(nsec)), true
			}
			return time.Time{}, false
		}
		next := unix.CmsgSpace(l - unix.SizeofCmsghdr)
		if next > len(oob) {
			break
		}
		oob = oob[next:]
	}
	return time.Time{}, false
}

// cmsgHeader decodes a struct cmsghdr: a size_t length then two ints.
func cmsgHeader(b []byte) (length int, level, typ int32) {
	ne := binary.NativeEndian
	if unix.SizeofCmsghdr == 16 {
		return int(ne.Uint64(b)), int32(ne.Uint32(b[8:])), int32(ne.Uint32(b[12:]))
	}
	return int(ne.Uint32(b)), int32(ne.Uint32(b[4:])), int32(ne.Uint32(b[8:]))
}
