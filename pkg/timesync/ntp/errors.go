package ntp

import "errors"

// Errors of Select. They are wrapped with the counts that explain them.
var (
	// ErrNoCandidates: no source is reachable, fit and loop-free.
	ErrNoCandidates = errors.New("ntp: no usable sources")
	// ErrNoMajority: no majority of the fit sources have correctness
	// intervals with a point in common; nothing can be trusted.
	ErrNoMajority = errors.New("ntp: sources disagree: no majority of truechimers")
	// ErrTooFewSurvivors: fewer truechimers than SelectConfig.MinSane.
	ErrTooFewSurvivors = errors.New("ntp: too few truechimers")
)

// Errors of Association.Receive: why a packet was not used for a sample.
// Count them by errors.Is; they are stable.
var (
	// ErrMode: the packet's mode does not answer the association's.
	ErrMode = errors.New("ntp: unexpected mode")
	// ErrVersion: a version other than 1..4.
	ErrVersion = errors.New("ntp: unsupported version")
	// ErrZeroTransmit: the transmit timestamp is zero (invalid).
	ErrZeroTransmit = errors.New("ntp: zero transmit timestamp")
	// ErrDuplicate: the same packet again (its transmit timestamp equals
	// the last one received).
	ErrDuplicate = errors.New("ntp: duplicate packet")
	// ErrZeroOrigin: the origin timestamp is zero: the peer has not
	// received anything from us yet (normal for a symmetric peer's first
	// packet).
	ErrZeroOrigin = errors.New("ntp: zero origin timestamp")
	// ErrBogus: the origin timestamp is not our last transmit timestamp:
	// not a reply to our latest packet (late, replayed or forged).
	ErrBogus = errors.New("ntp: bogus packet: origin does not match our last transmit")
	// ErrZeroTimestamp: the receive timestamp is zero.
	ErrZeroTimestamp = errors.New("ntp: zero receive timestamp")
	// ErrUnsynchronized: the source's leap indicator says its clock is not
	// synchronised.
	ErrUnsynchronized = errors.New("ntp: source is unsynchronised (leap 3)")
	// ErrStratum: stratum 16 or above.
	ErrStratum = errors.New("ntp: source stratum is unsynchronised")
	// ErrDistance: the source's root distance exceeds MaxDistance.
	ErrDistance = errors.New("ntp: source is too far from its reference")
	// ErrInterleavedStamp: an interleaved answer's transmit timestamp
	// (the server's transmit stamp of its previous answer) is before that
	// answer's receive timestamp or more than MaxServerInterval after it:
	// not the departure of that answer.
	ErrInterleavedStamp = errors.New("ntp: interleaved answer's transmit timestamp does not fit the previous exchange")
	// ErrInterleavedSampled: a valid interleaved answer about an exchange
	// whose basic answer already gave a sample (the first interleaved
	// answer after basic ones): no second sample of one exchange. Normal
	// once after each switch from basic to interleaved answers; the
	// answer's own exchange is kept for the next one.
	ErrInterleavedSampled = errors.New("ntp: interleaved answer about an exchange already sampled")
)

// KissError is a kiss-o'-death packet (stratum 0) that passed the origin
// check. RATE asks the client to poll less often; DENY and RSTR to stop.
type KissError struct {
	Code string // "RATE", "DENY", "RSTR", ...; "" if not printable
}

func (e *KissError) Error() string {
	if e.Code == "" {
		return "ntp: kiss-o'-death"
	}
	return "ntp: kiss-o'-death " + e.Code
}

// Stop reports whether the code tells the client to stop polling the
// source (DENY, RSTR).
func (e *KissError) Stop() bool { return e.Code == "DENY" || e.Code == "RSTR" }

// ErrCristianRound is wrapped by Cristian.Add for an unusable round.
var ErrCristianRound = errors.New("ntp: invalid cristian round")
