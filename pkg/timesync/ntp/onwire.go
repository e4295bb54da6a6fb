package ntp

import (
	"fmt"
	"time"

	"github.com/synclab/synclab/pkg/wire"
)

// System is what this host says about its own clock in the packets it
// sends (RFC 5905 system variables).
type System struct {
	Leap           uint8         // wire.LeapNone ... wire.LeapNotInSync
	Stratum        uint8         // 1 + the system peer's stratum; 16 when unsynchronised
	Precision      int8          // log2 seconds of the local clock's resolution
	RootDelay      time.Duration // to the primary reference
	RootDispersion time.Duration // to the primary reference
	ReferenceID    uint32        // the system peer's IPv4 address or refid (or a kiss code)
	Reference      time.Time     // when the clock was last updated
}

// Unsynchronized is the System of a host that has never synchronised: leap
// 3, stratum 16. Servers answer with it; clients must not use the answer.
func Unsynchronized(precision int8) System {
	return System{Leap: wire.LeapNotInSync, Stratum: wire.StratumUnsynchronized, Precision: precision}
}

// Peer is what the last valid packet of a source said about its clock.
type Peer struct {
	Leap           uint8
	Version        uint8
	Stratum        uint8
	Poll           int8
	Precision      int8
	RootDelay      time.Duration
	RootDispersion time.Duration
	ReferenceID    uint32
	Reference      time.Time
}

// Association is the on-wire protocol of RFC 5905 section 8 for one source,
// in client mode (we send mode 3, it answers mode 4) or symmetric mode (we
// send mode 1 or 2, it sends mode 1 or 2). It keeps the timestamps the
// protocol runs on:
//
//	org  the peer's transmit timestamp of the last packet we received
//	rec  our receive time of that packet
//	xmt  the transmit timestamp of the last packet we sent
//
// A packet is a duplicate if its transmit timestamp equals org (the same
// packet again), and bogus if its origin timestamp does not equal xmt (not a
// reply to our latest packet: late, crossed, replayed or forged). Each of
// our packets gets at most one sample.
//
// Client mode: org and rec are updated only by valid replies (a forged
// packet must not be able to reset them, CVE-2016-9042), and xmt is cleared
// once answered. With SetMaxOutstanding(n), the last n requests are each
// waited for: an answer must echo the transmit timestamp of one of them
// that is still unanswered (each gives at most one sample), so a request
// sent before the last one's answer came (a slow link) is not refused.
//
//	client                      server
//	  T1 --- mode 3, xmt=T1 ---->  T2
//	  T4 <-- mode 4, org=T1 -----  T3   rec=T2, xmt=T3
//
// Symmetric mode: each end sends at its own poll interval, and every packet
// is both a request and an answer: it carries org and rec (the last packet
// heard from the peer, and when) besides its own xmt, so the peer gets a
// sample from it if it answers the peer's latest packet.
//
//	A                             B
//	 t1 ---- xmt=t1 ------------>  t2
//	 t4 <--- org=t1 rec=t2 ------  t3     A's sample: t1 t2 t3 t4
//	 t5 ---- org=t3 rec=t4 ----->  t6     B's sample: t3 t4 t5 t6
//
// org and rec are therefore updated by a packet that fails the bogus test
// too (RFC 5905: "the state variables are updated, then the packet is
// discarded"): two peers starting at once, or whose packets crossed, would
// otherwise each refuse the other's packets forever. To keep a stale or
// forged packet from displacing a good one (as chrony does): a packet that
// answers our latest one (valid) always updates them the first time, and
// later only with a newer transmit timestamp; one that does not (bogus)
// updates them only while nothing valid has come since our last packet,
// and after the first such update only with a newer transmit timestamp.
// Every packet we send resets that. Since we always echo the peer's latest
// packet, an off-path forger cannot get a sample accepted (it would need
// our transmit timestamp); it can make the peer miss samples while it
// keeps forging, as in any unauthenticated NTP association.
//
// An Association does no I/O: Request builds the packet to send, Receive
// checks a decoded packet and returns the Sample. Not safe for concurrent
// use.
type Association struct {
	mode      uint8 // the mode we send
	precision time.Duration

	org, rec, xmt wire.NTPTime
	xmtLocal      time.Time // T1 on the local clock, exact

	// Client mode: our requests still unanswered, oldest first, at most
	// maxOut (SetMaxOutstanding); xmt and xmtLocal are the symmetric
	// mode's.
	out    []pending
	maxOut int
	seq    uint64 // the latest request's pending.seq

	// Symmetric mode, since our last packet: whether one of the peer's
	// packets gave a sample (answered), and whether org and rec were
	// updated (updated).
	answered, updated bool

	peer    Peer
	hasPeer bool
	// ppoll is the poll exponent of the last packet that answered ours,
	// synchronised or not (RFC 5905 packet(): p->ppoll = r->poll).
	ppoll    int8
	hasPPoll bool

	xl *interleave // client mode with EnableInterleaved; nil: basic only
}

