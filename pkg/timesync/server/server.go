package server

import (
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/timesync/cristian"
	"github.com/synclab/synclab/pkg/timesync/ntp"
	"github.com/synclab/synclab/pkg/wire"
)

// Counter labels of Status.Dropped: why a packet got no answer.
const (
	dropShort       = "short"        // fewer than 48 bytes
	dropBadLength   = "bad_length"   // not a multiple of 4, or a MAC of impossible length
	dropBadVersion  = "bad_version"  // not NTPv3 or NTPv4
	dropBadSource   = "bad_source"   // port 0, unspecified, multicast or broadcast source
	dropRateLimited = "rate_limited" // over the limit, kissed recently

	dropCristianOff       = "cristian_disabled"  // a time request, but no Cristian ID configured
	dropCristianMalformed = "cristian_malformed" // a frame that is not a well-formed time request
)

// modeDrop labels packets of modes a server does not answer.
var modeDrop = [8]string{
	wire.ModeReserved:         "mode_reserved",
	wire.ModeSymmetricActive:  "mode_symmetric_active",
	wire.ModeSymmetricPassive: "mode_symmetric_passive",
	wire.ModeClient:           "", // served
	wire.ModeServer:           "mode_server",
	wire.ModeBroadcast:        "mode_broadcast",
	wire.ModeControl:          "mode_control",
	wire.ModePrivate:          "mode_private",
}

// unsyncRefID is the reference ID of an unsynchronised server that has no
// better one: "INIT", as ntpd says before its first update.
var unsyncRefID = wire.RefIDFromText("INIT")

// Server is the sans-IO NTP server core (RFC 5905 server mode). It answers
// mode-3 requests fed to StepDatagram with mode-4 replies left in Ready:
//
//	client                         server
//	  T1 --- mode 3, xmt=T1 -----> T2 = Datagram.Time (kernel receive stamp)
//	  T4 <-- mode 4, org=T1 ------ T3 = written by the daemon just before
//	         rec=T2, xmt=T3             the write (Datagram.NTPStamp)
//
// It does no I/O, reads no clock and is not safe for concurrent use: the
// daemon's loop owns it.
type Server struct {
	cfg Config
	sys SystemState // as set by SetSystem (or the unsynchronised default)
	// groupErr is this member's bound relative to its group's time
	// (Config.Group), groupOK whether it has one (SetGroupError).
	groupErr time.Duration
	groupOK  bool
	lim      *limiter // nil when rate limiting is off
	// bugs are our own encodings that failed; bugEvents holds their events
	// until Ready (an answer on the fast path has no Ready of its own).
	bugs      core.Bugs
	bugEvents []core.Event
	now       time.Time // last Tick, for Status
	out       []core.Datagram

	bcastNext, bcastLast time.Time // the next broadcast is due; the last one left
	bcastSent            uint64

	requests, replies, authReplies, kodRate, extIgnored uint64
	cristianRequests, cristianReplies                   uint64
	validator                                           *wire.Validator // Cristian's frames; nil when disabled

	dropped   map[string]uint64             // by reason: packets without an answer
	cryptoNAK map[string]uint64             // by reason: "unknown_key", "bad_mac"
	signers   map[uint32][2]*wire.NTPSigner // by key ID: truncated, whole

	xl *interleaved
}

// New returns a server advertising an unsynchronised clock (or the local
// stratum, see Config) until SetSystem says otherwise.
func New(cfg Config) (*Server, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	s := &Server{
		cfg:       cfg,
		sys:       ntp.Unsynchronized(cfg.Precision),
		dropped:   make(map[string]uint64),
		cryptoNAK: make(map[string]uint64),
		xl:        newInterleaved(),
	}
	if cfg.RateLimit.limited() {
		s.lim = newLimiter(cfg.RateLimit)
	}
	if c := cfg.Cristian; c.ID != 0 {
		s.validator = wire.NewValidator(c.Cluster, c.ID, c.Keys)
	}
	s.signers = make(map[uint32][2]*wire.NTPSigner, len(cfg.Keys))
	for _, k := range cfg.Keys {
		s.signers[k.ID] = [2]*wire.NTPSigner{{Key: k}, {Key: k, Whole: true}}
	}
	return s, nil
}

