package order

import (
	"encoding"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/wire"
)

// threeLab is three orderd members (without a key if unkeyed): send
// multicasts a FIFO message at member 1, delivered says whether member
// id delivered msg.
func threeLab(t *testing.T, seed int64, unkeyed bool) (s *sim.Sim, send func(msg string) error, delivered func(id uint32, msg string) bool) {
	s = sim.New(sim.Config{Seed: seed, DefaultLink: sim.LinkConfig{Delay: 200 * time.Microsecond, Jitter: 300 * time.Microsecond}})
	cfg := DefaultLANConfig()
	cfg.Unkeyed = unkeyed
	addMembers(t, s, 3, cfg)
	seen := map[uint32]map[string]bool{1: {}, 2: {}, 3: {}}
	s.OnReady(func(r sim.Ready) {
		for _, d := range r.Core.(*Core).Deliveries() {
			seen[r.Node][string(d.Message)] = true
		}
	})
	delivered = func(id uint32, msg string) bool { return seen[id][msg] }
	send = func(msg string) (err error) {
		_ = s.Do(1, func(c core.Core) { err = c.(*Core).Multicast(s.Clock(1).Now(), FIFO, []byte(msg)) })
		return err
	}
	return s, send, delivered
}

// forgedAckLab is three orderd members; member 1's record 2 is lost on
// its way to member 2, and a forger, in member 2's name, tells member 1
// (an acknowledgement) and member 3 (a holding) that member 2 holds
// member 1's stream up to 2: on main member 1 and the relay at member 3
// trimmed record 2, and member 2's stream from member 1 stalled for good
// (record 3 held back behind the gap, nobody holding record 2 any more).
func forgedAckLab(t *testing.T, seed int64, unkeyed bool) (s *sim.Sim, delivered func(id uint32, msg string) bool) {
	s, multicast, delivered := threeLab(t, seed, unkeyed)
	send := func(msg string) {
		if err := multicast(msg); err != nil {
			t.Fatal(err)
		}
	}
	s.Run(time.Second)
	send("m1")
	if !s.RunUntil(func() bool { return delivered(2, "m1") && delivered(3, "m1") }, time.Second) {
		t.Fatal("m1 not delivered")
	}
	s.Cut(1, 2) // record 2 lost on its way to member 2
	send("m2")
	if !s.RunUntil(func() bool { return delivered(3, "m2") }, time.Second) {
		t.Fatal("m2 not delivered at member 3")
	}
	stamp := s.Node(1).Status().Lamport + 10
	if err := s.Forge(2, 1, wire.KindOrderStreamAck, 0, stamp, wire.OrderStreamAck{Upto: 2}); err != nil {
		t.Fatalf("forged ack refused: %v", err)
	}
	if err := s.Forge(2, 3, wire.KindOrderHolding, 0, stamp, wire.OrderHolding{Origin: 1, Upto: 2}); err != nil {
		t.Fatalf("forged holding refused: %v", err)
	}
	s.Heal()
	send("m3")
	return s, delivered
}

// TestSimForgedAckUndone: without a key, the forged acknowledgement no
// longer loses member 2 a record. Member 1 asks member 2 how far it
// holds its stream (acks_probed), member 2's answer, stamped after the
// forged word, undoes it (acks_undone), and record 2, kept until the
// acknowledgement settles, is resent: member 2 delivers m2 and m3.
func TestSimForgedAckUndone(t *testing.T) {
	sim.SoakSeeds(t, 5, 50, func(t *testing.T, seed int64) {
		s, delivered := forgedAckLab(t, seed, true)
		start := s.Now()
		if !s.RunUntil(func() bool { return delivered(2, "m2") && delivered(2, "m3") }, 10*time.Second) {
			c1 := s.Core(1).(*Core).Report()
			t.Fatalf("member 2 never delivered m2 and m3 after an acknowledgement forged in its name: member 1's streams %+v, counters %v; member 2's %+v",
				c1.Streams, c1.Counters, s.Core(2).(*Core).Report().Streams)
		}
		c1 := s.Core(1).(*Core).Report()
		if c1.Counters["acks_undone"] == 0 || c1.Counters["acks_undone_settled"] != 0 {
			t.Errorf("member 1's counters %v: want acks_undone, and no acks_undone_settled (the forged rise undone before it settled)", c1.Counters)
		}
		t.Logf("member 2 delivered m2 and m3 %v after the forged acknowledgement; member 1's counters %v", s.Now().Sub(start), c1.Counters)
	})
}

