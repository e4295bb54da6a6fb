package transport

import (
	"encoding/binary"
	"syscall"
	"time"
	"unsafe"

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
			if len(data) == 16 || len(data) == 8 {
				return timespec(data, len(data)), true
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

// timespec decodes a struct timespec of size bytes in native layout: two
// longs, 8 bytes each (16) or, on a 32-bit kernel, 4 (8).
func timespec(b []byte, size int) time.Time {
	ne := binary.NativeEndian
	if size == 16 {
		return time.Unix(int64(ne.Uint64(b)), int64(ne.Uint64(b[8:])))
	}
	return time.Unix(int64(int32(ne.Uint32(b))), int64(int32(ne.Uint32(b[4:]))))
}

// cmsgHeader decodes a struct cmsghdr: a size_t length then two ints.
func cmsgHeader(b []byte) (length int, level, typ int32) {
	ne := binary.NativeEndian
	if unix.SizeofCmsghdr == 16 {
		return int(ne.Uint64(b)), int32(ne.Uint32(b[8:])), int32(ne.Uint32(b[12:]))
	}
	return int(ne.Uint32(b)), int32(ne.Uint32(b[4:])), int32(ne.Uint32(b[8:]))
}

// txStampFlags set up software transmit timestamps on a socket (taken when
// the packet reaches the device, inside sendmsg on a veth or a loopback),
// reported without a copy of the payload, tagged with a per-socket counter
// so that each is matched to its datagram. They do not generate any: a
// send asks for its own with txStampOOB (Linux 4.13 and later), so the
// datagrams nobody times (an NTP server's replies) cost no stamp, no error
// queue read and no counter value (the kernel counts stamped datagrams
// only). Receive stamps stay with SO_TIMESTAMPNS: these flags do not ask
// for SOF_TIMESTAMPING_RX_*.
// txStampsOffered: this platform gives kernel transmit stamps, so a
// socket that could not turn them on misses every one.
const txStampsOffered = true

const txStampFlags = unix.SOF_TIMESTAMPING_SOFTWARE | unix.SOF_TIMESTAMPING_OPT_TSONLY | unix.SOF_TIMESTAMPING_OPT_ID

// txStampOOB is the control message that asks for the software transmit
// stamp of one datagram (SO_TIMESTAMPING, SOF_TIMESTAMPING_TX_SOFTWARE).
var txStampOOB = func() []byte {
	b := make([]byte, unix.CmsgSpace(4))
	h := (*unix.Cmsghdr)(unsafe.Pointer(&b[0]))
	h.Level, h.Type = unix.SOL_SOCKET, unix.SO_TIMESTAMPING
	h.SetLen(unix.CmsgLen(4))
	binary.NativeEndian.PutUint32(b[unix.CmsgLen(0):], unix.SOF_TIMESTAMPING_TX_SOFTWARE)
	return b
}()

// enableTxTimestamps sets a socket up for kernel transmit timestamps
// (SO_TIMESTAMPING); each send then asks for its own (txStampOOB).
func enableTxTimestamps(rc syscall.RawConn) error {
	var serr error
	err := rc.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_TIMESTAMPING, txStampFlags)
	})
	if err != nil {
		return err
	}
	return serr
}

// txOOBSize holds the error queue's control messages for one stamp: a
// struct scm_timestamping (three timespecs) and a sock_extended_err with
// its offender address.
var txOOBSize = unix.CmsgSpace(3*16) + unix.CmsgSpace(sizeofSockExtendedErr+unix.SizeofSockaddrInet6)

// txReader drains a socket's error queue of transmit stamps. Its buffers,
// message header and syscall are made once: a drain allocates nothing (an
// NTP server reads one after every batch of interleaved answers).
type txReader struct {
	rc    syscall.RawConn
	oob   []byte
	buf   [1]byte
	iov   unix.Iovec
	msg   unix.Msghdr
	found []txFound // the last drain's stamps, in queue order
	drain func(fd uintptr)
}

// txFound is one stamp read from the error queue: the counter value the
// kernel gave its datagram, and the time.
type txFound struct {
	key uint32
	t   time.Time
}

