package bully

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/wire"
)

func reserve(_ uint32, c *Config) { c.Reserve = true }

// claimReady runs n after its leader 3's crash until node 2 claims, and
// returns the Ready that carried node 2's COORDINATOR.
func claimReady(t *testing.T, n *network) core.Ready {
	t.Helper()
	var got *core.Ready
	n.kill = func(id uint32, rd core.Ready) int {
		for _, m := range rd.Messages {
			if id == 2 && m.Kind == wire.KindCoordinator && got == nil {
				got = &rd
			}
		}
		return killNone
	}
	n.crash(3)
	for i := 0; i < 200 && got == nil; i++ {
		n.tick(1)
	}
	n.kill = nil
	if got == nil {
		// A claim without any State in its Ready: the kill hook never saw it.
		for i := 0; i < 200 && n.nodes[2].Role() != RoleLeader; i++ {
			n.tick(1)
		}
		return core.Ready{}
	}
	return *got
}

// TestReservedClaimNeedsNoWrite: a follower that reserves (Config.Reserve,
// electd) wrote the term it would claim with the term it follows; when its
// leader dies, the Ready of its claim holds the COORDINATOR without a
// promise: the driver sends it before the write that brings the state up to
// the claim (the term, and the next reservation). Without Reserve the claim
// is a promise, written before anything leaves.
func TestReservedClaimNeedsNoWrite(t *testing.T) {
	n := newNetwork(t, ids(3), reserve)
	term := n.settle(3, 100)
	onDisk, reserved, err := RestoreReserved(n.state[2])
	if want := MakeTerm(TermRound(term)+1, 2); err != nil || onDisk != term || reserved != want {
		t.Fatalf("follower 2's disk: term %#x reserved %#x (%v), want %#x and %#x", onDisk, reserved, err, term, want)
	}
	rd := claimReady(t, n)
	if rd.Promise {
		t.Fatalf("the claim covered by its reservation waits for a write (Promise)")
	}
	claimed := n.stable(2)
	if claimed != reserved {
		t.Fatalf("claimed %#x, reserved %#x", claimed, reserved)
	}
	if tm, next, err := RestoreReserved(rd.State); err != nil || tm != claimed || next != MakeTerm(TermRound(claimed)+1, 2) {
		t.Fatalf("the claim's catch-up state: term %#x reserved %#x (%v)", tm, next, err)
	}
	if got := n.nodes[2].Detail().ClaimsReserved; got != 1 {
		t.Errorf("status counts %d claims on a reservation, want 1", got)
	}

	old := newNetwork(t, ids(3), nil)
	old.settle(3, 100)
	if len(old.state[2]) != stateLen {
		t.Fatalf("without Reserve the state is in the first format: %d bytes", len(old.state[2]))
	}
	if rd := claimReady(t, old); !rd.Promise {
		t.Fatalf("without Reserve the claim must be written before its COORDINATOR leaves")
	}
}

// TestReservationWriteFailedClaimWaits: a reservation whose write failed
// is not claimed on, and neither is the claim above it: while the disk
// fails the member neither leads nor reports electing itself (electd
// would run its hooks with a term a restart claims again); once a write
// succeeds it claims, on the reservation that write made.
func TestReservationWriteFailedClaimWaits(t *testing.T) {
	n := newNetwork(t, ids(3), reserve)
	n.settle(3, 100)
	n.diskFull[2] = true
	// A newer term of the leader's: node 2 follows it, and its write
	// (the term and the reservation above it) fails.
	n.forge(2, 3, wire.KindLeaderHeartbeat, MakeTerm(TermRound(n.nodes[3].Term())+1, 3), 0)
	n.crash(3)
	from := len(n.events)
	n.tick(100)
	if b := n.nodes[2]; b.Role() == RoleLeader {
		t.Fatalf("node 2 leads term %#x, on disk %#x: no write covers it", b.Term(), n.persisted(2))
	}
	if !n.nodes[2].Detail().ClaimWaiting {
		t.Errorf("status does not say the claim waits for a write (claim_waiting)")
	}
	for _, e := range n.events[from:] {
		if e.node == 2 && e.Name == EventElected {
			t.Fatalf("node 2 reported %v with its disk failing", e.Event)
		}
	}
	// Restarted before its disk is mended, it reads the same state: the
	// claim it makes then is the first it reports (network.record counts
	// every claim a reserving member reports: none twice).
	n.crash(2)
	n.start(2)
	n.tick(50)
	n.diskFull[2] = false
	n.settle(2, 200)
	claimed := n.stable(2)
	if tm, r, err := RestoreReserved(n.state[2]); err != nil || claimed > max(tm, r) {
		t.Fatalf("leads %#x, on disk term %#x reserved %#x (%v)", claimed, tm, r, err)
	}
}