// TestSimForgedAckKeyed: with a key (Unkeyed false) nothing changed: the
// frames that reach a keyed core are authentic, and acknowledgements are
// trusted as they come (the forged one, which a keyed node would refuse
// as a bad MAC, is what a member of the cluster could send): no probe, no
// undo, Settled is Acked; the stall is what main did, a member's own lie.
func TestSimForgedAckKeyed(t *testing.T) {
	s, delivered := forgedAckLab(t, 1, false)
	s.Run(5 * time.Second)
	c1 := s.Core(1).(*Core).Report()
	if delivered(2, "m2") || c1.Counters["acks_probed"]+c1.Counters["acks_undone"] != 0 {
		t.Fatalf("with a key: m2 delivered at member 2 %v, member 1's counters %v: want main's behaviour", delivered(2, "m2"), c1.Counters)
	}
	for _, st := range c1.Streams {
		if st.Settled != st.Acked {
			t.Errorf("with a key, member %d's acknowledgement %d settled at %d", st.Member, st.Acked, st.Settled)
		}
	}
	t.Log(fmt.Sprintf("with a key: member 1's counters %v", c1.Counters))
}

// TestSimForgedAckFlood: the forger goes on, every millisecond for two
// seconds, raising member 2's acknowledgement to everything member 1
// sent, each frame stamped above member 1's clock, while member 1 keeps
// multicasting, a fifth of its frames to member 2 lost. Each rise is
// undone by member 2's answer to the first
// probe after it, long before it would settle: nothing member 2 lacks is
// trimmed (acks_undone_settled stays 0) and it delivers every message.
// (The bound of records waiting to be settled is not reached here:
// TestSimSettleBound reaches it; forged low words:
// TestSimForgedLowAckFlood.)
func TestSimForgedAckFlood(t *testing.T) {
	sim.SoakSeeds(t, 3, 30, func(t *testing.T, seed int64) {
		s, delivered := forgedAckLab(t, seed, true)
		c1 := func() *Core { return s.Core(1).(*Core) }
		// A fifth of member 1's frames to member 2 lost: member 2 lacks
		// records most of the time, which the forger says it holds.
		s.SetLink(1, 2, sim.LinkConfig{Delay: 200 * time.Microsecond, Loss: 0.2})
		sent, most := 3, 0
		for i := range 2000 {
			seq := c1().st.Stream.Seq
			stamp := s.Node(1).Status().Lamport + 5
			if err := s.Forge(2, 1, wire.KindOrderStreamAck, 0, stamp, wire.OrderStreamAck{Upto: seq}); err != nil {
				t.Fatalf("forged ack refused: %v", err)
			}
			if i%10 == 0 {
				sent++
				_ = s.Do(1, func(c core.Core) {
					if err := c.(*Core).Multicast(s.Clock(1).Now(), FIFO, []byte(fmt.Sprintf("m%d", sent))); err != nil {
						t.Fatal(err)
					}
				})
			}
			most = max(most, len(c1().st.Stream.Sent))
			s.Run(time.Millisecond)
		}
		s.SetLink(1, 2, sim.LinkConfig{Delay: 200 * time.Microsecond})
		if !s.RunUntil(func() bool { return deliveredAll(delivered, 2, sent) }, 5*time.Second) {
			t.Fatalf("member 2 lacks messages after the flood of forged acknowledgements: member 1's streams %+v, counters %v; member 2's %+v",
				c1().Report().Streams, c1().Report().Counters, s.Core(2).(*Core).Report().Streams)
		}
		cs := c1().Report().Counters
		if cs["acks_undone_settled"] != 0 {
			t.Errorf("a forged acknowledgement settled: member 1's counters %v", cs)
		}
		t.Logf("%d messages delivered at member 2; member 1 kept at most %d records; counters %v", sent, most, cs)
	})
}