// pending is one of our client-mode requests, not yet answered.
type pending struct {
	xmt   wire.NTPTime // its transmit timestamp: a basic answer's origin
	local time.Time    // T1 on the local clock, exact
	// stamped: Sent has recorded the transport's transmit timestamp.
	stamped bool
	seq     uint64 // its place in the order of our requests
	// Interleaved mode: nonce is its receive field, an interleaved
	// answer's origin (zero: the request was basic); srvRx its origin
	// field, the server's receive timestamp of the exchange whose T3 it
	// asks for.
	nonce, srvRx wire.NTPTime
}

// MaxOutstanding bounds SetMaxOutstanding.
const MaxOutstanding = NStage

// MaxServerInterval bounds an interleaved answer's transmit timestamp: at
// most this long after the receive timestamp of the exchange it belongs to
// (chrony's MAX_SERVER_INTERVAL).
const MaxServerInterval = 4 * time.Second

// MaxInterleavedUnanswered is how many requests in a row may go
// unanswered before the next one is basic (chrony's
// MAX_CLIENT_INTERLEAVED_TX): an interleaved sample pairs our last
// answered exchange with the server's stamp of it, and after that many
// lost polls the pair is too old to be worth it.
const MaxInterleavedUnanswered = 4

// interleave is the client's state of chrony's interleaved client/server
// mode (EnableInterleaved).
type interleave struct {
	nonce func() uint64
	// srvRx is the server's receive timestamp of the last valid answer,
	// the next request's origin: it names, to the server, the answer
	// whose transmit stamp we ask for.
	srvRx wire.NTPTime
	// prev is that exchange, valid when hasPrev; used: its basic answer
	// gave a sample already.
	prev    xlExchange
	hasPrev bool
	// unanswered counts requests since the last valid answer.
	unanswered int
	// For status: answers of each kind, and how many basic answers in a
	// row came to interleaved requests.
	interleaved, basic, basicRun uint64
}

// xlExchange is one request and its answer, as an interleaved answer needs
// them: our T1 and T4 and the server's T2.
type xlExchange struct {
	t1, t4 time.Time
	t2     wire.NTPTime
	used   bool
	hdr    Peer // the header of the answer that gave t2
}

// Interleaved is what an association in interleaved mode has seen.
type Interleaved struct {
	// Answers is how many valid answers were interleaved, Basic how many
	// were basic (the first one or two always are: the server has no
	// stamp of ours yet).
	Answers, Basic uint64
	// BasicRun is how many valid basic answers in a row came to
	// interleaved requests: a server that does not speak the mode (timed's
	// own server, ntpd) answers every one in basic mode.
	BasicRun uint64
}

