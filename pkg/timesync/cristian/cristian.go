package cristian

import (
	"errors"
	"fmt"
	"time"

	"github.com/synclab/synclab/pkg/timesync/ntp"
	"github.com/synclab/synclab/pkg/wire"
)

// Errors of a reply the client refuses.
var (
	// ErrUnsolicited: the reply echoes no outstanding request (a
	// duplicate, a late reply to an abandoned burst, or a forgery).
	ErrUnsolicited = errors.New("cristian: reply to no outstanding request")
	// ErrUnsynchronized: the server says its own clock is not
	// synchronised (leap 3 or stratum 0 or 16).
	ErrUnsynchronized = errors.New("cristian: server not synchronised")
	// ErrNotRequest and ErrNotReply: the frame is of another kind.
	ErrNotRequest = errors.New("cristian: not a time request")
	ErrNotReply   = errors.New("cristian: not a time reply")
)

// RequestFrame returns an encoded, unsealed TimeRequest from sender in
// cluster, for a core.Datagram with Frame set. It fails only for a sender
// of 0 (member IDs start at 1): a caller's bug, which a core counts
// (core.Bugs) rather than dies of.
func RequestFrame(cluster, sender uint32) ([]byte, error) {
	p, _ := wire.TimeRequest{}.AppendBinary(make([]byte, 0, wire.TimeRequestLen))
	f := wire.Frame{Header: wire.Header{Kind: wire.KindTimeRequest, Cluster: cluster, Sender: sender}, Payload: p}
	b, err := f.AppendBinary(make([]byte, 0, wire.HeaderLen+len(p)+wire.AuthTrailerLen))
	if err != nil {
		return nil, fmt.Errorf("cristian: encoding a request: %w", err)
	}
	return b, nil
}

// ParseRequest checks that f (decoded, authenticated) is a well-formed time
// request.
func ParseRequest(f *wire.Frame) error {
	if f.Kind != wire.KindTimeRequest {
		return fmt.Errorf("%w: %v", ErrNotRequest, f.Kind)
	}
	var r wire.TimeRequest
	return r.UnmarshalBinary(f.Payload)
}

// ReplyFrame returns an encoded, unsealed TimeReply to req from sender,
// carrying sys: the server's leap, stratum, precision, root delay and
// dispersion and reference. Its transmit timestamp is left for the driver,
// which writes the server's time into it just before the write.
func ReplyFrame(req *wire.Frame, sender uint32, sys ntp.System) ([]byte, error) {
	p, err := wire.TimeReply{
		Leap:           sys.Leap,
		Stratum:        sys.Stratum,
		Precision:      sys.Precision,
		RootDelay:      wire.NTPShortFromDuration(sys.RootDelay),
		RootDispersion: wire.NTPShortFromDuration(sys.RootDispersion),
		ReferenceID:    sys.ReferenceID,
		Origin:         req.Xmt,
	}.AppendBinary(make([]byte, 0, wire.TimeReplyLen))
	if err != nil {
		return nil, err
	}
	f := wire.Frame{Header: wire.Header{Kind: wire.KindTimeReply, Cluster: req.Cluster, Sender: sender, Receiver: req.Sender}, Payload: p}
	return f.AppendBinary(make([]byte, 0, wire.HeaderLen+len(p)+wire.AuthTrailerLen))
}

// Round is what a burst yields: the minimum-RTT round as an NTP sample, the
// server's variables from its reply, and the Cristian estimate itself.
type Round struct {
	Sample   ntp.Sample
	Peer     ntp.Peer
	Estimate ntp.CristianEstimate
}

// Burst is the client side for one server: the requests of the current
// burst still outstanding, and the best reply so far.
type Burst struct {
	localPrecision time.Duration
	est            *ntp.Cristian
	outstanding    map[wire.NTPTime]time.Time // request xmt -> local send time
	best           ntp.Peer                   // server variables of the best round
	bestRound      ntp.CristianRound
}

// NewBurst returns a burst for a path whose one-way delay is at least
// minOneWay (0 if unknown), on a clock of the given precision.
func NewBurst(minOneWay, localPrecision time.Duration) *Burst {
	return &Burst{
		localPrecision: localPrecision,
		est:            ntp.NewCristian(minOneWay),
		outstanding:    map[wire.NTPTime]time.Time{},
	}
}

// maxOutstanding bounds the requests remembered: a burst is a handful, and
// requests whose replies never came are forgotten at Reset anyway.
const maxOutstanding = 64

// Sent records a request of this burst as it left: its transmit timestamp
// as written and the local time it was written at (the driver's report).
func (b *Burst) Sent(xmt wire.NTPTime, at time.Time) {
	if len(b.outstanding) < maxOutstanding {
		b.outstanding[xmt] = at
	}
}

// Outstanding is the number of requests of the burst not answered yet.
func (b *Burst) Outstanding() int { return len(b.outstanding) }

// Rounds is the number of good replies in the burst.
func (b *Burst) Rounds() int { return b.est.Rounds() }

// Receive takes a reply (decoded and authenticated) that arrived at local
// time dst. Each request is answered once: the reply must echo an
// outstanding request's transmit timestamp, which it then consumes.
func (b *Burst) Receive(f *wire.Frame, dst time.Time) error {
	if f.Kind != wire.KindTimeReply {
		return fmt.Errorf("%w: %v", ErrNotReply, f.Kind)
	}
	var r wire.TimeReply
	if err := r.UnmarshalBinary(f.Payload); err != nil {
		return err
	}
	sent, ok := b.outstanding[r.Origin]
	if !ok || r.Origin == 0 {
		return ErrUnsolicited
	}
	delete(b.outstanding, r.Origin)
	if r.Leap == wire.LeapNotInSync || r.Stratum == 0 || r.Stratum >= wire.StratumUnsynchronized {
		return fmt.Errorf("%w: leap %d, stratum %d", ErrUnsynchronized, r.Leap, r.Stratum)
	}
	if f.Xmt == 0 {
		return fmt.Errorf("%w: reply without the server's time", ntp.ErrCristianRound)
	}
	round := ntp.CristianRound{Sent: sent, Server: f.Xmt.TimeNear(dst), Received: dst}
	if err := b.est.Add(round); err != nil {
		return err
	}
	if b.est.Rounds() == 1 || round.RTT() < b.bestRound.RTT() {
		b.bestRound = round
		b.best = ntp.Peer{
			Leap: r.Leap, Version: wire.NTPVersion, Stratum: r.Stratum, Precision: r.Precision,
			RootDelay: r.RootDelay.Duration(), RootDispersion: r.RootDispersion.Duration(),
			ReferenceID: r.ReferenceID,
		}
	}
	return nil
}

// Result returns the burst's best round, false if no reply was good.
func (b *Burst) Result() (Round, bool) {
	e, ok := b.est.Estimate()
	if !ok {
		return Round{}, false
	}
	// t2 = t3 = t: the sample's offset is the estimate, its delay the RTT.
	r := b.bestRound
	smp := ntp.MakeSample(r.Sent, r.Server, r.Server, r.Received, b.localPrecision, ntp.Precision(b.best.Precision))
	smp.Header = b.best // the filter may pick this burst's sample after later bursts'
	return Round{Sample: smp, Peer: b.best, Estimate: e}, true
}

// Reset ends the burst: outstanding requests are forgotten (their late
// replies will be refused) and the next burst starts empty.
func (b *Burst) Reset() {
	b.est.Reset()
	clear(b.outstanding)
	b.best, b.bestRound = ntp.Peer{}, ntp.CristianRound{}
}
