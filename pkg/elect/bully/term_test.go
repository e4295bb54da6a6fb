package bully

import (
	"errors"
	"testing"
	"time"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/epoch"
	"github.com/synclab/synclab/pkg/wire"
)

var testEpoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// forge steps a frame nobody in the network sent into node to, as a forger
// on the LAN (or a buggy member) would, and drains what it wants done. It
// returns the core's verdict.
func (n *network) forge(to, from uint32, k wire.Kind, term uint64, flags uint8) error {
	n.t.Helper()
	var p []byte
	prio := uint32(0)
	for _, m := range n.members {
		if m.ID == from {
			prio = m.Priority
		}
	}
	switch k {
	case wire.KindCoordinator:
		p, _ = wire.Coordinator{Priority: prio, Flags: flags}.AppendBinary(nil)
	case wire.KindLeaderHeartbeat:
		p, _ = wire.LeaderHeartbeat{Priority: prio, Flags: flags}.AppendBinary(nil)
	case wire.KindElection:
		p, _ = wire.Election{Priority: prio, Reason: wire.ReasonStartup}.AppendBinary(nil)
	case wire.KindAnswer:
		p, _ = wire.Answer{Priority: prio}.AppendBinary(nil)
	}
	err := n.nodes[to].Step(core.Message{From: from, To: to, Kind: k, Term: term, Payload: p, Time: n.now})
	n.drain(to)
	return err
}

// TestAbsurdTermRefused is the first attack: a COORDINATOR "from 3"
// with term 0xffffffff00000003 sent to node 2. It used to panic half a
// second later (no term left to claim) and on every restart after; now it
// is refused, counted, and the cluster keeps its leader and term.
func TestAbsurdTermRefused(t *testing.T) {
	n := newNetwork(t, ids(3), nil)
	term := n.settle(3, 100)
	for _, k := range []wire.Kind{wire.KindCoordinator, wire.KindLeaderHeartbeat, wire.KindElection, wire.KindAnswer} {
		from := uint32(3)
		if k == wire.KindElection {
			from = 1
		}
		err := n.forge(2, from, k, 0xffffffff00000003, 0)
		if !errors.Is(err, epoch.ErrAbsurd) {
			t.Errorf("%v with an absurd term: %v, want refused as absurd", k, err)
		}
	}
	n.tick(100)
	if got := n.stable(3); got != term {
		t.Errorf("term moved %#x -> %#x", term, got)
	}
	if st := n.nodes[2].Report(); st.Rejected["term_absurd"] != 4 {
		t.Errorf("rejected %v, want term_absurd 4", st.Rejected)
	}
	if got := n.persisted(2); got != term {
		t.Errorf("persisted term %#x, want %#x", got, term)
	}
}

// TestTermJumpsPaced: one burst of rounds at once, then the protocol's pace
// (one round per member per answer timeout).
func TestTermJumpsPaced(t *testing.T) {
	n := newNetwork(t, ids(3), nil)
	term := n.settle(3, 100)
	far := MakeTerm(TermRound(term)+TermBurst+1, 3)
	if err := n.forge(1, 3, wire.KindLeaderHeartbeat, far, 0); !errors.Is(err, epoch.ErrTooFast) {
		t.Fatalf("a jump past the burst: %v", err)
	}
	// A member legitimately far ahead (a whole burst of elections while
	// this one was away) is followed at once.
	ahead := MakeTerm(TermRound(term)+TermBurst, 3)
	if err := n.forge(1, 3, wire.KindLeaderHeartbeat, ahead, 0); err != nil {
		t.Fatalf("a burst ahead: %v", err)
	}
	if _, tm, _ := n.nodes[1].Leader(); tm != ahead {
		t.Fatalf("node 1 in term %#x, want %#x", tm, ahead)
	}
	// Now the credit is spent: one more round is too fast, until the pace
	// (3 members per 5-tick answer timeout) gives it back.
	next := MakeTerm(TermRound(ahead)+1, 3)
	if err := n.forge(1, 3, wire.KindLeaderHeartbeat, next, 0); !errors.Is(err, epoch.ErrTooFast) {
		t.Fatalf("one round more at once: %v", err)
	}
	n.down[1] = true // keep it out of the ring's traffic while it rests
	for range 2 {
		n.now = n.now.Add(10 * time.Millisecond)
		n.nodes[1].Tick(n.now)
	}
	n.down[1] = false
	if err := n.forge(1, 3, wire.KindLeaderHeartbeat, next, 0); err != nil {
		t.Fatalf("one round after two ticks: %v", err)
	}
}

