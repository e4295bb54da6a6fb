package ntp

import (
	"testing"
	"time"

	"github.com/synclab/synclab/pkg/wire"
)

func TestMakeCandidate(t *testing.T) {
	est := Estimate{Offset: ms(3), Delay: ms(2), Dispersion: us(100), Jitter: us(40), Time: at(0), Updated: at(0)}
	peer := Peer{Stratum: 2, RootDelay: ms(10), RootDispersion: ms(1), ReferenceID: 0x0a000001}
	c := MakeCandidate(est, peer, true, 0x0a000002, 0, at(10*time.Second))
	// λ = (10+2)/2 ms + 1 ms + 100 µs + 150 µs + 40 µs.
	want := Candidate{Offset: ms(3), Jitter: us(40), RootDistance: ms(7) + us(290), Stratum: 2, Reachable: true}
	if c != want {
		t.Errorf("got %+v, want %+v", c, want)
	}
	// An undisciplined local clock (500 ppm unknown) adds 5 ms over 10 s.
	if c := MakeCandidate(est, peer, true, 0, 500, at(10*time.Second)); c.RootDistance != ms(12)+us(290) {
		t.Errorf("with local drift: %v", c.RootDistance)
	}
	if c := MakeCandidate(est, peer, true, 0x0a000001, 0, at(0)); !c.Loop {
		t.Error("a source that follows us is not a loop")
	}
	peer.Stratum = 1 // its refid is a name like "GPS", never our address
	if c := MakeCandidate(est, peer, true, 0x0a000001, 0, at(0)); c.Loop {
		t.Error("stratum-1 refid taken for a loop")
	}
}

func TestNextSystem(t *testing.T) {
	est := Estimate{Offset: ms(3), Delay: ms(2), Dispersion: us(100), Jitter: us(40), Time: at(0), Updated: at(0)}
	peer := Peer{Stratum: 2, RootDelay: ms(10), RootDispersion: ms(1), Leap: wire.LeapAddSecond}
	sel := Selection{Offset: -us(500), Jitter: us(60)}
	sys := NextSystem(peer, est, sel, 0x0a000001, -20, 0, at(10*time.Second))
	want := System{
		Leap: wire.LeapAddSecond, Stratum: 3, Precision: -20,
		RootDelay: ms(12),
		// 1 ms + (100 + 150) µs + 60 µs + 500 µs
		RootDispersion: ms(1) + us(810),
		ReferenceID:    0x0a000001,
		Reference:      at(10 * time.Second),
	}
	if sys != want {
		t.Errorf("got %+v\nwant %+v", sys, want)
	}
	peer.Stratum = 15
	if sys := NextSystem(peer, est, sel, 1, -20, 0, at(0)); sys.Stratum != 16 || sys.Leap != wire.LeapNotInSync {
		t.Errorf("stratum 15 peer: %+v", sys)
	}
}
