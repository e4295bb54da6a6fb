package ring_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/elect"
	"github.com/synclab/synclab/pkg/elect/bully"
	"github.com/synclab/synclab/pkg/elect/internal/electtest"
	"github.com/synclab/synclab/pkg/elect/ring"
	"github.com/synclab/synclab/pkg/epoch"
	"github.com/synclab/synclab/pkg/wire"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func newCore(t *testing.T, v ring.Variant, self uint32, state []byte) *ring.Core {
	t.Helper()
	cfg := ring.DefaultLANConfig()
	cfg.Variant = v
	c, err := ring.New(core.Env{ID: self, Members: []uint32{1, 2, 3, 4}, Now: t0, State: state}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	c.Tick(t0)
	return c
}

// variants are the ring algorithms.
var variants = []elect.Algorithm{ring.NaiveAlgorithm, ring.IDListAlgorithm, ring.ChangRobertsAlgorithm, ring.FranklinAlgorithm, ring.FredricksonLynchAlgorithm}

// eachVariant runs f for every ring algorithm over seeds seeds.
func eachVariant(t *testing.T, seeds int, f func(t *testing.T, alg elect.Algorithm, seed int64)) {
	for _, alg := range variants {
		t.Run(alg.Name, func(t *testing.T) {
			sim.Seeds(t, seeds, func(t *testing.T, seed int64) { f(t, alg, seed) })
		})
	}
}

func payload(t *testing.T, p interface{ AppendBinary([]byte) ([]byte, error) }) []byte {
	t.Helper()
	b, err := p.AppendBinary(nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestConfigRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*ring.Config)
		want string
	}{
		{"no variant", func(c *ring.Config) { c.Variant = 0 }, "unknown variant"},
		{"textbook franklin", func(c *ring.Config) { c.Textbook = true; c.Variant = ring.Franklin }, "naive ring's notes mode"},
		{"ring misses a member", func(c *ring.Config) { c.Ring = []uint32{1, 2, 3} }, "3 members in the ring, 4 members"},
		{"ring repeats", func(c *ring.Config) { c.Ring = []uint32{1, 2, 3, 3} }, "listed twice"},
		{"ring of strangers", func(c *ring.Config) { c.Ring = []uint32{1, 2, 3, 9} }, "not in the ring"},
		{"leader timeout", func(c *ring.Config) { c.LeaderTimeout = c.Heartbeat }, "must exceed Heartbeat"},
		{"election timeout", func(c *ring.Config) { c.ElectionTimeout = 100 * time.Millisecond }, "two skipped hops"},
		{"hop tries", func(c *ring.Config) { c.HopTries = 99 }, "HopTries 99"},
		{"negative", func(c *ring.Config) { c.HopTimeout = -time.Second }, "HopTimeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := ring.DefaultLANConfig()
			cfg.Variant = ring.ChangRoberts
			tc.mod(&cfg)
			_, err := ring.New(core.Env{ID: 1, Members: []uint32{1, 2, 3, 4}, Now: t0}, cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}

// TestPrioritiesRefused: the rings compare IDs; an operator who gives
// priorities is told they do nothing here rather than ignored.
func TestPrioritiesRefused(t *testing.T) {
	_, err := ring.FranklinAlgorithm.New(core.Env{ID: 1, Members: []uint32{1, 2}, Now: t0}, elect.Options{Priorities: map[uint32]uint32{2: 5}})
	if err == nil || !strings.Contains(err.Error(), "priorities") {
		t.Fatalf("error %v", err)
	}
	if _, err := ring.FranklinAlgorithm.New(core.Env{ID: 1, Members: []uint32{1, 2}, Now: t0}, elect.Options{Priorities: map[uint32]uint32{2: 0}}); err != nil {
		t.Fatal(err)
	}
}

// TestRefusesAttacks reads every field as an attacker writes it: each
// frame is refused, counted under its reason, and changes nothing (the
// term, the leader, what the core would send).
func TestRefusesAttacks(t *testing.T) {
	big := make([]uint32, 5)
	for i := range big {
		big[i] = uint32(1 + i%4)
	}
	for _, tc := range []struct {
		name   string
		v      ring.Variant
		m      core.Message
		reason string
	}{
		{"from self", ring.ChangRoberts, core.Message{From: 1, Kind: wire.KindRingAck}, "from_self"},
		{"stranger", ring.ChangRoberts, core.Message{From: 9, Kind: wire.KindRingAck}, "unknown_member"},
		{"bully kind", ring.ChangRoberts, core.Message{From: 2, Kind: wire.KindElection}, "unexpected_kind"},
		{"garbage", ring.ChangRoberts, core.Message{From: 2, Kind: wire.KindRingElection, Payload: []byte{1, 2, 3}}, "payload_truncated"},
		{"heartbeat of a term it does not own", ring.ChangRoberts, core.Message{From: 2, Kind: wire.KindRingHeartbeat, Term: epoch.Make(1, 3),
			Payload: payload(t, wire.RingHeartbeat{})}, "forged_claim"},
		{"announcement of somebody else's term", ring.ChangRoberts, core.Message{From: 2, Kind: wire.KindRingCoordinator, Term: epoch.Make(1, 3),
			Payload: payload(t, wire.RingCoordinator{Seq: 1, Origin: 2, Leader: 2})}, "forged_claim"},
		{"announcement of a stranger", ring.ChangRoberts, core.Message{From: 2, Kind: wire.KindRingCoordinator, Term: epoch.Make(1, 9),
			Payload: payload(t, wire.RingCoordinator{Seq: 1, Origin: 2, Leader: 9})}, "not_member"},
		{"term at the end of the space", ring.ChangRoberts, core.Message{From: 2, Kind: wire.KindRingHeartbeat, Term: epoch.Make(epoch.MaxRound, 2),
			Payload: payload(t, wire.RingHeartbeat{})}, "term_absurd"},
		{"term a burst ahead", ring.ChangRoberts, core.Message{From: 2, Kind: wire.KindRingHeartbeat, Term: epoch.Make(bully.TermBurst+1, 2),
			Payload: payload(t, wire.RingHeartbeat{})}, "term_too_fast"},
		{"candidate stranger", ring.ChangRoberts, core.Message{From: 4, Kind: wire.KindRingElection,
			Payload: payload(t, wire.RingElection{Seq: 1, Origin: 4, Candidate: 77})}, "not_member"},
		{"origin zero", ring.ChangRoberts, core.Message{From: 4, Kind: wire.KindRingElection,
			Payload: payload(t, wire.RingElection{Seq: 1, Candidate: 4})}, "not_member"},
		{"a list in chang-roberts", ring.ChangRoberts, core.Message{From: 4, Kind: wire.KindRingElection,
			Payload: payload(t, wire.RingElection{Seq: 1, Origin: 4, Candidate: 4, IDs: []uint32{4}})}, "implausible"},
		{"a round in chang-roberts", ring.ChangRoberts, core.Message{From: 4, Kind: wire.KindRingElection,
			Payload: payload(t, wire.RingElection{Seq: 1, Origin: 4, Candidate: 4, Round: 1})}, "implausible"},
		{"franklin round 0", ring.Franklin, core.Message{From: 4, Kind: wire.KindRingElection,
			Payload: payload(t, wire.RingElection{Seq: 1, Origin: 4, Candidate: 4})}, "implausible"},
		{"franklin absurd round", ring.Franklin, core.Message{From: 4, Kind: wire.KindRingElection,
			Payload: payload(t, wire.RingElection{Seq: 1, Origin: 4, Candidate: 4, Round: 0xffffffff})}, "implausible"},
		{"attempt far ahead", ring.ChangRoberts, core.Message{From: 4, Kind: wire.KindRingElection,
			Payload: payload(t, wire.RingElection{Seq: 1, Attempt: 0xffffffff, Origin: 4, Candidate: 4})}, "implausible"},
		{"list longer than the ring", ring.FredricksonLynch, core.Message{From: 4, Kind: wire.KindRingElection,
			Payload: payload(t, wire.RingElection{Seq: 1, Origin: 4, IDs: big})}, "implausible"},
		{"list repeats an ID", ring.IDList, core.Message{From: 4, Kind: wire.KindRingElection,
			Payload: payload(t, wire.RingElection{Seq: 1, Origin: 4, IDs: []uint32{4, 2, 4}})}, "not_member"},
		{"list names a stranger", ring.IDList, core.Message{From: 4, Kind: wire.KindRingElection,
			Payload: payload(t, wire.RingElection{Seq: 1, Origin: 4, IDs: []uint32{4, 5}})}, "not_member"},
		{"empty list", ring.FredricksonLynch, core.Message{From: 4, Kind: wire.KindRingElection,
			Payload: payload(t, wire.RingElection{Seq: 1, Origin: 4})}, "implausible"},
		{"list with a candidate", ring.FredricksonLynch, core.Message{From: 4, Kind: wire.KindRingElection,
			Payload: payload(t, wire.RingElection{Seq: 1, Origin: 4, Candidate: 3, IDs: []uint32{4}})}, "implausible"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCore(t, tc.v, 1, nil)
			c.Ready()
			before := c.Term()
			tc.m.Time = t0.Add(time.Millisecond)
			if err := c.Step(tc.m); err == nil {
				t.Fatal("accepted")
			}
			r := c.Report()
			if r.Rejected[tc.reason] != 1 {
				t.Errorf("rejected %v, want 1 %q", r.Rejected, tc.reason)
			}
			if c.Term() != before || r.Leader != 0 {
				t.Errorf("term %#x -> %#x, leader %d", before, c.Term(), r.Leader)
			}
			if rd := c.Ready(); len(rd.Messages) != 0 || rd.State != nil {
				t.Errorf("a refused frame made it send %d messages, state %v", len(rd.Messages), rd.State)
			}
		})
	}
}

// TestStaleAndDuplicateHops: a hop is acknowledged every time it arrives
// but acted on once, and a hop of an older term is acknowledged (the ack
// carries the newer term, which tells the sender) and dropped.
func TestStaleAndDuplicateHops(t *testing.T) {
	c := newCore(t, ring.ChangRoberts, 2, bully.EncodeState(epoch.Make(3, 4)))
	c.Ready()
	hop := core.Message{From: 1, Kind: wire.KindRingElection, Term: epoch.Make(3, 4), Time: t0,
		Payload: payload(t, wire.RingElection{Seq: 7, Origin: 1, Candidate: 1})}
	for range 3 {
		if err := c.Step(hop); err != nil {
			t.Fatal(err)
		}
	}
	rd := c.Ready()
	var acks, elections int
	for _, m := range rd.Messages {
		switch m.Kind {
		case wire.KindRingAck:
			acks++
		case wire.KindRingElection:
			elections++ // 2 replaces 1 by itself
		}
	}
	if acks != 3 || elections != 1 || c.Detail().Duplicates != 2 {
		t.Errorf("%d acks, %d elections, %d duplicates; want 3, 1, 2", acks, elections, c.Detail().Duplicates)
	}
	stale := hop
	stale.Term, stale.Payload = epoch.Make(2, 4), payload(t, wire.RingElection{Seq: 8, Origin: 1, Candidate: 1})
	if err := c.Step(stale); err != nil {
		t.Fatal(err)
	}
	rd = c.Ready()
	if len(rd.Messages) != 1 || rd.Messages[0].Kind != wire.KindRingAck || rd.Messages[0].Term != epoch.Make(3, 4) {
		t.Errorf("stale hop: sent %+v, want one ack of the current term", rd.Messages)
	}
	if c.Detail().StaleMessages != 1 {
		t.Errorf("stale messages %d", c.Detail().StaleMessages)
	}
}

// TestStateRefused: a corrupt or absurd persisted term keeps the core from
// starting (core.ErrState), rather than letting it claim a term twice.
func TestStateRefused(t *testing.T) {
	cfg := ring.DefaultLANConfig()
	cfg.Variant = ring.Franklin
	for _, state := range [][]byte{{1, 2, 3}, bully.EncodeState(epoch.Make(epoch.MaxRound, 1))} {
		_, err := ring.New(core.Env{ID: 1, Members: []uint32{1, 2}, Now: t0, State: state}, cfg)
		if !errors.Is(err, core.ErrState) {
			t.Errorf("state %x: %v, want core.ErrState", state, err)
		}
	}
}

// TestStartsAboveReservation: a member that ran bully with reservations
// (its state in bully's second format) and now runs a ring election may
// have claimed its reservation: the ring starts from it, not from the
// lower term it followed, so it never decides a term at or below one it
// may have led.
func TestStartsAboveReservation(t *testing.T) {
	term, reserved := epoch.Make(3, 4), epoch.Make(5, 2)
	c := newCore(t, ring.ChangRoberts, 2, bully.EncodeReserved(term, reserved))
	if got := c.Term(); got < reserved {
		t.Fatalf("ring started at term %s, below the reservation %s on disk", epoch.Format(got), epoch.Format(reserved))
	}
}

// TestNeverLeadsARestoredTermAgain: member 4 starts from a term it owns
// (its reservation as bully, or its own last term as a ring member), one
// it may have led in its earlier life. An announcement naming it for that
// very term (member 3 decided it from a lower term; or 4's own, circling
// back after a quick restart) must not make it lead the term a second
// time (a fence counted from the term twice): it starts an election for a
// term above instead. FuzzRingRestored found it (testdata
// ac5ee4a7638bd6df: member 1 heartbeat the term of its reservation).
func TestNeverLeadsARestoredTermAgain(t *testing.T) {
	own := epoch.Make(5, 4)
	for name, state := range map[string][]byte{
		"reservation": bully.EncodeReserved(epoch.Make(3, 2), own),
		"own term":    bully.EncodeState(own),
	} {
		t.Run(name, func(t *testing.T) {
			c := newCore(t, ring.ChangRoberts, 4, state)
			c.Ready()
			if err := c.Step(core.Message{From: 3, To: 4, Kind: wire.KindRingCoordinator, Term: own, Time: t0.Add(time.Millisecond),
				Payload: payload(t, wire.RingCoordinator{Seq: 1, Origin: 3, Leader: 4})}); err != nil {
				t.Fatal(err)
			}
			elections := 0
			for _, m := range c.Ready().Messages {
				if m.Kind == wire.KindRingHeartbeat && m.Term <= own {
					t.Fatalf("heartbeat of term %s, which it started from", epoch.Format(m.Term))
				}
				if m.Kind == wire.KindRingElection {
					elections++
				}
			}
			if l, tm, _ := c.Leader(); l == 4 && tm <= own {
				t.Fatalf("leads term %s again", epoch.Format(tm))
			}
			if elections == 0 {
				t.Fatal("no election for a term above")
			}
		})
	}
}

// TestSimResign: the leader resigns; its predecessor runs at once, the
// next highest (3) takes over, and the resigner follows it for good.
func TestSimResign(t *testing.T) {
	eachVariant(t, 10, func(t *testing.T, alg elect.Algorithm, seed int64) {
		s := sim.New(sim.Config{Seed: seed})
		c := electtest.New(t, s, alg, []uint32{1, 2, 3, 4}, elect.Options{})
		c.Converge(3 * time.Second)
		if err := s.Do(4, func(cc core.Core) {
			if err := cc.(elect.Elector).Resign(s.Clock(4).Now()); err != nil {
				t.Fatal(err)
			}
		}); err != nil {
			t.Fatal(err)
		}
		start := s.Elapsed()
		if !s.RunUntil(func() bool { c.Check(); return c.Agreed(3) }, 2*time.Second) {
			t.Fatalf("3 did not take over: %s\n%s", c.Views(), s.Log())
		}
		if d := s.Elapsed() - start; d > 300*time.Millisecond {
			t.Errorf("takeover after resign took %v", d)
		}
		c.Run(3 * time.Second)
		if !c.Agreed(3) {
			t.Fatalf("leadership moved after the resignation: %s", c.Views())
		}
		c.Claims()
	})
}

// TestSimIsolatedMemberElectsItself: a member cut off from everybody skips
// every successor in turn and elects itself (rings have no quorum), in a
// term of its own; the others keep their leader; after the heal the
// highest member leads everywhere.
func TestSimIsolatedMemberElectsItself(t *testing.T) {
	eachVariant(t, 10, func(t *testing.T, alg elect.Algorithm, seed int64) {
		s := sim.New(sim.Config{Seed: seed, DefaultLink: sim.LinkConfig{Delay: 100 * time.Microsecond, Jitter: time.Millisecond}})
		c := electtest.New(t, s, alg, []uint32{1, 2, 3, 4, 5}, elect.Options{})
		c.Converge(3 * time.Second)
		c.Run(time.Second)
		_, term, _ := c.Elector(5).Leader()
		s.Isolate(3)
		if !s.RunUntil(func() bool { c.Check(); l, _, _ := c.Elector(3).Leader(); return l == 3 }, 3*time.Second) {
			t.Fatalf("isolated 3 did not elect itself: %s", c.Views())
		}
		c.Run(500 * time.Millisecond)
		for _, id := range []uint32{1, 2, 4, 5} {
			if l, tm, _ := c.Elector(id).Leader(); l != 5 || tm != term {
				t.Errorf("%d follows %d in %#x while 3 is cut off", id, l, tm)
			}
		}
		s.Heal()
		c.Converge(3 * time.Second)
		c.Claims()
		if c.Overlap == 0 {
			t.Error("no time with two leaders measured: the split brain went unseen")
		}
	})
}
