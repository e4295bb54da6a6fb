package transport

import (
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// batchIO reads and writes datagrams many at a time, with recvmmsg(2) and
// sendmmsg(2) on the socket's raw descriptor, through Go's netpoller (a
// reader parks on EAGAIN instead of holding a thread). Every buffer is
// allocated once: reading or writing a batch allocates nothing.
type batchIO struct {
	rc syscall.RawConn
	v6 bool // the socket is AF_INET6: IPv4 peers are v4-mapped

	// Reading: one slot per datagram of a batch.
	rhdrs  []unix.Mmsghdr
	riovs  []unix.Iovec
	rnames []unix.RawSockaddrInet6 // large enough for either family
	rdata  []byte                  // len(rhdrs) slots of slot bytes
	roob   []byte                  // len(rhdrs) slots of oobSize
	slot   int
	pkts   []Packet

	// Writing.
	whdrs  []unix.Mmsghdr
	wiovs  []unix.Iovec
	wnames []unix.RawSockaddrInet6
	// After a write with stamped set: broken, a datagram that asked for
	// a stamp was refused (or not taken) by a sendmmsg, and trusted, how
	// many entries of *stamped were sent before it. The kernel may have
	// used up stamp counter values for it (see udpSocket.writeBatch).
	broken  bool
	trusted int

	// The syscalls, made once so that no call allocates a closure: each
	// runs on hdrs[:k] and leaves its count and error in n and err.
	recv, send func(fd uintptr) bool
	k, n       int
	err        error
}

// newBatchIO sets up batches of n datagrams on conn (an AF_INET6 socket
// if v6), read into slots of slot bytes each; slot 0: for writing only.
func newBatchIO(conn *net.UDPConn, v6 bool, n, slot int) (*batchIO, error) {
	rc, err := conn.SyscallConn()
	if err != nil {
		return nil, err
	}
	b := &batchIO{
		rc: rc, v6: v6,
		whdrs: make([]unix.Mmsghdr, n), wiovs: make([]unix.Iovec, n), wnames: make([]unix.RawSockaddrInet6, n),
	}
	if slot > 0 {
		b.rhdrs, b.riovs, b.rnames = make([]unix.Mmsghdr, n), make([]unix.Iovec, n), make([]unix.RawSockaddrInet6, n)
		b.rdata, b.roob, b.slot, b.pkts = make([]byte, n*slot), make([]byte, n*oobSize), slot, make([]Packet, n)
	}
	b.recv = func(fd uintptr) bool { return b.mmsg(fd, unix.SYS_RECVMMSG, b.rhdrs, unix.MSG_DONTWAIT) }
	b.send = func(fd uintptr) bool { return b.mmsg(fd, unix.SYS_SENDMMSG, b.whdrs[:b.k], unix.MSG_DONTWAIT) }
	return b, nil
}

// read waits for datagrams and reads every one already queued, up to a
// batch. The packets returned alias the batch's buffers until the next
// read. Datagrams that were truncated (longer than a slot) are dropped and
// counted; skip, if set, drops a datagram by source before it is counted
// as input (it counts it itself).
func (b *batchIO) read(c *counters, via Via, unstamped string, skip func(netip.AddrPort) bool) ([]Packet, error) {
	slotSize := b.slot
	for i := range b.rhdrs {
		h := &b.rhdrs[i].Hdr
		b.riovs[i].Base = &b.rdata[i*slotSize]
		b.riovs[i].SetLen(slotSize)
		h.Name = (*byte)(unsafe.Pointer(&b.rnames[i]))
		h.Namelen = unix.SizeofSockaddrInet6
		h.Iov = &b.riovs[i]
		h.SetIovlen(1)
		if oobSize > 0 {
			h.Control = &b.roob[i*oobSize]
			h.SetControllen(oobSize)
		}
		h.Flags = 0
		b.rhdrs[i].Len = 0
	}
	if err := b.rc.Read(b.recv); err != nil {
		return nil, err // closed
	}
	n := b.n
	if b.err != nil {
		return nil, b.err
	}
	now := time.Now()
	out := b.pkts[:0]
	for i := range n {
		h := &b.rhdrs[i].Hdr
		if h.Flags&unix.MSG_TRUNC != 0 {
			c.truncated.Add(1)
			continue
		}
		size := int(b.rhdrs[i].Len)
		from, ok := b.sockaddr(&b.rnames[i])
		if !ok || skip != nil && skip(from) {
			continue
		}
		p := Packet{From: from, Data: b.rdata[i*slotSize : i*slotSize+size : i*slotSize+size], Via: via}
		p.Unstamped = unstamped
		if unstamped == "" {
			p.Time, p.Kernel = parseRxTimestamp(b.roob[i*oobSize : i*oobSize+int(h.Controllen)])
			if !p.Kernel {
				p.Unstamped = noStampAttached
			}
		}
		if !p.Kernel {
			p.Time = now
		}
		c.stamp(p.Kernel)
		c.via[via].in(size)
		out = append(out, p)
	}
	return out, nil
}

// sockaddr decodes a source address (v4-mapped IPv6 unmapped).
func (b *batchIO) sockaddr(sa *unix.RawSockaddrInet6) (netip.AddrPort, bool) {
	switch sa.Family {
	case unix.AF_INET:
		sa4 := (*unix.RawSockaddrInet4)(unsafe.Pointer(sa))
		return netip.AddrPortFrom(netip.AddrFrom4(sa4.Addr), portOf(sa4.Port)), true
	case unix.AF_INET6:
		return netip.AddrPortFrom(netip.AddrFrom16(sa.Addr).Unmap(), portOf(sa.Port)), true
	}
	return netip.AddrPort{}, false
}

// portOf reads a port stored in network byte order in a sockaddr.
func portOf(p uint16) uint16 {
	var b [2]byte
	binary.NativeEndian.PutUint16(b[:], p)
	return binary.BigEndian.Uint16(b[:])
}

// setSockaddr encodes to into sa for this socket's family, reporting false
// for a destination the socket cannot reach (IPv6 from an IPv4 socket).
func (b *batchIO) setSockaddr(sa *unix.RawSockaddrInet6, to netip.AddrPort) (uint32, bool) {
	var port [2]byte
	binary.BigEndian.PutUint16(port[:], to.Port())
	nport := binary.NativeEndian.Uint16(port[:])
	a := to.Addr()
	if !b.v6 {
		if !a.Is4() && !a.Is4In6() {
			return 0, false
		}
		sa4 := (*unix.RawSockaddrInet4)(unsafe.Pointer(sa))
		*sa4 = unix.RawSockaddrInet4{Family: unix.AF_INET, Port: nport, Addr: a.Unmap().As4()}
		return unix.SizeofSockaddrInet4, true
	}
	*sa = unix.RawSockaddrInet6{Family: unix.AF_INET6, Port: nport, Addr: a.As16()}
	return unix.SizeofSockaddrInet6, true
}

// write sends ds with as few sendmmsg calls as it takes, batch by batch.
// A datagram the kernel refuses (its address unreachable, say) is skipped
// and counted; the first such error is returned after the rest are sent.
//
// With stamped set, the datagrams with Stamp carry txStampOOB, and the
// index in ds of each one sent is appended to *stamped, in order.
func (b *batchIO) write(c *counters, via Via, ds []Datagram, stamped *[]int) (int, error) {
	sent, base := 0, 0
	var first error
	b.broken, b.trusted = false, 0
	for len(ds) > 0 {
		k := 0
		for k < len(ds) && k < len(b.whdrs) {
			d := ds[k]
			nl, ok := b.setSockaddr(&b.wnames[k], d.To)
			if !ok || len(d.Data) > MaxDatagram {
				break
			}
			h := &b.whdrs[k].Hdr
			b.wiovs[k].Base = nil // an empty datagram is a datagram
			if len(d.Data) > 0 {
				b.wiovs[k].Base = &d.Data[0]
			}
			b.wiovs[k].SetLen(len(d.Data))
			*h = unix.Msghdr{Name: (*byte)(unsafe.Pointer(&b.wnames[k])), Namelen: nl, Iov: &b.wiovs[k]}
			h.SetIovlen(1)
			if stamped != nil && d.Stamp {
				h.Control = &txStampOOB[0]
				h.SetControllen(len(txStampOOB))
			}
			b.whdrs[k].Len = 0
			k++
		}
		if k == 0 {
			// ds[0] cannot be sent at all.
			c.sendErrs.Add(1)
			if first == nil {
				first = errors.New("transport: datagram too long or to an address of another family")
			}
			ds, base = ds[1:], base+1
			continue
		}
		n, err := b.sendmmsg(k)
		for i := range n {
			c.via[via].out(len(ds[i].Data))
			if stamped != nil && ds[i].Stamp {
				*stamped = append(*stamped, base+i)
			}
		}
		if stamped != nil && !b.broken && n < k && ds[n].Stamp {
			// A stamped datagram that did not go: it may have taken a
			// counter value (sendmmsg stops at it, or fails on it).
			b.broken, b.trusted = true, len(*stamped)
		}
		sent += n
		ds, base = ds[n:], base+n
		if err != nil {
			// sendmmsg reports an error only when the first datagram
			// fails: skip it and go on with the rest.
			c.sendErrs.Add(1)
			if first == nil {
				first = err
			}
			ds, base = ds[1:], base+1
		}
	}
	return sent, first
}

func (b *batchIO) sendmmsg(k int) (int, error) {
	b.k = k
	if err := b.rc.Write(b.send); err != nil {
		return 0, err // closed
	}
	if b.err == nil && b.n == 0 {
		return 0, errors.New("transport: sendmmsg sent nothing")
	}
	return b.n, b.err
}

// mmsg runs recvmmsg or sendmmsg (trap) on hdrs with flags, for
// RawConn.Read or Write: false (on EAGAIN) parks the goroutine in the
// netpoller until the socket is ready; EINTR retries at once.
//
// The call is a raw syscall: with MSG_DONTWAIT it never sleeps, so the
// runtime need not know about it. A Syscall6 would enter and leave the
// scheduler's syscall state, and on a daemon that idles between packets
// that wakes the runtime's monitor thread (asleep while every P is idle)
// for nearly every packet, and lets it hand the P of a send that takes
// long (a veth send runs the receiver's network stack inline) to another
// thread: thread wake-ups per packet that cost more than the packet.
func (b *batchIO) mmsg(fd, trap uintptr, hdrs []unix.Mmsghdr, flags uintptr) bool {
	for {
		r, _, e := unix.RawSyscall6(trap, fd, uintptr(unsafe.Pointer(&hdrs[0])), uintptr(len(hdrs)), flags, 0, 0)
		switch e {
		case 0:
			b.n, b.err = int(r), nil
			return true
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			return false
		}
		b.n, b.err = 0, e
		return true
	}
}