// Config returns the configuration, defaults filled in.
func (s *Server) Config() Config { return s.cfg }

// ErrSystem is returned by SetSystem for a state that cannot be sent.
var ErrSystem = errors.New("server: invalid system state")

// SetSystem replaces the state the server advertises: the discipline calls
// it after every clock update (ntp.NextSystem) and when it loses its
// sources. An unsynchronised state (leap 3, or stratum 0 or 16 and above)
// is advertised as leap 3, stratum 16, unless Config.LocalStratum is set,
// which then applies. A zero Precision keeps Config.Precision. A state
// whose leap indicator does not fit two bits is refused and the previous
// one kept.
func (s *Server) SetSystem(sys SystemState) error {
	if sys.Leap > wire.LeapNotInSync {
		return fmt.Errorf("%w: leap indicator %d", ErrSystem, sys.Leap)
	}
	if sys.Precision == 0 {
		sys.Precision = s.cfg.Precision
	}
	s.sys = sys
	return nil
}

// SetGroupError gives, with Config.Group, this member's error bound
// relative to its group's time at the last tick (ok false: it has none,
// not synchronised to the group): the root dispersion advertised at
// LocalStratum is Config.LocalError plus it.
func (s *Server) SetGroupError(bound time.Duration, ok bool) {
	s.groupErr, s.groupOK = max(bound, 0), ok
}

// System returns the state advertised in a reply to a request received at
// local time now.
func (s *Server) System(now time.Time) SystemState {
	sys := s.sys
	if !unsynchronised(sys) {
		return sys
	}
	if disp, ok := s.localDispersion(); ok {
		// A local reference is its own reference clock, "set" at every
		// instant: chrony's local mode reports the current time too, and
		// a stale reference time would make clients (beevik/ntp's
		// freshness check) call the server stale.
		return SystemState{
			Leap:           wire.LeapNone,
			Stratum:        s.cfg.LocalStratum,
			Precision:      sys.Precision,
			ReferenceID:    s.cfg.RefID,
			Reference:      now,
			RootDispersion: disp,
		}
	}
	sys.Leap, sys.Stratum = wire.LeapNotInSync, wire.StratumUnsynchronized
	if sys.ReferenceID == 0 {
		sys.ReferenceID = unsyncRefID
	}
	return sys
}

// localDispersion is the root dispersion of the local reference, and
// false when there is none to serve: no LocalStratum, or a group's time
// that nothing bounds from true time (Config.Group without LocalError, or
// this member not synchronised to the group).
func (s *Server) localDispersion() (time.Duration, bool) {
	switch {
	case s.cfg.LocalStratum == 0:
		return 0, false
	case !s.cfg.Group:
		return s.cfg.LocalError, true
	case s.cfg.LocalError == 0 || !s.groupOK:
		return 0, false
	}
	return min(s.cfg.LocalError+s.groupErr, ntp.MaxDispersion), true
}

// LocalWhy says, for status, why a server with a local stratum serves its
// time unsynchronised ("" when it does not).
func (s *Server) LocalWhy() string {
	switch {
	case s.cfg.LocalStratum == 0 || !s.cfg.Group || !unsynchronised(s.sys):
		return ""
	case s.cfg.LocalError == 0:
		return "the group's time (Berkeley mode) is nobody's reference: served unsynchronised unless --local-error says how far it may be from true time"
	case !s.groupOK:
		return "not synchronised to the group yet"
	}
	return ""
}

func unsynchronised(sys SystemState) bool {
	return sys.Leap == wire.LeapNotInSync || sys.Stratum == 0 || sys.Stratum >= wire.StratumUnsynchronized
}

// Step refuses synclab frames: the server speaks NTP only.
func (s *Server) Step(core.Message) error { return core.ErrUnexpectedKind }

