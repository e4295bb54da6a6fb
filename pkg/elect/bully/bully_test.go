package bully

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/wire"
)

// settle ticks until every live node follows want, or fails after limit
// ticks.
func (n *network) settle(want uint32, limit int) uint64 {
	n.t.Helper()
	for i := 0; i < limit; i++ {
		if n.agree(want) {
			return n.stable(want)
		}
		n.tick(1)
	}
	return n.stable(want)
}

func (n *network) agree(want uint32) bool {
	for _, id := range n.order {
		if n.down[id] {
			continue
		}
		b := n.nodes[id]
		l, tm, _ := b.Leader()
		if l != want || tm != n.nodes[want].Term() {
			return false
		}
	}
	return n.nodes[want].Role() == RoleLeader
}

func TestStartupElectsHighestWithWorstCaseMessages(t *testing.T) {
	for size := 1; size <= 9; size++ {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			n := newNetwork(t, ids(size), nil)
			n.deliver()
			top := uint32(size)
			n.settle(top, 100)
			// Every node starts by asking every node above it, and is
			// answered by each: the notes' worst case,
			// (N-1)+(N-2)+...+1 ELECTION messages, plus one COORDINATOR to
			// each of the N-1 others.
			pairs := size * (size - 1) / 2
			if got := n.delivered[wire.KindElection]; got != pairs {
				t.Errorf("ELECTION delivered %d, want %d", got, pairs)
			}
			if got := n.delivered[wire.KindAnswer]; got != pairs {
				t.Errorf("ANSWER delivered %d, want %d", got, pairs)
			}
			if got := n.delivered[wire.KindCoordinator]; got != size-1 {
				t.Errorf("COORDINATOR delivered %d, want %d", got, size-1)
			}
			// The first term ever claimed is the one the top member owns in
			// round 0.
			if _, term, _ := n.nodes[top].Leader(); term != MakeTerm(0, top) {
				t.Errorf("term %d, want %d", term, MakeTerm(0, top))
			}
			if el := n.eventsNamed(EventElected); len(el) != 1 || el[0].node != top {
				t.Errorf("elected events %v, want one from %d", el, top)
			}
		})
	}
}

func TestBestCaseSecondHighestTakesOver(t *testing.T) {
	for size := 2; size <= 9; size++ {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			n := newNetwork(t, ids(size), nil)
			top, second := uint32(size), uint32(size-1)
			old := n.settle(top, 100)
			n.tick(3) // mid-way between heartbeats
			n.crash(top)
			n.resetCounts()
			n.events = nil
			term := n.settle(second, 100)
			// The notes' best case: the second-highest notices, asks
			// nobody (the only member above it is the dead leader) and
			// announces itself to the N-2 others.
			if got := n.delivered[wire.KindElection]; got != 0 {
				t.Errorf("ELECTION delivered %d, want 0", got)
			}
			if got := n.delivered[wire.KindAnswer]; got != 0 {
				t.Errorf("ANSWER delivered %d, want 0", got)
			}
			if got := n.delivered[wire.KindCoordinator]; got != size-2 {
				t.Errorf("COORDINATOR delivered %d, want N-2 = %d", got, size-2)
			}
			if term <= old {
				t.Errorf("new term %d not above old %d", term, old)
			}
			for _, e := range n.eventsNamed(EventElectionStarted) {
				if e.node != second {
					t.Errorf("node %d started an election: %v", e.node, e)
				}
			}
		})
	}
}

func TestLowestDetectsFirstStaysWithinNotesBound(t *testing.T) {
	const size = 7
	// The lowest member notices first (shortest leader timeout): the notes'
	// worst-case initiator.
	n := newNetwork(t, ids(size), func(id uint32, c *Config) {
		if id == 1 {
			c.LeaderTimeout = 150 * time.Millisecond
		}
	})
	n.settle(size, 100)
	n.crash(size)
	n.resetCounts()
	n.settle(size-1, 200)
	bound := (size - 1) * size / 2 // (N-1)+(N-2)+...+1
	if got := n.delivered[wire.KindElection]; got > bound {
		t.Errorf("ELECTION delivered %d, above the notes' O(N^2) bound %d", got, bound)
	}
	if got := n.delivered[wire.KindElection]; got == 0 {
		t.Errorf("no ELECTION: the lowest node did not run")
	}
}

