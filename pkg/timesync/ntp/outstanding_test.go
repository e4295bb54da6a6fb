package ntp

import (
	"errors"
	"testing"
	"time"

	"github.com/synclab/synclab/pkg/wire"
)

// TestOutstandingRequests: with SetMaxOutstanding(3) a client association
// takes an answer to any of its last three requests, in any order, each
// once; an answer to an older one (evicted), to one already answered, to a
// request forgotten (Forget), or with an origin no request had, is bogus;
// the driver's transmit stamp (Sent) replaces the latest request's once.
func TestOutstandingRequests(t *testing.T) {
	a, err := NewAssociation(wire.ModeClient, us(1))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.SetMaxOutstanding(MaxOutstanding + 1); !errors.Is(err, ErrMode) {
		t.Fatalf("SetMaxOutstanding(%d): %v", MaxOutstanding+1, err)
	}
	if err := a.SetMaxOutstanding(3); err != nil {
		t.Fatal(err)
	}
	sym, _ := NewAssociation(wire.ModeSymmetricActive, us(1))
	if err := sym.SetMaxOutstanding(2); !errors.Is(err, ErrMode) {
		t.Fatalf("symmetric SetMaxOutstanding: %v", err)
	}
	answer := func(req *wire.NTPPacket, t1 time.Time) (*wire.NTPPacket, time.Time) {
		rep, err := ServerReply(req, t1.Add(ms(105)), serverSys)
		if err != nil {
			t.Fatal(err)
		}
		rep.Transmit = wire.NTPTimeFromTime(t1.Add(ms(106)))
		return roundTrip(t, rep), t1.Add(ms(9))
	}
	var reqs []*wire.NTPPacket
	var t1s []time.Time
	for i := range 4 {
		t1 := t0.Add(time.Duration(i) * ms(20))
		req := roundTrip(t, a.Request(t1, 0, System{Precision: -20}))
		// The driver stamps the packet 7 us later than Request did.
		req.Transmit = wire.NTPTimeFromTime(t1.Add(us(7)))
		a.Sent(req.Transmit, t1.Add(us(7)))
		reqs, t1s = append(reqs, req), append(t1s, t1.Add(us(7)))
	}
	if n, latest := a.Outstanding(); n != 3 || !latest {
		t.Fatalf("%d outstanding after 4 requests (the latest: %v), want the last 3", n, latest)
	}
	// The first request was evicted by the fourth.
	if rep, dst := answer(reqs[0], t1s[0]); true {
		if _, err := a.Receive(rep, dst); !errors.Is(err, ErrBogus) {
			t.Fatalf("answer to an evicted request: %v, want bogus", err)
		}
	}
	// The third, then the second: out of order, each with its own T1.
	for _, i := range []int{2, 1} {
		rep, dst := answer(reqs[i], t1s[i])
		s, err := a.Receive(rep, dst)
		if err != nil {
			t.Fatalf("answer to request %d: %v", i, err)
		}
		if s.Delay != ms(8) || s.Sent != t1s[i] {
			t.Fatalf("answer to request %d: delay %v sent %v, want T1 %v (the driver's stamp)", i, s.Delay, s.Sent, t1s[i])
		}
		// Replayed with a new transmit timestamp (not a duplicate): a
		// request gives one sample.
		rep.Transmit += 1 << 20
		if _, err := a.Receive(rep, dst); !errors.Is(err, ErrBogus) {
			t.Fatalf("second answer to request %d: %v, want bogus", i, err)
		}
	}
	// A forged origin near the outstanding one's: bogus.
	rep, dst := answer(reqs[3], t1s[3])
	forged := *rep
	forged.Origin++
	if _, err := a.Receive(&forged, dst); !errors.Is(err, ErrBogus) {
		t.Fatalf("forged origin: %v, want bogus", err)
	}
	if n, latest := a.Outstanding(); n != 1 || !latest {
		t.Fatalf("%d outstanding (the latest: %v), want the latest only", n, latest)
	}
	a.Forget()
	if _, err := a.Receive(rep, dst); !errors.Is(err, ErrBogus) {
		t.Fatalf("answer to a forgotten request: %v, want bogus", err)
	}
	if n, latest := a.Outstanding(); n != 0 || latest {
		t.Fatalf("%d outstanding after Forget (the latest: %v)", n, latest)
	}
	// Two more; the latest answered first: the other is still waited
	// for, the latest not.
	a.Request(t0.Add(ms(100)), 0, System{Precision: -20}) // never answered
	r5 := roundTrip(t, a.Request(t0.Add(ms(120)), 0, System{Precision: -20}))
	rep, dst = answer(r5, t0.Add(ms(120)))
	if _, err := a.Receive(rep, dst); err != nil {
		t.Fatal(err)
	}
	if n, latest := a.Outstanding(); n != 1 || latest {
		t.Fatalf("%d outstanding (the latest: %v), want the older one only", n, latest)
	}
}

// TestOutstandingInterleaved: two interleaved requests in flight at once
// (the second sent before the first's answer came). The first's answer
// completes the exchange its origin named; the second named the same one,
// now sampled, and its answer gives no sample rather than pairing its T3
// with the first's exchange (which it does not belong to).
func TestOutstandingInterleaved(t *testing.T) {
	a, srv := newXleave(t), &xlServer{}
	if err := a.SetMaxOutstanding(2); err != nil {
		t.Fatal(err)
	}
	// Polls one at a time until the answers are interleaved (the third).
	for i := range 3 {
		t1 := t0.Add(time.Duration(i) * time.Second)
		rep, dst := srv.answer(t, poll(t, a, t1), t1)
		if _, err := a.Receive(rep, dst); err != nil && !errors.Is(err, ErrInterleavedSampled) {
			t.Fatal(err)
		}
	}
	t1, t1b := t0.Add(3*time.Second), t0.Add(3*time.Second+ms(2))
	r1 := poll(t, a, t1)
	r2 := poll(t, a, t1b)
	if r1.Origin != r2.Origin || r1.Receive == r2.Receive || r1.Receive.IsZero() {
		t.Fatalf("requests in flight: origins %v %v, nonces %v %v: want one origin, two nonces", r1.Origin, r2.Origin, r1.Receive, r2.Receive)
	}
	rep1, dst1 := srv.answer(t, r1, t1)
	if rep1.Origin != r1.Receive {
		t.Fatalf("server answered basic: %+v", rep1)
	}
	// The server now holds r1's answer's stamp, not the one r2 named:
	// give r2's answer that stamp as a second interleaved answer would.
	rep2, dst2 := srv.answer(t, r2, t1b)
	rep2.Origin = r2.Receive
	if _, err := a.Receive(rep1, dst1); err != nil {
		t.Fatalf("first answer: %v", err)
	}
	if _, err := a.Receive(rep2, dst2); !errors.Is(err, ErrInterleavedSampled) {
		t.Fatalf("second answer, naming an exchange older than the last answered: %v, want no sample", err)
	}
}