func TestPersistedAbsurdTermRefused(t *testing.T) {
	for _, term := range []uint64{0xffffffff00000003, MakeTerm(LastTermRound+1, 1)} {
		cfg := DefaultLANConfig()
		cfg.Members = ids(3)
		_, err := New(core.Env{ID: 2, State: appendState(nil, term)}, cfg)
		var se *StateError
		if !errors.As(err, &se) || !errors.Is(CheckTerm(term), epoch.ErrAbsurd) {
			t.Errorf("term %#x: New = %v, want a StateError", term, err)
		}
	}
}

// TestTermsExhaustedDegrades: a node that really has no term left to claim
// says so once, never panics, and follows whoever can claim.
func TestTermsExhaustedDegrades(t *testing.T) {
	// A whole cluster at the last round, owned by a member above them all:
	// no member owns a term above it.
	n := newNetwork(t, ids(3), nil)
	for id := uint32(1); id <= 3; id++ {
		n.crash(id)
		n.state[id] = appendState(nil, MakeTerm(LastTermRound, 9))
		n.start(id)
	}
	n.tick(300)
	// The highest-ranked member is the one that tries to claim (the others
	// are answered by it and wait for its COORDINATOR): it says why it
	// cannot, once, and nobody leads.
	st := n.nodes[3].Report()
	if n.nodes[3].Detail().Exhausted == "" || st.Role == RoleLeader || st.Rejected["term_exhausted"] == 0 {
		t.Errorf("node 3: %+v", st)
	}
	if ev := n.eventsNamed(EventTermsExhausted); len(ev) != 1 || ev[0].node != 3 {
		t.Errorf("terms_exhausted events %v, want one from node 3", ev)
	}
	for id := uint32(1); id <= 3; id++ {
		if r := n.nodes[id].Role(); r == RoleLeader {
			t.Errorf("node %d leads", id)
		}
	}
}

// TestForgedClaimInLeadersNameContested is the Berkeley attack's first
// frame against electd: a heartbeat "from the leader" in a newer term it
// never claimed. The follower takes it (it is plausible), but the real
// leader's next heartbeat is of an older term: the follower tells it, and
// the leader takes the cluster back above the forged term. The cluster
// keeps its leader throughout.
func TestForgedClaimInLeadersNameContested(t *testing.T) {
	n := newNetwork(t, ids(3), nil)
	term := n.settle(3, 100)
	forged := MakeTerm(TermRound(term)+1, 3)
	if err := n.forge(2, 3, wire.KindLeaderHeartbeat, forged, 0); err != nil {
		t.Fatal(err)
	}
	if l, tm, _ := n.nodes[2].Leader(); l != 3 || tm != forged {
		t.Fatalf("node 2 follows %d in %#x", l, tm)
	}
	n.deliver()
	n.tick(10) // two heartbeats
	got := n.stable(3)
	if got <= forged {
		t.Errorf("term %#x, want above the forged %#x", got, forged)
	}
	if c := n.nodes[2].Detail().LeaderContested; c == 0 {
		t.Error("the stale heartbeat was not contested")
	}
	for _, e := range n.eventsNamed(EventElected) {
		if e.node != 3 {
			t.Errorf("node %d was elected", e.node)
		}
	}
}

// TestFailedWriteNeverAnnouncesTerm: a node whose disk is full never sends
// a term it has not persisted (network.drain checks every message), keeps
// the term pending, announces it once the disk works, and never claims the
// same term twice across restarts (network.drain checks every claim).
func TestFailedWriteNeverAnnouncesTerm(t *testing.T) {
	n := newNetwork(t, ids(3), nil)
	n.settle(3, 100)
	n.diskFull[2] = true
	n.crash(3) // node 2 takes over: a new term it cannot write
	n.tick(100)
	if n.nodes[2].Role() != RoleLeader {
		t.Fatalf("node 2: %v", n.nodes[2].Role())
	}
	if got := n.persisted(2); got >= n.nodes[2].Term() {
		t.Fatalf("persisted %#x although the disk is full", got)
	}
	// It restarts before the disk is fixed: the claim never left, so it
	// may make it again; it must not make two different claims of one
	// term, which drain would catch.
	n.crash(2)
	n.start(2)
	n.tick(50)
	n.diskFull[2] = false
	n.tick(50)
	term := n.stable(2)
	if got := n.persisted(2); got != term {
		t.Errorf("persisted %#x, leads %#x", got, term)
	}
}