func TestPriorityBeforeID(t *testing.T) {
	ms := []Member{{ID: 1, Priority: 5}, {ID: 2, Priority: 5}, {ID: 3}, {ID: 9, Priority: 1}}
	n := newNetwork(t, ms, nil)
	n.settle(2, 100) // priority 5 beats 9's priority 1; ID breaks the tie
	n.crash(2)
	n.settle(1, 200)
	n.crash(1)
	n.settle(9, 200)
}

func TestFalseSuspicionKeepsLeaderAndTerm(t *testing.T) {
	n := newNetwork(t, ids(5), nil)
	term := n.settle(5, 100)
	// Node 2 stops hearing the leader (its inbound link is cut) long
	// enough to suspect it, then the link comes back.
	n.cut[[2]uint32{5, 2}] = true
	n.events = nil
	n.tick(ticks(DefaultLANConfig().LeaderTimeout) + 10)
	delete(n.cut, [2]uint32{5, 2})
	if got := n.settle(5, 100); got != term {
		t.Errorf("term moved %d -> %d on a false suspicion", term, got)
	}
	if len(n.eventsNamed(EventElectionStarted)) == 0 {
		t.Fatal("node 2 never suspected the leader: test is void")
	}
	for _, e := range n.events {
		if e.Name == EventLeaderChanged || e.Name == EventDemoted || e.Name == EventElected {
			t.Errorf("unexpected %v", e)
		}
		if e.node != 2 && e.Name != EventElectionStarted {
			// Only node 2 noticed anything.
			if e.Name == EventLeaderLost {
				t.Errorf("node %d lost the leader: %v", e.node, e)
			}
		}
	}
}

func TestRecoveredTopTakesOverInHigherTerm(t *testing.T) {
	n := newNetwork(t, ids(5), nil)
	n.settle(5, 100)
	n.crash(5)
	t4 := n.settle(4, 100)
	n.start(5) // persisted term is below t4: it must learn t4 and claim above it
	t5 := n.settle(5, 100)
	if t5 <= t4 {
		t.Fatalf("recovered leader's term %d not above %d", t5, t4)
	}
	var demoted bool
	for _, e := range n.eventsNamed(EventDemoted) {
		demoted = demoted || e.node == 4
	}
	if !demoted {
		t.Error("node 4 was never demoted")
	}
}

func TestDeposedLeaderComesBack(t *testing.T) {
	t.Run("outranks the new leader: takes over above its term", func(t *testing.T) {
		n := newNetwork(t, ids(5), nil)
		n.settle(5, 100)
		n.isolate(5, true)
		// 5 still believes it leads its old term.
		t4 := n.settle4(100)
		n.isolate(5, false)
		t5 := n.settle(5, 200)
		if t5 <= t4 {
			t.Fatalf("term %d not above %d", t5, t4)
		}
	})
	t.Run("outranked: steps down", func(t *testing.T) {
		n := newNetwork(t, ids(5), nil)
		n.settle(5, 100)
		n.crash(5)
		n.settle(4, 100)
		n.isolate(4, true)
		n.settle3(100)
		n.start(5)
		// {5,3,2,1} elect 5; 4 is cut off and still leads its old term.
		n.tick(60)
		if n.nodes[4].Role() != RoleLeader {
			t.Fatal("4 should still believe it leads")
		}
		n.isolate(4, false)
		n.settle(5, 200)
	})
}

// isolate cuts (or restores) every link to and from id.
func (n *network) isolate(id uint32, cut bool) {
	for _, o := range n.order {
		if o == id {
			continue
		}
		for _, l := range [][2]uint32{{id, o}, {o, id}} {
			if cut {
				n.cut[l] = true
			} else {
				delete(n.cut, l)
			}
		}
	}
}

// settle4 and settle3 wait for the nodes outside an isolated leader to agree
// on the next one.
func (n *network) settle4(limit int) uint64 { return n.settleWithout(4, 5, limit) }
func (n *network) settle3(limit int) uint64 { return n.settleWithout(3, 4, limit) }

func (n *network) settleWithout(want, isolated uint32, limit int) uint64 {
	n.t.Helper()
	for i := 0; i < limit; i++ {
		ok := n.nodes[want].Role() == RoleLeader
		for _, id := range n.order {
			if id == isolated || n.down[id] {
				continue
			}
			if l, tm, _ := n.nodes[id].Leader(); l != want || tm != n.nodes[want].Term() {
				ok = false
			}
		}
		if ok {
			return n.nodes[want].Term()
		}
		n.tick(1)
	}
	n.t.Fatalf("nodes without %d never agreed on %d: %v", isolated, want, n.events)
	return 0
}

