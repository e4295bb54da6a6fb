package sim_test

import (
	"errors"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/node"
	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/wire"
)

// TestAgreementChecked: with SetAgreement, a node's core sees
// core.Message.Checked as a daemon's does. Members 1 and 2 announce the
// same configuration, member 3 none (an older build), member 4 another
// lease. 1 and 2 see each other's frames checked, and only once each
// incarnation's announcement came: a restarted 2's new incarnation is
// refused, never passed unchecked, until then. 3's frames are refused by
// 1 for three announce intervals from the first one heard, then admitted
// unchecked; 3 itself checks nothing. 4's frames never reach 1's core (the
// configurations differ: 4 stands back), nor 1's reach 4's.
func TestAgreementChecked(t *testing.T) {
	s := sim.New(sim.Config{Seed: 1})
	probeOf := probes(s, 4, 1, core.Broadcast, false)
	same := &node.Agreement{Algorithm: "probe", Params: map[string]string{"lease": "1s"}}
	other := &node.Agreement{Algorithm: "probe", Params: map[string]string{"lease": "2s"}}
	s.SetAgreement(1, same)
	s.SetAgreement(2, same)
	s.SetAgreement(4, other)
	type pair struct{ to, from uint32 }
	refused := map[pair][]error{}
	var lastUnverified3 time.Duration
	s.OnRefused(func(r sim.Refused) {
		refused[pair{r.Node, r.From}] = append(refused[pair{r.Node, r.From}], r.Err)
		if r.Node == 1 && r.From == 3 && errors.Is(r.Err, node.ErrConfigUnverified) {
			lastUnverified3 = r.At
		}
	})
	s.Run(5 * time.Second)

	count := func(to, from uint32) (checked, unchecked int) {
		for _, g := range probeOf(to).got {
			if g.from != from {
				continue
			}
			if g.checked {
				checked++
			} else {
				unchecked++
			}
		}
		return checked, unchecked
	}
	if c, u := count(1, 2); c == 0 || u != 0 {
		t.Fatalf("member 1 got %d checked, %d unchecked frames from member 2 (same configuration): want all checked", c, u)
	}
	if c, u := count(1, 3); c != 0 || u == 0 {
		t.Fatalf("member 1 got %d checked, %d unchecked frames from member 3 (older build): want some, none checked", c, u)
	}
	// Member 1 starts (StartGrace, 500 ms: two of four members agree, no
	// majority) refusing everything, then refuses 3's incarnation for three
	// announce intervals (3 s) from the first frame of it it heard.
	if lastUnverified3 < 3*time.Second || lastUnverified3 > 3600*time.Millisecond {
		t.Fatalf("member 1 refused member 3's frames until %v: want StartGrace and three announce intervals", lastUnverified3)
	}
	if c, _ := count(3, 1); c != 0 {
		t.Fatalf("member 3 (no agreement) got %d checked frames", c)
	}
	// 4 is in the minority: it stands back (its core sends nothing), and
	// 1 refuses whatever else of its comes.
	if c, u := count(1, 4); c+u != 0 || s.Node(4).Standing() != node.StandingSteppedBack {
		t.Fatalf("member 1 got %d frames from member 4 (another lease), which stands %v", c+u, s.Node(4).Standing())
	}
	if c, u := count(4, 1); c+u != 0 {
		t.Fatalf("member 4 (another lease) got %d frames from member 1", c+u)
	}

	// A restarted member's new incarnation: refused until its
	// announcement came (the node asks for one), never passed unchecked;
	// then checked.
	s.Crash(2)
	s.Run(100 * time.Millisecond)
	before := len(probeOf(1).got)
	s.Restart(2)
	s.Run(2 * time.Second)
	var c2, u2 int
	for _, g := range probeOf(1).got[before:] {
		if g.from == 2 {
			if g.checked {
				c2++
			} else {
				u2++
			}
		}
	}
	if c2 == 0 || u2 != 0 {
		t.Fatalf("member 1 got %d checked, %d unchecked frames from member 2's new incarnation: want all checked", c2, u2)
	}
}