// settledLab is three members without a key; member 1 multicast m1..m300,
// every member delivered them and every acknowledgement settled (member
// 1 trimmed its records).
func settledLab(t *testing.T, seed int64) (s *sim.Sim, send func(msg string) error, delivered func(id uint32, msg string) bool) {
	s, send, delivered = threeLab(t, seed, true)
	s.Run(time.Second)
	for i := 1; i <= 300; i++ {
		if err := send(fmt.Sprintf("m%d", i)); err != nil {
			t.Fatal(err)
		}
		s.Run(time.Millisecond)
	}
	s.Run(2 * time.Second)
	st := s.Core(1).(*Core).st.Stream
	if len(st.Sent) != 0 || st.Out[2].Settled != 300 || !delivered(2, "m300") {
		t.Fatalf("before the attack: member 1 keeps %d records, member 2's acknowledgement settled at %d", len(st.Sent), st.Out[2].Settled)
	}
	return s, send, delivered
}

// TestSimForgedLowAckAfterSettle: once member 2's acknowledgement
// settled (member 1 trimmed records 1..300, more than a Window), one acknowledgement "from 2"
// of nothing (Upto 0), stamped above member 1's clock, undoes the
// settled word (acks_undone_settled, a WARN) but lowers nothing below
// what is trimmed: member 1's multicasts still reach member 2, none is
// refused as busy, and member 1's state still restores after a restart.
// (The settled branch once set Settled and Acked to 0: the records to
// resend were gone, member 2 was never heard again and every multicast
// was ErrBusy; the stored state was refused as "stream records missing".)
func TestSimForgedLowAckAfterSettle(t *testing.T) {
	for _, kind := range []wire.Kind{wire.KindOrderStreamAck, wire.KindOrderHolding} {
		t.Run(kind.String(), func(t *testing.T) {
			sim.SoakSeeds(t, 3, 20, func(t *testing.T, seed int64) {
				s, send, delivered := settledLab(t, seed)
				stamp := s.Node(1).Status().Lamport + 3
				var msg encoding.BinaryAppender = wire.OrderStreamAck{Upto: 0}
				if kind == wire.KindOrderHolding {
					msg = wire.OrderHolding{Origin: 1, Upto: 0}
				}
				if err := s.Forge(2, 1, kind, 0, stamp, msg); err != nil {
					t.Fatalf("forged frame refused: %v", err)
				}
				s.Run(10 * time.Millisecond)
				c1 := s.Core(1).(*Core)
				if c1.Report().Counters["acks_undone_settled"] != 1 {
					t.Fatalf("member 1's counters %v: want one acks_undone_settled", c1.Report().Counters)
				}
				if o := c1.st.Stream.Out[2]; o.Settled < 300 || o.Acked < o.Settled {
					t.Errorf("member 2's acknowledgement at %d, settled at %d, below the 300 records trimmed", o.Acked, o.Settled)
				}
				// More of the same: counted, warned of once (a WARN line and
				// the hooks per forged frame otherwise).
				for i := range 49 {
					if err := s.Forge(2, 1, kind, 0, stamp+1+uint64(i), msg); err != nil {
						t.Fatalf("forged frame refused: %v", err)
					}
					s.Run(time.Millisecond)
				}
				if n := c1.Report().Counters["acks_undone_settled"]; n != 50 {
					t.Errorf("acks_undone_settled %d after 50 forged low words, want 50", n)
				}
				if n := len(s.EventsNamed(EventAckUndone)); n != 1 {
					t.Errorf("%d %s events after 50 forged low words against one settled rise, want 1", n, EventAckUndone)
				}
				for i := 301; i <= 900; i++ {
					if err := send(fmt.Sprintf("m%d", i)); err != nil {
						t.Fatalf("multicast %d after the forged low word: %v", i, err)
					}
					s.Run(2 * time.Millisecond)
				}
				if !s.RunUntil(func() bool { return delivered(2, "m900") && delivered(3, "m900") }, 5*time.Second) {
					t.Fatalf("m900 not delivered: member 1's streams %+v", s.Core(1).(*Core).Report().Streams)
				}
				s.Crash(1)
				s.Restart(1)
				s.Run(time.Second)
				if !s.Running(1) {
					t.Fatal("member 1 did not restart from its stored state")
				}
				if err := send("after"); err != nil {
					t.Fatalf("multicast after the restart: %v", err)
				}
				if !s.RunUntil(func() bool { return delivered(2, "after") }, 5*time.Second) {
					t.Fatal("the multicast after the restart not delivered at member 2")
				}
			})
		})
	}
}