// NewAssociation returns an association sending mode (wire.ModeClient,
// wire.ModeSymmetricActive or wire.ModeSymmetricPassive) with the local
// clock's precision (the floor for delay and part of every sample's
// dispersion).
func NewAssociation(mode uint8, localPrecision time.Duration) (*Association, error) {
	switch mode {
	case wire.ModeClient, wire.ModeSymmetricActive, wire.ModeSymmetricPassive:
	default:
		return nil, fmt.Errorf("%w: an association cannot send mode %d", ErrMode, mode)
	}
	return &Association{mode: mode, precision: max(localPrecision, 1), maxOut: 1}, nil
}

// SetMaxOutstanding makes a client-mode association wait for answers to
// its last n requests (1 to MaxOutstanding; 1, the default, is RFC 5905's
// rule: only the latest request may be answered). A client that sends
// several requests a poll on a link slower than its wait between them
// then takes each answer. Each request still gives at most one sample,
// and an off-path forger must guess one of n clock readings instead of
// one. Forget ends the wait for all of them.
func (a *Association) SetMaxOutstanding(n int) error {
	if a.symmetric() {
		return fmt.Errorf("%w: several outstanding requests are for client associations", ErrMode)
	}
	if n < 1 || n > MaxOutstanding {
		return fmt.Errorf("%w: %d outstanding requests: want 1..%d", ErrMode, n, MaxOutstanding)
	}
	a.maxOut = n
	if len(a.out) > n {
		a.out = append(a.out[:0], a.out[len(a.out)-n:]...)
	}
	return nil
}

// Outstanding returns how many of our requests are still waited for, and
// whether the latest one is.
func (a *Association) Outstanding() (n int, latest bool) {
	n = len(a.out)
	return n, n > 0 && a.out[n-1].seq == a.seq
}

// Forget stops waiting for the requests sent so far: their answers, if
// they come, are bogus (a client starting a new poll).
func (a *Association) Forget() { a.out = a.out[:0] }

// Mode returns the mode the association sends.
func (a *Association) Mode() uint8 { return a.mode }

func (a *Association) symmetric() bool { return a.mode != wire.ModeClient }

// EnableInterleaved turns on chrony's interleaved client/server mode
// ("xleave") for a client-mode association. A server (chronyd) that gets a
// request whose origin is the receive timestamp of its previous answer to
// us answers with that previous answer's transmit stamp taken by the
// kernel as it left, instead of a clock reading taken before the send:
// the server's send path no longer adds to the offset. So each request
// (but the first, and one after MaxInterleavedUnanswered unanswered ones)
// carries:
//
//	origin   the server's receive timestamp of our last valid answer
//	receive  a random nonce from nonce (never zero, never the transmit)
//	transmit our T1, as in basic mode
//
// A server that does not speak the mode answers in basic mode (origin =
// our transmit), and that answer is used as in basic mode. An interleaved
// answer echoes the nonce as its origin; its receive timestamp is T2 of
// this exchange and its transmit timestamp T3 of the previous one, whose
// sample it completes: T1, T2 and T4 of that exchange with the new T3.
// The sample is one poll older than a basic one. An exchange gives at most
// one sample: the interleaved answer after a basic one that was sampled
// gives none (ErrInterleavedSampled).
//
// Attacker's view: the nonce is 64 random bits that an off-path forger
// must guess (a basic answer only needs T1, a clock reading); the request
// reveals no clock reading of ours (the origin is the server's own
// timestamp). A duplicate or replayed answer fails as in basic mode (one
// answer per request, the transmit timestamp must be new).
func (a *Association) EnableInterleaved(nonce func() uint64) error {
	if a.symmetric() {
		return fmt.Errorf("%w: interleaved mode is for client associations", ErrMode)
	}
	if nonce == nil {
		return fmt.Errorf("%w: interleaved mode needs a nonce source", ErrMode)
	}
	a.xl = &interleave{nonce: nonce}
	return nil
}

// Interleaved returns what the association saw of interleaved mode, and
// false if it is not enabled.
func (a *Association) Interleaved() (Interleaved, bool) {
	if a.xl == nil {
		return Interleaved{}, false
	}
	return Interleaved{Answers: a.xl.interleaved, Basic: a.xl.basic, BasicRun: a.xl.basicRun}, true
}