func newTxReader(rc syscall.RawConn) *txReader {
	r := &txReader{rc: rc, oob: make([]byte, txOOBSize), found: make([]txFound, 0, BatchSize)}
	r.drain = func(fd uintptr) {
		for {
			r.iov.Base = &r.buf[0]
			r.iov.SetLen(1)
			r.msg = unix.Msghdr{Iov: &r.iov, Control: &r.oob[0]}
			r.msg.SetIovlen(1)
			r.msg.SetControllen(len(r.oob))
			// A raw syscall: MSG_DONTWAIT never sleeps (see batchIO.mmsg).
			_, _, e := unix.RawSyscall(unix.SYS_RECVMSG, fd, uintptr(unsafe.Pointer(&r.msg)), unix.MSG_ERRQUEUE|unix.MSG_DONTWAIT)
			switch e {
			case 0:
			case unix.EINTR:
				continue
			default:
				return // EAGAIN: the queue is empty
			}
			if t, key, ok := parseTxTimestamp(r.oob[:r.msg.Controllen]); ok {
				r.found = append(r.found, txFound{key: key, t: t})
			}
		}
	}
	return r
}

// read drains the error queue (never blocking) and sets stamps[ids[k]] to
// the transmit stamp of the datagram with counter first+k, for k below
// trusted and those the kernel has queued (Kernel true). Stamps of older
// datagrams are dropped: each is read right after its own send, so an
// older one can only be a stamp that came too late to be used. ahead
// reports a stamp whose counter is first+len(ids) or later: the kernel
// has counted more stamped datagrams than the socket sent, and the
// counter must be reset (reset).
func (r *txReader) read(first uint32, ids []int, trusted int, stamps []TxStamp) (ahead bool) {
	r.found = r.found[:0]
	_ = r.rc.Control(r.drain)
	for _, f := range r.found {
		k := f.key - first
		switch {
		case int32(k) < 0:
			// Late: an earlier datagram's.
		case k < uint32(trusted) && k < uint32(len(ids)):
			stamps[ids[k]] = TxStamp{Time: f.t, Kernel: true}
		case k >= uint32(len(ids)):
			ahead = true
		}
	}
	r.found = r.found[:0]
	return ahead
}

// reset drops every queued stamp and restarts the kernel's counter at 0:
// turning SOF_TIMESTAMPING_OPT_ID off and on again zeroes it
// (sock_set_timestamping).
func (r *txReader) reset() error {
	r.found = r.found[:0]
	_ = r.rc.Control(r.drain)
	r.found = r.found[:0]
	var serr error
	err := r.rc.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_TIMESTAMPING, txStampFlags&^unix.SOF_TIMESTAMPING_OPT_ID)
		if serr == nil {
			serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_TIMESTAMPING, txStampFlags)
		}
	})
	if err != nil {
		return err
	}
	return serr
}

// parseTxTimestamp reads one error-queue message: the software stamp of
// its SCM_TIMESTAMPING and the counter of its timestamping extended error.
func parseTxTimestamp(oob []byte) (time.Time, uint32, bool) {
	var t time.Time
	var id uint32
	haveTime, haveID := false, false
	for len(oob) >= unix.SizeofCmsghdr {
		l, level, typ := cmsgHeader(oob)
		if l < unix.SizeofCmsghdr || l > len(oob) {
			break
		}
		data := oob[unix.CmsgLen(0):l]
		switch {
		case level == unix.SOL_SOCKET && typ == unix.SCM_TIMESTAMPING && (len(data) == 48 || len(data) == 24):
			// Three struct timespec (of 8-byte longs, or 4-byte ones on a
			// 32-bit kernel); ts[0] is the software stamp (ts[2] would be
			// hardware).
			if ts := timespec(data, len(data)/3); !ts.Equal(time.Unix(0, 0)) {
				t, haveTime = ts, true
			}
		case (level == unix.SOL_IP && typ == unix.IP_RECVERR || level == unix.SOL_IPV6 && typ == unix.IPV6_RECVERR) &&
			len(data) >= sizeofSockExtendedErr:
			// struct sock_extended_err: errno (4), origin (1), type,
			// code, pad, info (4), data (4).
			if errno := binary.NativeEndian.Uint32(data[0:]); errno == uint32(unix.ENOMSG) && data[4] == unix.SO_EE_ORIGIN_TIMESTAMPING {
				id, haveID = binary.NativeEndian.Uint32(data[12:]), true
			}
		}
		next := unix.CmsgSpace(l - unix.SizeofCmsghdr)
		if next > len(oob) {
			break
		}
		oob = oob[next:]
	}
	return t, id, haveTime && haveID
}

// sizeofSockExtendedErr is sizeof(struct sock_extended_err): errno, four
// bytes of origin/type/code/pad, info, data.
const sizeofSockExtendedErr = 16
