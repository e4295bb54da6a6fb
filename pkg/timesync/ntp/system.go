package ntp

import (
	"time"

	"github.com/synclab/synclab/pkg/wire"
)

// MakeCandidate assembles the selection's view of one source at local time
// now: its filter estimate, the header of its last valid packet (for the
// root delay and dispersion it inherits from its own reference: the larger
// of those and the chosen sample's own header's, Estimate.Root) and whether
// it is reachable. selfID is this host's reference ID as it would appear in
// a downstream packet (0 if none): a source whose reference ID is selfID
// synchronises to us, a timing loop. Stratum-1 reference IDs are ASCII
// source names, not addresses, and never count as loops.
//
// localPPM bounds the local clock's own frequency error beyond PHI, ppm:
// the servo's State().FrequencyError. The RFC's root distance assumes a
// disciplined local clock (PHI, 15 ppm, covers it); before the discipline
// knows the frequency, the clock may drift by hundreds of ppm, and an
// estimate from a sample taken a minute ago is off by that much more. The
// distance grows by localPPM × (now - est.Time) to stay truthful.
func MakeCandidate(est Estimate, peer Peer, reachable bool, selfID uint32, localPPM float64, now time.Time) Candidate {
	peer = est.Root(peer)
	lambda := RootDistance(peer.RootDelay, peer.RootDispersion, est, now)
	if localPPM > 0 {
		lambda = addSat(lambda, driftOver(now.Sub(est.Time), localPPM))
	}
	return Candidate{
		Offset:       est.Offset,
		Jitter:       est.Jitter,
		RootDistance: lambda,
		Stratum:      peer.Stratum,
		Reachable:    reachable,
		Loop:         selfID != 0 && peer.Stratum > 1 && peer.ReferenceID == selfID,
	}
}

// NextSystem returns the system variables to advertise after a successful
// selection (RFC 5905 section 11.2.3 and A.5.5.7 clock_update()): one
// stratum below the system peer, its reference ID refID (its IPv4 address,
// or the first four bytes of the MD5 of its IPv6 address), and root
// delay and dispersion accumulated along the path to the primary
// reference:
//
//	root delay      Δ = Δ_p + δ_p
//	root dispersion Ε = Ε_p + ε_p + PHI × (now - t_p) + ϑ + |Θ|
//
// where _p are the system peer's, ϑ is the system jitter and Θ the system
// offset (an offset not yet corrected is error too). Reference is now.
// Δ_p and Ε_p are taken as MakeCandidate takes them (Estimate.Root): our
// clients' bound is only as true as ours. localPPM is MakeCandidate's too:
// the sample the estimate came from may be a minute old, and a clock whose
// frequency is not learned yet has drifted from it by more than PHI (a
// host 371 ppm off served a distance 5 ms short; a client of it held a
// bound that missed true time).
func NextSystem(peer Peer, est Estimate, sel Selection, refID uint32, precision int8, localPPM float64, now time.Time) System {
	peer = est.Root(peer)
	theta := sel.Offset
	if theta < 0 {
		theta = -theta
	}
	disp := addSat(peer.RootDispersion, est.DispersionAt(now))
	if localPPM > 0 {
		disp = addSat(disp, driftOver(now.Sub(est.Time), localPPM))
	}
	disp = addSat(disp, sel.Jitter)
	disp = addSat(disp, theta)
	stratum := peer.Stratum + 1
	leap := peer.Leap
	if stratum >= wire.StratumUnsynchronized {
		stratum, leap = wire.StratumUnsynchronized, wire.LeapNotInSync
	}
	return System{
		Leap:           leap,
		Stratum:        stratum,
		Precision:      precision,
		RootDelay:      addSat(peer.RootDelay, est.Delay),
		RootDispersion: disp,
		ReferenceID:    refID,
		Reference:      now,
	}
}