// Peer returns the header fields of the last valid packet from the source,
// and whether there has been one.
func (a *Association) Peer() (Peer, bool) { return a.peer, a.hasPeer }

// PeerPoll returns the poll exponent the source advertised in the last
// packet that answered ours, even one refused afterwards as unsynchronised
// (a symmetric peer polls at the shorter of both intervals), and whether
// there has been one. It is a byte off the wire: clamp it before use.
func (a *Association) PeerPoll() (int8, bool) { return a.ppoll, a.hasPPoll }

// Request returns the packet to send at local time now, with poll our
// current poll exponent and sys our own state (sent in full in symmetric
// mode, with org and rec; a client request carries only leap, version,
// mode, poll and precision, with zero origin and receive timestamps so as
// not to leak state).
//
// The transmit timestamp is now. If the transport rewrites it just before
// the write (core.Datagram.NTPStamp), the daemon must report the value
// written with Sent, or every reply will be bogus.
func (a *Association) Request(now time.Time, poll int8, sys System) wire.NTPPacket {
	p := wire.NTPPacket{
		Version:   wire.NTPVersion,
		Mode:      a.mode,
		Poll:      poll,
		Precision: sys.Precision,
		Transmit:  wire.NTPTimeFromTime(now),
	}
	if a.symmetric() {
		p.Leap = sys.Leap
		p.Stratum = sys.Stratum
		p.RootDelay = wire.NTPShortFromDuration(sys.RootDelay)
		p.RootDispersion = wire.NTPShortFromDuration(sys.RootDispersion)
		p.ReferenceID = sys.ReferenceID
		p.Reference = wire.NTPTimeFromTime(sys.Reference)
		p.Origin = a.org
		p.Receive = a.rec
	} else {
		// The leap indicator is the only state a client request needs
		// to carry (RFC 5905 peer_xmit sends it; leap 3 tells a server
		// we are unsynchronised). Everything else stays zero but in
		// interleaved mode, where neither reveals our clock.
		p.Leap = sys.Leap
		if xl := a.xl; xl != nil {
			if xl.hasPrev && xl.unanswered < MaxInterleavedUnanswered {
				n := wire.NTPTime(xl.nonce())
				for n.IsZero() || n == p.Transmit {
					n = wire.NTPTime(xl.nonce())
				}
				p.Origin, p.Receive = xl.srvRx, n
			}
			xl.unanswered++
		}
		if len(a.out) == a.maxOut {
			// The oldest is no longer waited for.
			a.out = append(a.out[:0], a.out[1:]...)
		}
		a.seq++
		a.out = append(a.out, pending{xmt: p.Transmit, local: now, nonce: p.Receive, srvRx: p.Origin, seq: a.seq})
		return p
	}
	a.Sent(p.Transmit, now)
	return p
}

// Sent records that a packet with transmit timestamp xmt left at local time
// at. Request calls it; call it again when the transport stamped a more
// precise transmit time into the packet.
//
// In client mode it restamps the latest request Request built, once; a
// report of a transmit timestamp still waited for restamps that request
// (its answer must give one sample, timed from the latest report); any
// other report (or one with no request built) is a packet of its own.
func (a *Association) Sent(xmt wire.NTPTime, at time.Time) {
	if !a.symmetric() {
		if n := len(a.out); n > 0 && !a.out[n-1].stamped {
			a.out[n-1].xmt, a.out[n-1].local, a.out[n-1].stamped = xmt, at, true
			return
		}
		for i := range a.out {
			if a.out[i].xmt == xmt {
				a.out[i].local = at
				return
			}
		}
		if len(a.out) == a.maxOut {
			a.out = append(a.out[:0], a.out[1:]...)
		}
		a.seq++
		a.out = append(a.out, pending{xmt: xmt, local: at, stamped: true, seq: a.seq})
		return
	}
	a.xmt = xmt
	a.xmtLocal = at
	a.answered, a.updated = false, false
}