func TestResign(t *testing.T) {
	n := newNetwork(t, ids(5), nil)
	t5 := n.settle(5, 100)
	if err := n.nodes[4].Resign(n.now); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("follower Resign: %v, want ErrNotLeader", err)
	}
	n.events = nil
	if err := n.nodes[5].Resign(n.now); err != nil {
		t.Fatal(err)
	}
	n.drain(5)
	n.deliver()
	// The election starts at once: 4 (next below the resigner) took over
	// without waiting for any timeout.
	t4 := n.stable(4)
	if t4 <= t5 {
		t.Fatalf("term %d not above %d", t4, t5)
	}
	// 5 sits out: it follows 4 although it outranks it, heartbeat after
	// heartbeat.
	n.tick(200)
	n.stable(4)
	if !n.nodes[5].Detail().Yielding {
		t.Error("5 not reported yielding")
	}
	for _, e := range n.eventsNamed(EventElected) {
		if e.node == 5 {
			t.Errorf("resigner re-elected itself: %v", e)
		}
	}
	// When 4 fails, 5 competes again and wins.
	n.crash(4)
	n.settle(5, 200)
}

func TestResignAlone(t *testing.T) {
	n := newNetwork(t, ids(1), nil)
	t1 := n.settle(1, 100)
	if err := n.nodes[1].Resign(n.now); err != nil {
		t.Fatal(err)
	}
	n.drain(1)
	if l, _, _ := n.nodes[1].Leader(); l != 0 {
		t.Fatalf("leader %d right after resigning", l)
	}
	if t2 := n.settle(1, 200); t2 <= t1 {
		t.Fatalf("term %d not above %d", t2, t1)
	}
}

func TestStaleMessagesAnsweredWithCurrentTerm(t *testing.T) {
	n := newNetwork(t, ids(3), nil)
	term := n.settle(3, 100)
	leader := n.nodes[3]
	el, _ := wire.Election{Priority: 0, Reason: wire.ReasonStartup}.AppendBinary(nil)
	if err := leader.Step(core.Message{From: 1, Kind: wire.KindElection, Term: 0, Payload: el}); err != nil {
		t.Fatal(err)
	}
	rd := leader.Ready()
	if rd.State != nil {
		t.Error("a stale message moved the term")
	}
	var kinds []wire.Kind
	for _, m := range rd.Messages {
		if m.To != 1 || m.Term != term {
			t.Errorf("reply %+v: want to 1 in term %d", m, term)
		}
		kinds = append(kinds, m.Kind)
	}
	if fmt.Sprint(kinds) != fmt.Sprint([]wire.Kind{wire.KindAnswer, wire.KindCoordinator}) {
		t.Errorf("replies %v, want answer+coordinator", kinds)
	}
	// A stale heartbeat from a deposed leader gets the current COORDINATOR.
	hb, _ := wire.LeaderHeartbeat{}.AppendBinary(nil)
	if err := leader.Step(core.Message{From: 2, Kind: wire.KindLeaderHeartbeat, Term: MakeTerm(0, 2), Payload: hb}); err != nil {
		t.Fatal(err)
	}
	rd = leader.Ready()
	if len(rd.Messages) != 1 || rd.Messages[0].Kind != wire.KindCoordinator || rd.Messages[0].To != 2 {
		t.Errorf("reply to stale heartbeat: %+v", rd.Messages)
	}
	if leader.Role() != RoleLeader || leader.Term() != term {
		t.Error("stale messages changed the leader")
	}
}