// TestSimForgedLowAckFlood: a forger says, every millisecond for two
// seconds, that member 2 holds member 1's stream 20 records short of the
// highest it acknowledged (each frame stamped above member 1's clock, so each undoes the
// rises before it) while member 1 multicasts 400 messages, a tenth of
// its frames to member 2 lost. An undone
// acknowledgement moves the resend forward to a Retry away, no closer:
// the records member 2 is said to lack go at most maxBurst a Retry, not
// maxBurst per forged frame (which was 30400 records resent for 1900
// frames), and member 2 still delivers every message.
func TestSimForgedLowAckFlood(t *testing.T) {
	sim.SoakSeeds(t, 3, 20, func(t *testing.T, seed int64) {
		s, send, delivered := threeLab(t, seed, true)
		s.Run(time.Second)
		c1 := func() *Core { return s.Core(1).(*Core) }
		// A tenth of member 1's frames to member 2 lost: some records
		// must be resent.
		s.SetLink(1, 2, sim.LinkConfig{Delay: 200 * time.Microsecond, Loss: 0.1})
		const flood = 2 * time.Second
		sent, busy, heard := 0, 0, uint64(0)
		for i := range int(flood / time.Millisecond) {
			// The forger hears member 2's acknowledgements on the LAN.
			if heard = max(heard, c1().st.Stream.Out[2].Acked); heard > 20 {
				stamp := s.Node(1).Status().Lamport + 5
				if err := s.Forge(2, 1, wire.KindOrderStreamAck, 0, stamp, wire.OrderStreamAck{Upto: heard - 20}); err != nil {
					t.Fatalf("forged ack refused: %v", err)
				}
			}
			if i%5 == 0 {
				switch err := send(fmt.Sprintf("m%d", sent+1)); {
				case err == nil:
					sent++
				case errors.Is(err, ErrBusy):
					busy++ // the forged words held the window: tried again
				default:
					t.Fatalf("multicast %d: %v", sent+1, err)
				}
			}
			s.Run(time.Millisecond)
		}
		cs := c1().Report().Counters
		retry := DefaultLANConfig().Retry
		if most := maxBurst * (int(flood/retry) + 2); cs["resent_records"] > uint64(most) || cs["acks_undone"] < 40 {
			t.Errorf("%d forged low acknowledgements undone, %d records resent: want at most %d (%d a Retry)", cs["acks_undone"], cs["resent_records"], most, maxBurst)
		}
		s.SetLink(1, 2, sim.LinkConfig{Delay: 200 * time.Microsecond})
		if !s.RunUntil(func() bool { return deliveredAll(delivered, 2, sent) }, 5*time.Second) {
			t.Fatalf("member 2 lacks messages after the flood: member 1's streams %+v", c1().Report().Streams)
		}
		t.Logf("%d messages (%d refused as busy); member 1's counters %v", sent, busy, cs)
	})
}

// deliveredAll says whether member id delivered m1..mN.
func deliveredAll(delivered func(id uint32, msg string) bool, id uint32, n int) bool {
	for i := 1; i <= n; i++ {
		if !delivered(id, fmt.Sprintf("m%d", i)) {
			return false
		}
	}
	return true
}