// TestAgreementRefusalTwoWay: a refusal is a cut both ways. Members 1 and
// 2 announce the same configuration, member 3 none (an older build): while
// 1 and 2 refuse 3's incarnation (three announce intervals), their cores'
// frames are withheld from 3 too, so 3 hears them no more than they hear
// it, as across a broken link; once 3 is admitted unchecked, it hears them
// again. Before, 3 heard everyone while nobody heard it: a member of a
// permission algorithm there counted a majority heard and granted while
// the majority gave it up on the silence it saw (Lamport's queue, mixed
// builds, mutextest seed 2: two holders at 1.28 s).
func TestAgreementRefusalTwoWay(t *testing.T) {
	s := sim.New(sim.Config{Seed: 1})
	probeOf := probes(s, 3, 1, core.Broadcast, false)
	same := &node.Agreement{Algorithm: "probe", Params: map[string]string{"lease": "1s"}}
	s.SetAgreement(1, same)
	s.SetAgreement(2, same)
	var first, last [3]time.Duration // by refusing member 1, 2
	s.OnRefused(func(r sim.Refused) {
		if r.From == 3 && errors.Is(r.Err, node.ErrConfigUnverified) {
			if first[r.Node] == 0 {
				first[r.Node] = r.At
			}
			last[r.Node] = r.At
		}
	})
	s.Run(6 * time.Second)
	start := s.Config().Start
	for _, id := range []uint32{1, 2} {
		if first[id] == 0 {
			t.Fatalf("member %d never refused member 3's frames", id)
		}
		// Frames in flight when the first refusal came may still land.
		from, to := start.Add(first[id]+10*time.Millisecond), start.Add(last[id])
		var during, after int
		for _, g := range probeOf(3).got {
			switch {
			case g.from != id:
			case g.at.After(from) && g.at.Before(to):
				during++
			case g.at.After(to.Add(100 * time.Millisecond)):
				after++
			}
		}
		if during != 0 {
			t.Errorf("member 3 got %d frames of member %d's core while %d refused its frames [%v, %v]: a one-way cut", during, id, id, first[id], last[id])
		}
		if after == 0 {
			t.Errorf("member 3 got no frame of member %d's core after it was admitted at %v", id, last[id])
		}
		if d := s.Node(id).Status().Dropped["withheld_"+wire.KindHeartbeat.String()]; d == 0 {
			t.Errorf("member %d counted no withheld frame", id)
		}
	}
}

// TestHeldEmptyReadyNotCarriedOut: a node whose configuration agreement
// holds its core back (here: starting, StartGrace) and that has nothing of
// its own to send hands its driver a held, empty Ready; the daemon's loop
// does nothing with it (internal/daemon's process: no Advance, no
// outcomes drained), and neither does the simulator, with or without
// write latency: every Ready of member 1's the simulator carries out
// (OnReady) while it starts is one with a frame of its own (with the rule
// taken out, 135 of 137 were not). Not reached here: a held empty Ready
// after the node's own saves (saveDebt), which the simulator waits for
// without carrying the Ready out (payDebt): this run's saves (2's epoch,
// with a key) come with frames of 1's own.
func TestHeldEmptyReadyNotCarriedOut(t *testing.T) {
	for _, latency := range []time.Duration{0, 3 * time.Millisecond} {
		// With a key, a node saves each member's epoch before it takes
		// the first frame of it: its own saves while it starts.
		key := wire.Key{ID: 7, Secret: []byte("0123456789abcdef0123456789abcdef")}
		s := sim.New(sim.Config{Seed: 1, Keys: []wire.Key{key}})
		probes(s, 4, 1, core.Broadcast, false)
		// Members 1 and 2 agree, two of four: no majority, 1 starts for
		// StartGrace, and saves 2's epoch when its announcement comes.
		a := &node.Agreement{Algorithm: "probe", Params: map[string]string{"lease": "1s"}}
		s.SetAgreement(1, a)
		s.SetAgreement(2, a)
		if latency > 0 {
			s.SetWriteLatency(1, latency, latency)
		}
		sent := map[time.Duration]bool{}
		s.OnSend(func(f sim.SentFrame) {
			if f.From == 1 {
				sent[s.Elapsed()] = true
			}
		})
		var readies, empty int
		s.OnReady(func(r sim.Ready) {
			if r.Node != 1 || s.Node(1).Standing() != node.StandingStarting {
				return
			}
			readies++
			if !sent[r.At] {
				empty++
				if empty == 1 {
					t.Errorf("latency %v: member 1's Ready at %v carried out while it starts, with no frame of its own", latency, r.At)
				}
			}
		})
		refused := 0
		s.OnRefused(func(r sim.Refused) {
			if r.Node == 1 && errors.Is(r.Err, node.ErrStarting) {
				refused++
			}
		})
		s.Run(node.DefaultStartGrace - 50*time.Millisecond)
		if refused == 0 || readies == 0 {
			t.Fatalf("latency %v: member 1 refused %d frames as starting, carried out %d Readies: the test no longer reaches a held Ready", latency, refused, readies)
		}
		if empty > 0 {
			t.Errorf("latency %v: %d of member 1's %d Readies while it started were held and empty, and carried out", latency, empty, readies)
		}
		if w := s.Counters(1).WriteWait; latency > 0 && w == 0 {
			t.Errorf("latency %v: member 1 waited for no save while it started", latency)
		}
	}
}