// TestRestartClaimsAboveReservation: a member restarted from a state with a
// reservation follows the term it holds and claims above the reservation,
// which it may have sent before it died; a state in the first format (an
// older build's) is read as before. Its first Ready reserves its next
// claim (no promise: the startup ELECTIONs leave first), so that claim
// leaves on it; if that write failed, the claim waits for a write that
// makes one (no member leads a term that is on no disk).
func TestRestartClaimsAboveReservation(t *testing.T) {
	for _, tc := range []struct {
		name           string
		state          []byte
		term, claimedT uint64
	}{
		{"reserved", appendReserved(nil, MakeTerm(9, 4), MakeTerm(10, 2)), MakeTerm(9, 4), MakeTerm(11, 2)},
		{"first format", appendState(nil, MakeTerm(9, 4)), MakeTerm(9, 4), MakeTerm(10, 2)},
	} {
		for _, saved := range []bool{true, false} {
			name := fmt.Sprintf("%s, startup write saved %v", tc.name, saved)
			b, err := New(core.Env{ID: 2, Now: testEpoch, State: tc.state}, Config{Members: []Member{{ID: 2}, {ID: 4}}, Reserve: true})
			if err != nil {
				t.Fatal(err)
			}
			if b.Term() != tc.term {
				t.Errorf("%s: restarted in term %#x, want %#x", name, b.Term(), tc.term)
			}
			rd := b.Ready()
			if tm, r, err := RestoreReserved(rd.State); rd.Promise || err != nil || tm != tc.term || r != tc.claimedT {
				t.Fatalf("%s: the startup write: promise %v, term %#x reserved %#x (%v), want %#x reserved %#x", name, rd.Promise, tm, r, err, tc.term, tc.claimedT)
			}
			b.Advance(saved)
			i := 1
			for ; i < 100 && b.Role() != RoleLeader; i++ {
				b.Tick(testEpoch.Add(time.Duration(i) * 10 * time.Millisecond))
				if b.Role() != RoleLeader {
					b.Ready()
					b.Advance(false)
				}
			}
			if !saved {
				// Every write failed: its claim is on no disk, and a
				// restart would claim it again.
				if b.Role() == RoleLeader {
					t.Fatalf("%s: leads %#x with every write failed", name, b.Term())
				}
				b.Ready()
				b.Advance(true)
				// At once: the instant after the last Tick (one at that
				// very instant would be taken for a stale deadline).
				last := testEpoch.Add(time.Duration(i-1) * 10 * time.Millisecond)
				if dl := b.Deadline(); !dl.After(last) || dl.After(last.Add(time.Nanosecond)) {
					t.Fatalf("%s: the saved reservation asks for no Tick at once (%v after the last)", name, dl.Sub(last))
				}
				b.Tick(last.Add(time.Nanosecond))
			}
			if got := b.Term(); b.Role() != RoleLeader || got != tc.claimedT {
				t.Fatalf("%s: %v, claimed %#x (round %d), want %#x", name, b.Role(), got, TermRound(got), tc.claimedT)
			}
			if rd := b.Ready(); rd.Promise {
				t.Errorf("%s: the claim's Ready has a promise: its reservation was written", name)
			}
		}
	}
}

