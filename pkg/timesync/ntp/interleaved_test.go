package ntp

import (
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/synclab/synclab/pkg/wire"
)

// xlServer answers client requests as chronyd does in interleaved mode: a
// request whose origin has the low bit set (one of the server's receive
// timestamps, which it makes odd) and whose receive and transmit fields
// differ has the kernel transmit stamp of the answer it names saved, and
// gets it back once as its transmit timestamp, with its own receive field
// as the origin; every answer to such a request is saved. The server is
// 100 ms ahead of the client; a request takes 5 ms to arrive, the server
// reads T3 1 ms after T2 and its answer leaves lag later (the send path
// that interleaved mode takes out), then takes 3 ms to arrive.
type xlServer struct {
	lag    time.Duration
	basic  bool // answer like an RFC 5905 server without interleaved mode
	stamps map[wire.NTPTime]wire.NTPTime
}

const xlAhead = 100 * time.Millisecond

// answer returns the answer to req sent at client time t1, and when it
// reaches the client.
func (s *xlServer) answer(t *testing.T, req *wire.NTPPacket, t1 time.Time) (*wire.NTPPacket, time.Time) {
	t.Helper()
	recv := t1.Add(xlAhead + ms(5))
	rep, err := ServerReply(req, recv, serverSys)
	if err != nil {
		t.Fatal(err)
	}
	basicT3 := recv.Add(ms(1))
	wireT3 := basicT3.Add(s.lag)
	rep.Receive = wire.NTPTimeFromTime(recv) | 1
	rep.Transmit = wire.NTPTimeFromTime(basicT3) &^ 1
	if !s.basic && req.Origin&1 == 1 && req.Receive != req.Transmit {
		if s.stamps == nil {
			s.stamps = map[wire.NTPTime]wire.NTPTime{}
		}
		if tx, ok := s.stamps[req.Origin]; ok {
			rep.Origin, rep.Transmit = req.Receive, tx
			delete(s.stamps, req.Origin)
		}
		s.stamps[rep.Receive] = wire.NTPTimeFromTime(wireT3)
	}
	return roundTrip(t, rep), wireT3.Add(-xlAhead + ms(3))
}

func newXleave(t *testing.T) *Association {
	t.Helper()
	a, err := NewAssociation(wire.ModeClient, us(1))
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	if err := a.EnableInterleaved(r.Uint64); err != nil {
		t.Fatal(err)
	}
	return a
}

// poll sends a request at t1 and returns it.
func poll(t *testing.T, a *Association, t1 time.Time) *wire.NTPPacket {
	t.Helper()
	return roundTrip(t, a.Request(t1, 0, System{Precision: -20}))
}

// TestInterleavedExchange: the first answers are basic and carry the
// server's send path as error (offset 101 ms - lag/2); from the third on
// the server answers interleaved, and each answer completes the exchange
// before it with the stamp of its departure: the offset is exact.
func TestInterleavedExchange(t *testing.T) {
	const lag = 40 * time.Microsecond
	a, srv := newXleave(t), &xlServer{lag: lag}
	basic := ms(101) - lag/2
	var t4s, t1s []time.Time
	for i := range 6 {
		t1 := at(time.Duration(i) * time.Second)
		req := poll(t, a, t1)
		if i == 0 && (!req.Origin.IsZero() || !req.Receive.IsZero()) {
			t.Fatalf("first request: origin %v receive %v, want basic (zero)", req.Origin, req.Receive)
		}
		if i > 0 && (req.Origin&1 != 1 || req.Receive.IsZero() || req.Receive == req.Transmit) {
			t.Fatalf("request %d is not interleaved: %+v", i, req)
		}
		rep, dst := srv.answer(t, req, t1)
		t1s, t4s = append(t1s, t1), append(t4s, dst)
		s, err := a.Receive(rep, dst)
		switch i {
		case 0, 1:
			// The server saves its stamp only for interleaved requests:
			// the second answer is basic too.
			if err != nil || s.Offset != basic || s.Time != dst || s.Sent != t1 {
				t.Errorf("answer %d: %+v, %v; want basic offset %v", i, s, err, basic)
			}
		case 2:
			// About exchange 1, whose basic answer was sampled.
			if !errors.Is(err, ErrInterleavedSampled) {
				t.Errorf("answer 2: %+v, %v; want ErrInterleavedSampled", s, err)
			}
		default:
			if err != nil || s.Offset != ms(101) || s.Delay != ms(8) || s.Time != t4s[i-1] || s.Sent != t1s[i-1] {
				t.Errorf("answer %d: %+v, %v; want offset 101ms delay 8ms of exchange %d", i, s, err, i-1)
			}
		}
	}
	if st, ok := a.Interleaved(); !ok || st.Answers != 4 || st.Basic != 2 || st.BasicRun != 0 {
		t.Errorf("status %+v", st)
	}
}

// TestInterleavedBasicServer: a server without the mode (RFC 5905's, timed's
// own) answers every request in basic mode; each answer is a basic sample,
// and BasicRun says so.
func TestInterleavedBasicServer(t *testing.T) {
	a, srv := newXleave(t), &xlServer{lag: us(40), basic: true}
	for i := range 5 {
		t1 := at(time.Duration(i) * time.Second)
		rep, dst := srv.answer(t, poll(t, a, t1), t1)
		if s, err := a.Receive(rep, dst); err != nil || s.Offset != ms(101)-us(20) {
			t.Errorf("answer %d: %+v, %v", i, s, err)
		}
	}
	if st, _ := a.Interleaved(); st.Answers != 0 || st.Basic != 5 || st.BasicRun != 4 {
		t.Errorf("status %+v: want 5 basic answers, the last 4 to interleaved requests", st)
	}
}