func TestStepRejects(t *testing.T) {
	ms := []Member{{ID: 1}, {ID: 2, Priority: 3}, {ID: 3}}
	mk := func(p interface{ AppendBinary([]byte) ([]byte, error) }) []byte {
		b, err := p.AppendBinary(nil)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, tc := range []struct {
		name string
		to   uint32
		m    core.Message
		want error
	}{
		{"from self", 3, core.Message{From: 3, Kind: wire.KindElection}, ErrFromSelf},
		{"stranger", 3, core.Message{From: 7, Kind: wire.KindElection}, core.ErrUnknownMember},
		{"other kind", 3, core.Message{From: 1, Kind: wire.KindHeartbeat}, core.ErrUnexpectedKind},
		{"forged claim", 3, core.Message{From: 2, Kind: wire.KindCoordinator, Term: MakeTerm(4, 3), Payload: mk(wire.Coordinator{Priority: 3})}, ErrForgedClaim},
		{"forged heartbeat", 1, core.Message{From: 3, Kind: wire.KindLeaderHeartbeat, Term: 0, Payload: mk(wire.LeaderHeartbeat{})}, ErrForgedClaim},
		{"rank mismatch", 3, core.Message{From: 1, Kind: wire.KindElection, Payload: mk(wire.Election{Priority: 9, Reason: wire.ReasonStartup})}, ErrRankMismatch},
		{"election from above", 1, core.Message{From: 3, Kind: wire.KindElection, Payload: mk(wire.Election{Reason: wire.ReasonStartup})}, ErrWrongDirection},
		{"answer from below", 3, core.Message{From: 1, Kind: wire.KindAnswer, Payload: mk(wire.Answer{})}, ErrWrongDirection},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := newNetwork(t, ms, nil)
			n.settle(2, 100)
			b := n.nodes[tc.to]
			before := b.Report()
			err := b.Step(tc.m)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Step: %v, want %v", err, tc.want)
			}
			if rd := b.Ready(); !rd.Empty() {
				t.Errorf("rejected message had effects: %+v", rd)
			}
			after := b.Report()
			if after.Term != before.Term || after.Leader != before.Leader || after.Role != before.Role {
				t.Errorf("state changed: %+v -> %+v", before, after)
			}
			var rejected uint64
			for _, v := range after.Rejected {
				rejected += v
			}
			if rejected != 1 {
				t.Errorf("rejections counted %v", after.Rejected)
			}
		})
	}
	t.Run("bad payload", func(t *testing.T) {
		n := newNetwork(t, ms, nil)
		err := n.nodes[3].Step(core.Message{From: 1, Kind: wire.KindElection, Payload: []byte{1, 2}})
		if err == nil {
			t.Fatal("short payload accepted")
		}
	})
}

func TestStatusCounts(t *testing.T) {
	n := newNetwork(t, ids(3), nil)
	n.settle(3, 100)
	hb := ticks(DefaultLANConfig().Heartbeat)
	n.tick(2*hb + hb/2) // two heartbeats
	s := n.nodes[3].Report()
	if s.Role != RoleLeader || s.Leader != 3 || s.ElectionsStarted != 1 || s.Detail.(Detail).TermsClaimed != 1 {
		t.Errorf("leader status %+v", s)
	}
	if s.Sent["coordinator"] != 2 || s.Sent["leader_heartbeat"] != 4 || s.Received["election"] != 2 {
		t.Errorf("counters sent %v received %v", s.Sent, s.Received)
	}
	f := n.nodes[1].Report()
	if f.Received["leader_heartbeat"] != 2 || f.Sent["election"] != 2 || f.LeaderSince.IsZero() {
		t.Errorf("follower status %+v", f)
	}
	for _, m := range f.Members {
		if !m.Self && m.LastHeard.IsZero() {
			t.Errorf("member %d never heard", m.ID)
		}
	}
}

func TestRestartedLowMemberDisturbsNobody(t *testing.T) {
	n := newNetwork(t, ids(5), nil)
	term := n.settle(5, 100)
	n.crash(2)
	n.tick(30)
	n.events = nil
	n.resetCounts()
	n.start(2)
	if got := n.settle(5, 100); got != term {
		t.Errorf("term moved %d -> %d when a low member restarted", term, got)
	}
	for _, e := range n.events {
		if e.node != 2 {
			t.Errorf("node %d reacted: %v", e.node, e)
		}
	}
	// It asked the three members above it; each answered; the leader also
	// told it who leads.
	if e, a := n.delivered[wire.KindElection], n.delivered[wire.KindAnswer]; e != 3 || a != 3 {
		t.Errorf("ELECTION %d ANSWER %d delivered, want 3 and 3", e, a)
	}
}