// match finds our unanswered client-mode request that origin answers: its
// index in out, and whether the answer is interleaved (origin is the
// request's nonce); -1 if none.
func (a *Association) match(origin wire.NTPTime) (i int, interleaved bool) {
	if origin.IsZero() {
		return -1, false
	}
	for i, r := range a.out {
		if r.xmt == origin {
			return i, false
		}
	}
	if a.xl != nil {
		for i, r := range a.out {
			if r.nonce == origin {
				return i, true
			}
		}
	}
	return -1, false
}

// Receive runs the on-wire checks on a decoded packet that arrived at local
// time dst and returns its sample. The checks, in order (RFC 5905 A.5.1.1):
//
//   - mode: a reply to our mode (ErrMode), version 1..4 (ErrVersion);
//   - a zero transmit timestamp (ErrZeroTransmit);
//   - duplicate: the transmit timestamp equals org (ErrDuplicate);
//   - bogus: a zero origin (ErrZeroOrigin: the peer has not heard from us
//     yet) or one that is not our last transmit, or a second packet
//     answering it (ErrBogus);
//   - a zero receive timestamp (ErrZeroTimestamp);
//   - kiss-o'-death, stratum 0 with a kiss code (four ASCII letters) in
//     the reference ID (*KissError, checked after the origin so an
//     off-path attacker cannot forge one); stratum 0 without one is an
//     unsynchronised server (leap 3: ErrUnsynchronized) or an invalid
//     stratum (ErrStratum), not a kiss;
//   - leap 3 (ErrUnsynchronized), stratum 16 or more (ErrStratum);
//   - the source's own root distance above MaxDistance (ErrDistance).
//
// On error the sample is not valid; the state is updated exactly as the
// protocol requires (see Association).
func (a *Association) Receive(p *wire.NTPPacket, dst time.Time) (Sample, error) {
	if p.Version < 1 || p.Version > wire.NTPVersion {
		return Sample{}, fmt.Errorf("%w: version %d", ErrVersion, p.Version)
	}
	if a.symmetric() {
		if p.Mode != wire.ModeSymmetricActive && p.Mode != wire.ModeSymmetricPassive {
			return Sample{}, fmt.Errorf("%w: mode %d to a symmetric association", ErrMode, p.Mode)
		}
		if a.mode == wire.ModeSymmetricPassive && p.Mode == wire.ModeSymmetricPassive {
			// Two passive ends would each wait for the other forever.
			return Sample{}, fmt.Errorf("%w: passive to passive", ErrMode)
		}
	} else if p.Mode != wire.ModeServer {
		return Sample{}, fmt.Errorf("%w: mode %d to a client association", ErrMode, p.Mode)
	}
	if p.Transmit.IsZero() {
		return Sample{}, ErrZeroTransmit
	}
	if p.Transmit == a.org {
		return Sample{}, ErrDuplicate
	}
	var echoes, interleaved bool
	var req pending // client mode: the request answered
	if a.symmetric() {
		echoes = !p.Origin.IsZero() && !a.xmt.IsZero() && p.Origin == a.xmt
		a.keep(p, dst, echoes)
	} else {
		// A basic answer echoes one of our unanswered requests' transmit
		// timestamp, an interleaved one its nonce.
		var i int
		if i, interleaved = a.match(p.Origin); i >= 0 {
			echoes, req = true, a.out[i]
			a.out = append(a.out[:i], a.out[i+1:]...) // one reply per request
		}
	}
	switch {
	case p.Origin.IsZero():
		return Sample{}, ErrZeroOrigin
	case !echoes:
		return Sample{}, ErrBogus
	case a.answered:
		return Sample{}, fmt.Errorf("%w: our last packet was answered already", ErrBogus)
	}
	a.ppoll, a.hasPPoll = p.Poll, true
	t1 := a.xmtLocal
	if a.symmetric() {
		a.answered = true
	} else {
		a.org = p.Transmit
		a.rec = wire.NTPTimeFromTime(dst)
		t1 = req.local
	}
	var prev xlExchange
	hadPrev := false
	if a.xl != nil {
		// Until this answer passes every check below, no exchange is
		// kept to complete: the next request is basic.
		prev, hadPrev = a.xl.prev, a.xl.hasPrev
		a.xl.hasPrev = false
	}
	if p.Receive.IsZero() {
		return Sample{}, ErrZeroTimestamp
	}
	if p.Stratum == 0 {
		if code := p.KissCode(); code != "" {
			return Sample{}, &KissError{Code: code}
		}
		if p.Leap != wire.LeapNotInSync {
			return Sample{}, fmt.Errorf("%w: stratum 0 without a kiss code", ErrStratum)
		}
	}
	if p.Leap == wire.LeapNotInSync {
		return Sample{}, ErrUnsynchronized
	}
	if p.Stratum >= MaxStratum {
		return Sample{}, fmt.Errorf("%w: %d", ErrStratum, p.Stratum)
	}
	rootDelay, rootDisp := p.RootDelay.Duration(), p.RootDispersion.Duration()
	if d := rootDelay/2 + rootDisp; d > MaxDistance {
		return Sample{}, fmt.Errorf("%w: the source's root distance is %v", ErrDistance, d)
	}

	t2 := p.Receive.TimeNear(dst)
	t3 := p.Transmit.TimeNear(dst)
	s := MakeSample(t1, t2, t3, dst, a.precision, Precision(p.Precision))
	a.setPeer(p, rootDelay, rootDisp, dst)
	s.Header = a.peer
	if a.xl == nil {
		return s, nil
	}
	return a.interleavedSample(p, t1, dst, s, interleaved, req, prev, hadPrev)
}