// TestInterleavedAttacks reads the answer as a forger would write it.
func TestInterleavedAttacks(t *testing.T) {
	// run brings a to the point where its next answer is interleaved and
	// sampled, and returns that answer, when it arrives, and the request.
	run := func(t *testing.T) (*Association, *xlServer, *wire.NTPPacket, time.Time) {
		a, srv := newXleave(t), &xlServer{lag: us(40)}
		for i := range 3 {
			t1 := at(time.Duration(i) * time.Second)
			rep, dst := srv.answer(t, poll(t, a, t1), t1)
			a.Receive(rep, dst)
		}
		t1 := at(3 * time.Second)
		rep, dst := srv.answer(t, poll(t, a, t1), t1)
		return a, srv, rep, dst
	}
	t.Run("wrong nonce", func(t *testing.T) {
		a, _, rep, dst := run(t)
		rep.Origin ^= 1 << 20
		if _, err := a.Receive(rep, dst); !errors.Is(err, ErrBogus) {
			t.Errorf("forged origin: %v", err)
		}
	})
	t.Run("replay", func(t *testing.T) {
		a, _, rep, dst := run(t)
		if _, err := a.Receive(rep, dst); err != nil {
			t.Fatal(err)
		}
		if _, err := a.Receive(rep, dst.Add(ms(1))); !errors.Is(err, ErrDuplicate) {
			t.Errorf("the same answer again: %v", err)
		}
		again := *rep
		again.Transmit++
		if _, err := a.Receive(&again, dst.Add(ms(1))); !errors.Is(err, ErrBogus) {
			t.Errorf("a second answer to one request: %v", err)
		}
	})
	t.Run("basic answer then interleaved", func(t *testing.T) {
		// Once the request is answered (in either mode), the other form
		// of answer to it is bogus.
		a, _, rep, dst := run(t)
		basicForm := *rep
		basicForm.Origin = 0
		req := poll(t, a, at(4*time.Second))
		basicForm.Origin = req.Transmit
		basicForm.Transmit = rep.Transmit + 2
		if _, err := a.Receive(&basicForm, dst.Add(time.Second)); err != nil {
			t.Fatal(err)
		}
		rep.Origin = req.Receive
		if _, err := a.Receive(rep, dst.Add(time.Second)); !errors.Is(err, ErrBogus) {
			t.Errorf("interleaved answer after a basic one: %v", err)
		}
	})
	t.Run("stamp before T2", func(t *testing.T) {
		a, _, rep, dst := run(t)
		rep.Transmit = rep.Transmit.Add(-10 * time.Second)
		if _, err := a.Receive(rep, dst); !errors.Is(err, ErrInterleavedStamp) {
			t.Errorf("T3 before T2: %v", err)
		}
		a, _, rep, dst = run(t)
		rep.Transmit = rep.Transmit.Add(MaxServerInterval + time.Second)
		if _, err := a.Receive(rep, dst); !errors.Is(err, ErrInterleavedStamp) {
			t.Errorf("T3 %v after T2: %v", MaxServerInterval+time.Second, err)
		}
	})
	t.Run("unsynchronised answer", func(t *testing.T) {
		// An answer that fails a check leaves nothing to complete: the
		// next request is basic.
		a, _, rep, dst := run(t)
		rep.Leap = wire.LeapNotInSync
		if _, err := a.Receive(rep, dst); !errors.Is(err, ErrUnsynchronized) {
			t.Fatal(err)
		}
		if req := poll(t, a, at(5*time.Second)); !req.Origin.IsZero() || !req.Receive.IsZero() {
			t.Errorf("request after a refused answer: origin %v receive %v, want basic", req.Origin, req.Receive)
		}
	})
	t.Run("unanswered", func(t *testing.T) {
		a, srv, _, _ := run(t) // the request of run is lost
		for i := 1; i < MaxInterleavedUnanswered; i++ {
			if req := poll(t, a, at(time.Duration(3+i)*time.Second)); req.Origin.IsZero() {
				t.Fatalf("request %d after the last answer is basic already", i+1)
			}
		}
		req := poll(t, a, at(10*time.Second))
		if !req.Origin.IsZero() || !req.Receive.IsZero() {
			t.Errorf("request after %d unanswered ones: origin %v, want basic", MaxInterleavedUnanswered, req.Origin)
		}
		// Its basic answer is no sign of a server without the mode.
		rep, dst := srv.answer(t, req, at(10*time.Second))
		if _, err := a.Receive(rep, dst); err != nil {
			t.Fatal(err)
		}
		if st, _ := a.Interleaved(); st.BasicRun != 0 {
			t.Errorf("a basic answer to a basic request counted as basic to an interleaved one: %+v", st)
		}
	})
}

func TestInterleavedSymmetric(t *testing.T) {
	a, _ := NewAssociation(wire.ModeSymmetricActive, us(1))
	if err := a.EnableInterleaved(rand.Uint64); !errors.Is(err, ErrMode) {
		t.Errorf("symmetric association: %v", err)
	}
	if _, ok := a.Interleaved(); ok {
		t.Error("Interleaved reports a mode that was refused")
	}
}
