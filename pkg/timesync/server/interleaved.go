package server

import (
	"encoding/binary"
	"net/netip"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/wire"
)

// InterleavedStamps is how many answers' transmit stamps the server keeps
// for interleaved mode: one per client that polls in it (the answer it
// will ask about next), plus those of clients that stopped or forged. A
// fixed ring: the oldest stamp is dropped for a new one (counted as
// evicted), so memory stays at about 200 KiB and each request costs one
// map look-up, whatever the clients send.
const InterleavedStamps = 4096

// interleaved is the server's side of chrony's interleaved client/server
// mode. A request in interleaved form (NTPv4, non-zero origin and receive
// timestamps that differ from the transmit one, and an odd origin: the
// server makes its receive timestamps odd and the node its transmit
// timestamps even (node.ntpXmt), so that an origin echoing one of its
// transmit timestamps, as RFC 5905 clients send, is told apart) has its answer's kernel transmit stamp saved, keyed by the
// answer's receive timestamp and address; the next request from that
// host whose origin is that receive timestamp gets the stamp as its
// transmit timestamp, once, and its own receive field as origin.
type interleaved struct {
	ring  [InterleavedStamps]xlStamp
	next  int
	index map[wire.NTPTime]int32 // receive timestamp -> ring slot

	answers, saved, evicted, unknown uint64
}

type xlStamp struct {
	addr netip.AddrPort
	rx   wire.NTPTime
	tx   wire.NTPTime // zero: slot empty or used
}

func newInterleaved() *interleaved {
	return &interleaved{index: make(map[wire.NTPTime]int32, InterleavedStamps)}
}

// interleavedForm reports whether req asks for interleaved mode.
func interleavedForm(req *wire.NTPPacket) bool {
	return req.Version == 4 && req.Origin&1 == 1 && !req.Receive.IsZero() && req.Receive != req.Transmit
}

// take returns the saved transmit stamp of our answer whose receive
// timestamp is rx, if it went to addr's host and was not given out yet;
// it is given out once. The port is not compared: chronyd sends each
// request from a new port.
func (x *interleaved) take(rx wire.NTPTime, addr netip.AddrPort) (wire.NTPTime, bool) {
	i, ok := x.index[rx]
	if !ok || x.ring[i].addr.Addr() != addr.Addr() || x.ring[i].tx.IsZero() {
		x.unknown++
		return 0, false
	}
	tx := x.ring[i].tx
	x.ring[i].tx = 0
	delete(x.index, rx)
	x.answers++
	return tx, true
}

// save keeps the transmit stamp tx of our answer with receive timestamp rx
// to addr, dropping the oldest one kept if the ring is full.
func (x *interleaved) save(addr netip.AddrPort, rx, tx wire.NTPTime) {
	if tx.IsZero() {
		tx = 1 // zero marks an empty slot; 233 ps off
	}
	if old, ok := x.index[rx]; ok {
		// The same receive timestamp again (two requests stamped alike):
		// the new answer replaces the old.
		x.ring[old].tx = 0
	}
	slot := &x.ring[x.next]
	if !slot.tx.IsZero() {
		x.evicted++
		delete(x.index, slot.rx)
	}
	*slot = xlStamp{addr: addr, rx: rx, tx: tx}
	x.index[rx] = int32(x.next)
	x.next = (x.next + 1) % InterleavedStamps
	x.saved++
}

var _ core.AnswerStamper = (*Server)(nil)

// AnswerSent keeps the kernel's transmit stamp of an answer to a request
// in interleaved form (core.AnswerStamper): ans.Data as written, ans.Time
// the stamp on the local clock.
func (s *Server) AnswerSent(ans core.Datagram) {
	if len(ans.Data) < wire.NTPHeaderLen {
		return
	}
	rx := wire.NTPTime(binary.BigEndian.Uint64(ans.Data[wire.NTPXmtOffset-8:]))
	s.xl.save(ans.Addr, rx, wire.NTPTimeFromTime(ans.Time))
}

// interleave turns reply, the basic answer to req from addr, into its
// interleaved form if req asks for it and the stamp it names is kept, and
// reports whether the answer's transmit stamp is wanted (req asks for
// interleaved mode: its next request will name this answer) and whether
// its transmit timestamp is final (interleaved: not to be written at the
// send). Every NTPv4 answer's receive timestamp is made odd (233 ps
// later).
func (s *Server) interleave(req *wire.NTPPacket, reply *wire.NTPPacket, addr netip.AddrPort) (stamp, final bool) {
	if req.Version == 4 {
		reply.Receive |= 1
	}
	if !interleavedForm(req) {
		return false, false
	}
	tx, ok := s.xl.take(req.Origin, addr)
	if !ok {
		return true, false
	}
	reply.Origin, reply.Transmit = req.Receive, tx
	return true, true
}