// interleavedSample keeps the exchange of a valid answer for the next
// interleaved one, and returns the sample of the answer: s for a basic
// answer, the previous exchange completed with this answer's transmit
// timestamp for an interleaved one. req is the request answered.
func (a *Association) interleavedSample(p *wire.NTPPacket, t1, dst time.Time, s Sample, interleaved bool, req pending, prev xlExchange, hadPrev bool) (Sample, error) {
	xl := a.xl
	xl.prev = xlExchange{t1: t1, t4: dst, t2: p.Receive, used: !interleaved, hdr: a.peer}
	xl.hasPrev, xl.srvRx, xl.unanswered = true, p.Receive, 0
	if !interleaved {
		xl.basic++
		if !req.nonce.IsZero() {
			xl.basicRun++ // a basic answer to an interleaved request
		}
		return s, nil
	}
	xl.interleaved++
	xl.basicRun = 0
	if !hadPrev || prev.used {
		return Sample{}, ErrInterleavedSampled
	}
	if prev.t2 != req.srvRx {
		// The request left before the last answer came (several in
		// flight): its T3 is of an older exchange than the one kept.
		return Sample{}, fmt.Errorf("%w: it completes an exchange older than the last answered", ErrInterleavedSampled)
	}
	t2 := prev.t2.TimeNear(dst)
	t3 := p.Transmit.TimeNear(dst)
	if t3.Before(t2) || t3.Sub(t2) > MaxServerInterval {
		return Sample{}, fmt.Errorf("%w: T3 %v after T2", ErrInterleavedStamp, t3.Sub(t2))
	}
	smp := MakeSample(prev.t1, t2, t3, prev.t4, a.precision, Precision(p.Precision))
	// The exchange spans two answers: the server's clock at T2 was as
	// sure as the earlier one said, at T3 as this one says.
	smp.Header = a.peer
	smp.Header.RootDelay = max(a.peer.RootDelay, prev.hdr.RootDelay)
	smp.Header.RootDispersion = max(a.peer.RootDispersion, prev.hdr.RootDispersion)
	return smp, nil
}