// TestReservedStateCorrupt: the second format reads back, and is refused
// with the first format's length, a version no build wrote, or a
// reservation not above its term (TestStateCorrupt: its bits).
func TestReservedStateCorrupt(t *testing.T) {
	good := appendReserved(nil, MakeTerm(5, 3), MakeTerm(6, 2))
	if tm, r, err := RestoreReserved(good); err != nil || tm != MakeTerm(5, 3) || r != MakeTerm(6, 2) {
		t.Fatalf("round trip: %#x %#x %v", tm, r, err)
	}
	if tm, err := Restore(good); err != nil || tm != MakeTerm(5, 3) {
		t.Fatalf("Restore reads the term of the second format: %#x %v", tm, err)
	}
	for name, b := range map[string][]byte{
		"first format len": good[:stateLen],
		"version 3":        append([]byte{3}, good[1:]...),
		"not above term":   appendReserved(nil, MakeTerm(6, 2), MakeTerm(6, 2)),
	} {
		if _, _, err := RestoreReserved(b); !errors.As(err, new(*StateError)) {
			t.Errorf("%s: RestoreReserved = %v, want a *StateError", name, err)
		}
	}
}

// TestReservedClaimCrashAtEveryInstant: three members, 3 leads, 2 reserves.
// 3 dies; 2 is SIGKILLed at each of its first `at` writes (counted across
// its lives: a kill makes the next life's writes), before the write (a
// Ready without a promise has sent its messages: its claim on the
// reservation left) or after it (nothing sent), and restarted as soon as
// it is down: at its claim, its restart's reservation write, the claim
// after the restart, the write when 3 comes back. No term is claimed twice (by two members, or by 2 in
// two lives: network.record), no frame leaves with a term the disk does
// not cover (network.send), no member's term goes below its disk (drain),
// and the members agree on 3 in the end. Each subtest fails if its kill
// did not happen.
func TestReservedClaimCrashAtEveryInstant(t *testing.T) {
	for _, how := range []int{killAtWrite, killAfterWrite} {
		for at := 1; at <= 6; at++ {
			t.Run(fmt.Sprintf("kill%d-write%d", how, at), func(t *testing.T) {
				n := newNetwork(t, ids(3), reserve)
				n.settle(3, 100)
				writes := 0
				n.kill = func(id uint32, rd core.Ready) int {
					if id != 2 {
						return killNone
					}
					if writes++; writes <= at {
						return how
					}
					return killNone
				}
				run := func(ticks int) {
					for range ticks {
						n.tick(1)
						if n.down[2] {
							n.start(2)
						}
					}
				}
				n.crash(3)
				run(150)
				n.start(3)
				run(150)
				if writes < at {
					t.Fatalf("2 made %d writes, killed at each of the first %d: not every kill happened", writes, at)
				}
				n.kill = nil
				if n.down[2] {
					n.start(2)
				}
				n.settle(3, 200)
			})
		}
	}
}

// TestLowerClaimBulliedWithoutWrite: the successor 4 reads the claim of
// 3, which stood while 4's loop stalled (the leader 5 dead), in a term
// below 4's reservation: following it and bullying it with 4's own claim
// need no write first (both terms are covered by the reservation on
// disk); a newer term above the reservation still does.
func TestLowerClaimBulliedWithoutWrite(t *testing.T) {
	n := newNetwork(t, ids(5), reserve)
	term := n.settle(5, 100)
	var promised []bool
	n.kill = func(id uint32, rd core.Ready) int {
		if id == 4 {
			promised = append(promised, rd.Promise)
		}
		return killNone
	}
	n.crash(5)
	low := MakeTerm(TermRound(term)+1, 3) // 3's claim, below 4's reservation
	if err := n.forge(4, 3, wire.KindCoordinator, low, 0); err != nil {
		t.Fatal(err)
	}
	if len(promised) == 0 || promised[0] {
		t.Fatalf("following a term below the reservation waits for a write: Readies with State %v", promised)
	}
	n.settle(4, 200)
	if got := n.nodes[4].Term(); got != MakeTerm(TermRound(term)+1, 4) {
		t.Fatalf("4 claimed %#x", got)
	}
	for i, p := range promised {
		if p {
			t.Fatalf("Ready %d of 4's with State waited for its write: %v", i, promised)
		}
	}
	if n.nodes[4].Detail().ClaimsReserved != 1 {
		t.Fatalf("4's claim did not leave on its reservation")
	}

	promised = nil
	high := MakeTerm(TermRound(n.nodes[4].Term())+2, 3) // above 4's reservation
	n.forge(4, 3, wire.KindLeaderHeartbeat, high, 0)
	if len(promised) == 0 || !promised[0] {
		t.Fatalf("a term above the reservation left before its write: %v", promised)
	}
}