func TestStatusJSON(t *testing.T) {
	n := newNetwork(t, []Member{{ID: 1}, {ID: 2, Priority: 1}}, nil)
	n.settle(2, 100)
	if err := n.nodes[2].Step(core.Message{From: 1, Kind: wire.KindElection, Payload: []byte{1}}); err == nil {
		t.Fatal("bad payload accepted")
	}
	b, err := json.Marshal(n.nodes[2].Status())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"role":"leader"`, `"leader":2`, `"term":2`, `"election":1`, `"rejected":{"payload_truncated":1}`, `"priority":1`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("status %s lacks %s", b, want)
		}
	}
}

// TestPartitionSidesClaimDistinctTerms is the safety argument at work: both
// sides of a partition lose the leader at the same moment and elect their
// own, from the same starting term. "Highest seen plus one" would give both
// the same term; owned terms cannot.
func TestPartitionSidesClaimDistinctTerms(t *testing.T) {
	n := newNetwork(t, ids(5), nil)
	t5 := n.settle(5, 100)
	for _, a := range []uint32{1, 2, 3} {
		for _, b := range []uint32{4, 5} {
			n.cut[[2]uint32{a, b}], n.cut[[2]uint32{b, a}] = true, true
		}
	}
	n.crash(5)
	n.tick(100)
	l3, t3, _ := n.nodes[1].Leader()
	l4, t4, _ := n.nodes[4].Leader()
	if l3 != 3 || l4 != 4 {
		t.Fatalf("sides elected %d and %d, want 3 and 4", l3, l4)
	}
	if t3 == t4 || t3 <= t5 || t4 <= t5 {
		t.Fatalf("terms %d and %d after %d", t3, t4, t5)
	}
	// (drain has checked every claim against every other.)
	clear(n.cut)
	n.settle(4, 200)
}

func TestImpossibleTransitionsPanic(t *testing.T) {
	n := newNetwork(t, ids(3), nil)
	n.settle(3, 100)
	for name, f := range map[string]func(){
		"follower claims without running": func() { n.nodes[1].becomeLeader(false) },
		"leader becomes candidate":        func() { n.nodes[3].becomeCandidate(wire.ReasonStartup) },
		"follower of itself":              func() { n.nodes[2].becomeFollower(n.nodes[2].term, 2, "x") },
		"term backwards":                  func() { n.nodes[2].setTerm(n.nodes[2].term - 1) },
		"leader adopts silently":          func() { n.nodes[3].adopt(n.nodes[3].term + 1) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f()
		}()
	}
}

// TestOversleptTimerWaitsAgain: a node whose Tick comes long after its
// timer's deadline (the process was stopped) does not crown itself on a
// silence it did not listen to: it waits its timeout again from then, and
// the higher-ranked member's ANSWER that arrives meanwhile keeps it from
// claiming.
func TestOversleptTimerWaitsAgain(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	b, err := New(core.Env{ID: 1, Members: []uint32{1, 2}, Now: t0}, DefaultLANConfig())
	if err != nil {
		t.Fatal(err)
	}
	b.Ready()
	b.Tick(t0) // the loop runs: the startup wait starts
	late := t0.Add(700 * time.Millisecond)
	b.Tick(late)
	if b.Role() != RoleCandidate || b.Detail().Overslept != 1 {
		t.Fatalf("after a late tick: %v, overslept %d", b.Role(), b.Detail().Overslept)
	}
	if d := b.Deadline(); !d.Equal(late.Add(100 * time.Millisecond)) {
		t.Fatalf("deadline %v after the late tick, want 100ms", d.Sub(late))
	}
	p, _ := wire.Answer{}.AppendBinary(nil)
	if err := b.Step(core.Message{From: 2, Kind: wire.KindAnswer, Payload: p, Time: late.Add(time.Millisecond)}); err != nil {
		t.Fatal(err)
	}
	b.Tick(late.Add(100 * time.Millisecond))
	if b.Role() == RoleLeader {
		t.Fatal("claimed although the higher-ranked member answered")
	}
}

// TestStartupWaitCountsFromFirstTick: a daemon builds the core, then opens
// its sockets; the startup ELECTIONs leave with the first Ready, and the
// first Tick comes with the loop. When it comes well after New, the node
// still listens its whole startup wait from then before it claims.
func TestStartupWaitCountsFromFirstTick(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	b, err := New(core.Env{ID: 2, Members: []uint32{1, 2}, Now: t0}, DefaultLANConfig())
	if err != nil {
		t.Fatal(err)
	}
	b.Ready()
	if d := b.Deadline(); !d.Equal(t0) {
		t.Fatalf("a new core asks for its first Tick %v after New, want at once", d.Sub(t0))
	}
	first := t0.Add(90 * time.Millisecond)
	b.Tick(first)
	b.Tick(t0.Add(110 * time.Millisecond)) // the wait from New has passed
	if b.Role() != RoleCandidate {
		t.Fatalf("claimed %v after New, %v after its first input", 110*time.Millisecond, 20*time.Millisecond)
	}
	if d := b.Deadline(); !d.Equal(first.Add(100 * time.Millisecond)) {
		t.Fatalf("deadline %v after the first input, want 100ms", d.Sub(first))
	}
	b.Tick(first.Add(100 * time.Millisecond))
	if b.Role() != RoleLeader {
		t.Fatalf("alone after its wait: %v", b.Role())
	}
}