// Tick expires idle rate-limit entries and sends the broadcast that is
// due, if any (Config.Broadcast).
func (s *Server) Tick(now time.Time) {
	s.now = now
	if s.lim != nil {
		s.lim.expire(now)
	}
	s.broadcast(now)
}

var _ core.Scheduler = (*Server)(nil)

// Deadline is when the server next needs Tick (core.Scheduler): when the
// rate limiter's least recently heard client becomes idle and can be
// forgotten, and the next broadcast; zero when nothing waits (no
// limiter, or an empty table, and no broadcasts). A server that only
// answers needs no tick at all: it answers when asked.
func (s *Server) Deadline() time.Time {
	var bcast time.Time
	if s.cfg.Broadcast.enabled() {
		bcast = s.bcastNext
		if bcast.IsZero() {
			bcast = s.now.Add(1) // the first broadcast, at once
		}
	}
	if s.lim == nil {
		return bcast
	}
	at := s.lim.nextExpiry()
	if !at.IsZero() && !at.After(s.now) {
		// More idle entries than one Tick expires (expirePerTick): the
		// rest at the next, as soon as possible.
		at = s.now.Add(1)
	}
	return core.Earliest(at, bcast)
}

// Ready drains the replies.
func (s *Server) Ready() core.Ready {
	rd := core.Ready{Datagrams: s.out, Events: s.bugEvents}
	s.out, s.bugEvents = nil, nil
	return rd
}

func (s *Server) drop(reason string, err error) error {
	s.dropped[reason]++
	return &DropError{Reason: reason, Err: err}
}

// StepDatagram handles one NTP packet. A mode-3 request of version 3 or 4
// is answered (Ready.Datagrams) and nil returned; anything else is counted
// under a reason and returned as a *DropError. The reply is never longer
// than the request:
//
//   - a request without a MAC gets a 48-byte reply whose transmit
//     timestamp the daemon writes just before the write (NTPStamp);
//   - a request with a valid MAC gets a reply signed with the same key
//     and a digest as long as the request's (so the same size): truncated
//     to 20 bytes in NTPv4 as chrony and ntpd send it, or whole as ntpsec's
//     ntpdig sends and requires it (wire.SplitNTPMAC has the rule). The
//     daemon writes its transmit timestamp at the write and then signs it
//     (NTPSign), so that a signed reply says when it left like a plain one
//     (with T3 = T2, the time spent between the receive stamp and the
//     write, up to milliseconds on a busy host, would bias the client's
//     offset by half of it);
//   - a request whose MAC uses an unknown key or does not verify gets a
//     crypto-NAK (RFC 5905 section 7.4: the reply header and a bare zero
//     key ID, 52 bytes, shorter than any MAC'd request). It tells the
//     client why it gets no authenticated time instead of looking like
//     loss; it carries no MAC, so clients treat it as a hint only, and it
//     is rate-limited like every reply;
//   - a request with NTPv4 extension fields (NTS, ...) is answered without
//     them (RFC 7822: unknown fields are ignored); a trailer that is
//     neither extension fields nor a MAC is dropped (bad_length);
//   - a client over its rate limit gets a RATE kiss-o'-death (48 bytes) at
//     most once per RateLimit.KissInterval, otherwise nothing.
//
// d.Time must be the local clock's reading of the kernel receive stamp: it
// is T2. Datagrams with d.Local (the daemon's report of a reply it wrote)
// are accepted and ignored.
func (s *Server) StepDatagram(d core.Datagram) error {
	if d.Local {
		return nil
	}
	ans, err := s.answer(d, nil)
	if ans.Data != nil {
		s.out = append(s.out, ans)
	}
	return err
}

var _ core.Answerer = (*Server)(nil)

// Answer is StepDatagram without Ready (core.Answerer): the answer to d,
// if any, appended to buf[:0]. Every datagram but a report of our own
// writes (Local, which needs nothing) is the server's to answer alone.
func (s *Server) Answer(d core.Datagram, buf []byte) (core.Datagram, bool, error) {
	if d.Local {
		return core.Datagram{}, false, nil
	}
	ans, err := s.answer(d, buf)
	return ans, true, err
}