// TestSimSettleBound: without a key, records wait settleRetries x Retry
// after their acknowledgement before they are trimmed; a member that
// multicasts faster than that settles reaches the bound of
// settleWindows x Window records kept, and its multicasts are refused
// (ErrBusy, naming the bound) although every member acknowledged them,
// never keeping more; once it stops, the acknowledgements settle, the
// records are trimmed and multicasts are taken again.
func TestSimSettleBound(t *testing.T) {
	s := sim.New(sim.Config{Seed: 1, DefaultLink: sim.LinkConfig{Delay: 200 * time.Microsecond, Jitter: 300 * time.Microsecond}})
	cfg := DefaultLANConfig()
	cfg.Unkeyed, cfg.Window = true, 4
	addMembers(t, s, 3, cfg)
	s.Run(time.Second)
	c1 := func() *Core { return s.Core(1).(*Core) }
	bound := settleWindows * cfg.Window
	sent, most := 0, 0
	var busy, refused error
	for range 500 {
		err := s.Do(1, func(c core.Core) { busy = c.(*Core).Multicast(s.Clock(1).Now(), FIFO, []byte("m")) })
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case busy == nil:
			sent++
		case !errors.Is(busy, ErrBusy):
			t.Fatalf("multicast: %v", busy)
		case refused == nil:
			refused = busy
			if acked, st := c1().st.Stream.minAcked(), c1().st.Stream; st.Seq-acked >= uint64(cfg.Window) {
				t.Errorf("refused with the window of acknowledgements full (%d of %d acknowledged): not the settle bound", acked, st.Seq)
			}
		}
		most = max(most, len(c1().st.Stream.Sent))
		s.Run(2 * time.Millisecond)
	}
	if refused == nil || most != bound || !strings.Contains(refused.Error(), fmt.Sprint(bound, " not yet settled")) {
		t.Fatalf("%d multicasts taken, at most %d records kept (bound %d), the first refusal: %v", sent, most, bound, refused)
	}
	s.Run(time.Second)
	if len(c1().st.Stream.Sent) != 0 {
		t.Errorf("member 1 still keeps %d records a second after its last multicast", len(c1().st.Stream.Sent))
	}
	if err := s.Do(1, func(c core.Core) { busy = c.(*Core).Multicast(s.Clock(1).Now(), FIFO, []byte("m")) }); err != nil || busy != nil {
		t.Fatalf("multicast after the records settled: %v %v", err, busy)
	}
	t.Logf("%d multicasts taken of 500 at one every 2 ms, then refused at %d records kept; counters %v", sent, most, c1().Report().Counters)
}

// TestUnkeyedWindowBound: without a key up to settleWindows x Window
// records are kept, so the window is bounded to keep that at MaxWindow
// records, what a keyed member keeps at most (at MaxWindow and 1 KiB
// messages, 512 MiB rather than 64 MiB): a larger one is refused at
// validation, saying why and what to do.
func TestUnkeyedWindowBound(t *testing.T) {
	for _, tc := range []struct {
		unkeyed bool
		window  int
		ok      bool
	}{
		{false, MaxWindow, true}, {false, MaxWindow + 1, false},
		{true, MaxUnkeyedWindow, true}, {true, MaxUnkeyedWindow + 1, false}, {true, MaxWindow, false},
	} {
		cfg := DefaultLANConfig()
		cfg.Unkeyed, cfg.Window = tc.unkeyed, tc.window
		err := cfg.validate()
		if tc.ok != (err == nil) || err != nil && !errors.Is(err, ErrConfig) {
			t.Errorf("Unkeyed %v, Window %d: %v", tc.unkeyed, tc.window, err)
		}
		if err != nil && tc.unkeyed && tc.window <= MaxWindow && !strings.Contains(err.Error(), "give the cluster a key") {
			t.Errorf("Unkeyed, Window %d: %v does not say what to do", tc.window, err)
		}
	}
	if MaxUnkeyedWindow*settleWindows != MaxWindow {
		t.Errorf("%d x %d records may be kept without a key, %d with one", settleWindows, MaxUnkeyedWindow, MaxWindow)
	}
}