// TestReassertWriteFailedStepsDown: a leader told of a newer term (an
// ELECTION in it: somebody claimed one while it was cut off) takes the
// cluster back above it, a term no reservation on its disk covers. With
// its writes failing it does not lead or report that term: it steps down
// (claim_unsaved) and claims once a write covers the claim.
func TestReassertWriteFailedStepsDown(t *testing.T) {
	n := newNetwork(t, ids(3), reserve)
	old := n.settle(3, 100)
	n.diskFull[3] = true
	from := len(n.events)
	// Two rounds on: its reservation (the round after its own) is below.
	n.forge(3, 2, wire.KindElection, MakeTerm(TermRound(old)+2, 2), 0)
	n.tick(100)
	if b := n.nodes[3]; b.Role() == RoleLeader {
		tm, r, _ := RestoreReserved(n.state[3])
		t.Fatalf("node 3 leads term %#x, on disk term %#x reserved %#x: no write covers it", b.Term(), tm, r)
	}
	demoted := false
	for _, e := range n.events[from:] {
		if e.node == 3 && e.Name == EventElected {
			t.Fatalf("node 3 reported %v with its disk failing", e.Event)
		}
		demoted = demoted || e.node == 3 && e.Name == EventDemoted && arg(e.Event, "reason") == "claim_unsaved" && e.Warn
	}
	if !demoted {
		t.Errorf("node 3 left its term without a demoted event (claim_unsaved) at WARN")
	}
	n.diskFull[3] = false
	n.settle(3, 200)
	claimed := n.stable(3)
	if tm, r, err := RestoreReserved(n.state[3]); err != nil || claimed <= old || claimed > max(tm, r) {
		t.Fatalf("leads %#x (before %#x), on disk term %#x reserved %#x (%v)", claimed, old, tm, r, err)
	}
}

// TestReserveClaimWriteFailedAnswersNoElection: a top member whose held
// claim's write failed answers no ELECTION, of its own term (stepCandidate)
// nor of an older one (stepStale, which answered it: the sender, a member
// below that had not heard the newer term yet, then waited for a
// COORDINATOR that could not come; found by review), and counts both in
// elections_unanswered.
func TestReserveClaimWriteFailedAnswersNoElection(t *testing.T) {
	members := []Member{{ID: 1}, {ID: 2}, {ID: 3}}
	b, err := New(core.Env{ID: 3, Now: testEpoch, State: appendReserved(nil, MakeTerm(9, 2), MakeTerm(10, 3))}, Config{Members: members, Reserve: true})
	if err != nil {
		t.Fatal(err)
	}
	now := testEpoch
	for i := 0; i < 200 && !b.claimWriteFailed; i++ {
		b.Ready()
		b.Advance(false) // every write fails
		now = now.Add(10 * time.Millisecond)
		b.Tick(now)
	}
	b.Ready()
	b.Advance(false)
	if !b.claimWaits || !b.claimWriteFailed {
		t.Fatalf("no held claim with a failed write: role %v waits %v failed %v", b.Role(), b.claimWaits, b.claimWriteFailed)
	}
	answers := func(term uint64) int {
		p, _ := wire.Election{Reason: wire.ReasonLeaderLost}.AppendBinary(nil)
		if err := b.Step(core.Message{From: 1, Kind: wire.KindElection, Term: term, Payload: p, Time: now}); err != nil {
			t.Fatal(err)
		}
		rd := b.Ready()
		b.Advance(false)
		n := 0
		for _, m := range rd.Messages {
			if m.Kind == wire.KindAnswer {
				n++
			}
		}
		return n
	}
	own, older := answers(b.Term()), answers(MakeTerm(8, 1))
	if own != 0 || older != 0 {
		t.Errorf("ANSWERs to an ELECTION of its own term: %d, of an older term: %d; want none", own, older)
	}
	if b.electionsUnanswered != 2 {
		t.Errorf("elections_unanswered %d, want 2", b.electionsUnanswered)
	}
}