// answer handles a request, appending the answer's bytes to buf[:0] (a
// new slice when buf is nil).
func (s *Server) answer(d core.Datagram, buf []byte) (core.Datagram, error) {
	if d.Time.After(s.now) {
		// The server is ticked only when its limiter needs it: the
		// latest request's time keeps its status's clock current.
		s.now = d.Time
	}
	if wire.IsFrame(d.Data) {
		return s.cristian(d)
	}
	b := d.Data
	if len(b) < wire.NTPHeaderLen {
		return core.Datagram{}, s.drop(dropShort, fmt.Errorf("%w: %d bytes", ErrMalformed, len(b)))
	}
	var req wire.NTPPacket
	_ = req.UnmarshalBinary(b) // cannot fail: the length is checked
	if req.Mode != wire.ModeClient {
		return core.Datagram{}, s.drop(modeDrop[req.Mode&7], fmt.Errorf("%w: mode %d", ErrMode, req.Mode))
	}
	if req.Version != 3 && req.Version != 4 {
		return core.Datagram{}, s.drop(dropBadVersion, fmt.Errorf("%w: %d", ErrVersion, req.Version))
	}
	if !answerable(d.Addr) {
		return core.Datagram{}, s.drop(dropBadSource, fmt.Errorf("%w: %v", ErrBadSource, d.Addr))
	}
	pkt, keyID, digest, err := wire.SplitNTPMAC(b)
	var extensions bool
	if err != nil {
		var de *wire.DecodeError
		if !errors.As(err, &de) || de.Kind != wire.DecodeUnsupported {
			return core.Datagram{}, s.drop(dropBadLength, fmt.Errorf("%w: %v", ErrMalformed, err))
		}
		extensions, digest = true, nil
	}
	s.requests++

	if s.lim != nil {
		switch s.lim.check(d.Addr.Addr().Unmap(), d.Time) {
		case kiss:
			s.kodRate++
			p := ntp.KissReply(&req, d.Time, "RATE")
			return s.reply(d.Addr, &p, buf, nil, nil), nil
		case drop:
			return core.Datagram{}, s.drop(dropRateLimited, ErrRateLimited)
		}
	}
	if extensions {
		s.extIgnored++
	}

	reply, err := ntp.ServerReply(&req, d.Time, s.System(d.Time))
	if err != nil {
		// Mode and version were checked above; ServerReply agrees.
		return core.Datagram{}, s.drop(dropBadVersion, err)
	}
	if digest == nil || (keyID == 0 && len(digest) == 0) {
		// No MAC (or a client sending a crypto-NAK, which asks for
		// nothing): a plain reply, stamped at the write, or in
		// interleaved mode with the stamp of our previous answer.
		s.replies++
		stamp, final := s.interleave(&req, &reply, d.Addr)
		ans := s.reply(d.Addr, &reply, buf, nil, nil)
		if ans.Data != nil {
			ans.TxStamp, ans.NTPStamp = stamp, !final
		}
		return ans, nil
	}
	if err := wire.VerifyNTPMAC(pkt, keyID, digest, s.cfg.Keys); err != nil {
		if errors.Is(err, wire.ErrNTPUnknownKey) && wire.NTPExtensionFields(b) {
			// A trailer as long as a whole digest whose "key ID" is
			// none of ours: extension fields after all.
			s.extIgnored++
			s.replies++
			return s.reply(d.Addr, &reply, buf, nil, nil), nil
		}
		reason := "bad_mac"
		if errors.Is(err, wire.ErrNTPUnknownKey) {
			reason = "unknown_key"
		}
		s.cryptoNAK[reason]++
		return s.reply(d.Addr, &reply, buf, cryptoNAK, nil), nil
	}
	s.replies++
	s.authReplies++
	return s.reply(d.Addr, &reply, buf, nil, s.signer(keyID, len(digest) > truncatedDigest)), nil
}