func (a *Association) setPeer(p *wire.NTPPacket, rootDelay, rootDisp time.Duration, dst time.Time) {
	a.peer = Peer{
		Leap:           p.Leap,
		Version:        p.Version,
		Stratum:        p.Stratum,
		Poll:           p.Poll,
		Precision:      p.Precision,
		RootDelay:      rootDelay,
		RootDispersion: rootDisp,
		ReferenceID:    p.ReferenceID,
		Reference:      p.Reference.TimeNear(dst),
	}
	a.hasPeer = true
}

// keep updates org and rec from a symmetric peer's packet that is not a
// duplicate, by the rules in the Association comment: the packet that
// answers our latest one always wins the first time, a packet that does
// not only while none did, and after the first update since our last
// packet only a newer transmit timestamp replaces them.
func (a *Association) keep(p *wire.NTPPacket, dst time.Time, echoes bool) {
	newer := int64(uint64(p.Transmit)-uint64(a.org)) > 0 // within ±68 years, across eras
	switch {
	case echoes && !a.answered, echoes && newer:
		// An answer to our latest packet: the first one since it
		// replaces whatever a bogus packet left.
	case !a.answered && (!a.updated || newer):
	default:
		return
	}
	a.org = p.Transmit
	a.rec = wire.NTPTimeFromTime(dst)
	a.updated = true
}

// ServerReply builds a server's answer (mode 4) to a client request that
// arrived at local time recv, per RFC 5905: origin = the request's transmit
// timestamp, receive = recv, and the transmit timestamp set to recv as a
// placeholder that the transport overwrites just before the write
// (core.Datagram.NTPStamp). The version and poll are echoed so that NTPv3
// clients get v3 answers. Only mode-3 requests of versions 1..4 get an
// answer (ErrMode, ErrVersion otherwise).
func ServerReply(req *wire.NTPPacket, recv time.Time, sys System) (wire.NTPPacket, error) {
	if req.Mode != wire.ModeClient {
		return wire.NTPPacket{}, fmt.Errorf("%w: a server answers mode 3, not %d", ErrMode, req.Mode)
	}
	if req.Version < 1 || req.Version > wire.NTPVersion {
		return wire.NTPPacket{}, fmt.Errorf("%w: version %d", ErrVersion, req.Version)
	}
	rt := wire.NTPTimeFromTime(recv)
	return wire.NTPPacket{
		Leap:           sys.Leap,
		Version:        req.Version,
		Mode:           wire.ModeServer,
		Stratum:        sys.Stratum,
		Poll:           req.Poll,
		Precision:      sys.Precision,
		RootDelay:      wire.NTPShortFromDuration(sys.RootDelay),
		RootDispersion: wire.NTPShortFromDuration(sys.RootDispersion),
		ReferenceID:    sys.ReferenceID,
		Reference:      wire.NTPTimeFromTime(sys.Reference),
		Origin:         req.Transmit,
		Receive:        rt,
		Transmit:       rt,
	}, nil
}

// KissReply builds a kiss-o'-death answer (stratum 0, leap 3, the code in
// the reference ID, e.g. "RATE" for a client that polls too fast) to a
// client request. Origin echoes the request so the client can authenticate
// it as a reply to its own request.
func KissReply(req *wire.NTPPacket, recv time.Time, code string) wire.NTPPacket {
	var id uint32
	for i := 0; i < 4; i++ {
		id <<= 8
		if i < len(code) {
			id |= uint32(code[i])
		}
	}
	rt := wire.NTPTimeFromTime(recv)
	v := req.Version
	if v < 1 || v > wire.NTPVersion {
		v = wire.NTPVersion
	}
	return wire.NTPPacket{
		Leap:        wire.LeapNotInSync,
		Version:     v,
		Mode:        wire.ModeServer,
		Stratum:     0,
		Poll:        req.Poll,
		ReferenceID: id,
		Origin:      req.Transmit,
		Receive:     rt,
		Transmit:    rt,
	}
}