// cristian answers a Cristian time request (package cristian): a synclab
// frame checked for cluster and MAC, rate-limited like NTP requests (a
// client over its limit gets nothing: Cristian has no kiss-o'-death), and
// answered with the advertised system state in a reply whose transmit
// timestamp, the server's time t, the daemon writes just before the write.
// An unsynchronised server answers too, with leap 3: the client learns why
// it gets no time instead of seeing loss. The reply is exactly as long as
// the request (payloads of equal length, the same MAC trailer).
func (s *Server) cristian(d core.Datagram) (core.Datagram, error) {
	if s.validator == nil {
		return core.Datagram{}, s.drop(dropCristianOff, fmt.Errorf("%w: Cristian is not served here", ErrMalformed))
	}
	var f wire.Frame
	if err := f.UnmarshalBinary(d.Data); err != nil {
		return core.Datagram{}, s.drop(dropCristianMalformed, fmt.Errorf("%w: %v", ErrMalformed, err))
	}
	if err := s.validator.Authenticate(&f, d.Data); err != nil {
		return core.Datagram{}, s.drop("cristian_"+wire.Reason(err), err)
	}
	if err := cristian.ParseRequest(&f); err != nil {
		return core.Datagram{}, s.drop(dropCristianMalformed, fmt.Errorf("%w: %v", ErrMalformed, err))
	}
	if !answerable(d.Addr) {
		return core.Datagram{}, s.drop(dropBadSource, fmt.Errorf("%w: %v", ErrBadSource, d.Addr))
	}
	s.cristianRequests++
	if s.lim != nil && s.lim.check(d.Addr.Addr().Unmap(), d.Time) != allow {
		return core.Datagram{}, s.drop(dropRateLimited, ErrRateLimited)
	}
	b, err := cristian.ReplyFrame(&f, s.cfg.Cristian.ID, s.System(d.Time))
	if err != nil {
		return core.Datagram{}, s.drop(dropCristianMalformed, err)
	}
	s.cristianReplies++
	return core.Datagram{Addr: d.Addr, Data: b, Frame: true}, nil
}

// cryptoNAK is the trailer of a crypto-NAK: a bare zero key ID.
var cryptoNAK = []byte{0, 0, 0, 0}

// truncatedDigest is the longest digest an NTPv4 MAC carries unless the
// request's was whole (wire.SplitNTPMAC).
const truncatedDigest = 20

// reply encodes p into buf[:0] (a new slice when buf is nil), followed by
// trailer (a crypto-NAK's zero key ID), for addr: its transmit timestamp
// written at the write, and then, with sign, its MAC.
func (s *Server) reply(addr netip.AddrPort, p *wire.NTPPacket, buf, trailer []byte, sign *wire.NTPSigner) core.Datagram {
	if buf == nil {
		buf = make([]byte, 0, wire.NTPHeaderLen+4+64)
	}
	// Every field is in range by construction: a failure is our bug,
	// reported and counted (Dropped "bug_encode_reply"), and the request
	// goes unanswered.
	// (Not through Bugs.Encode: p as an interface would escape, and an
	// answer allocates nothing.)
	b, err := p.AppendBinary(buf[:0])
	if err != nil {
		s.bugs.Report(&s.bugEvents, "encode_reply", fmt.Errorf("encoding our own reply: %w", err))
		s.dropped["bug_encode_reply"]++
		return core.Datagram{Addr: addr}
	}
	return core.Datagram{Addr: addr, Data: append(b, trailer...), NTPStamp: true, NTPSign: sign}
}

// signer returns the signer of key id, whole digests or not, made once
// per key: answering allocates nothing.
func (s *Server) signer(id uint32, whole bool) *wire.NTPSigner {
	i := 0
	if whole {
		i = 1
	}
	return s.signers[id][i]
}

// answerable reports whether a reply to a can reach a single, real sender.
func answerable(a netip.AddrPort) bool {
	ip := a.Addr().Unmap()
	if !ip.IsValid() || a.Port() == 0 || ip.IsUnspecified() || ip.IsMulticast() {
		return false
	}
	return ip != netip.AddrFrom4([4]byte{255, 255, 255, 255})
}
