package tokenring_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/epoch"
	"github.com/synclab/synclab/pkg/mutex"
	"github.com/synclab/synclab/pkg/mutex/tokenring"
	"github.com/synclab/synclab/pkg/wire"
)

// attackRing is a three-member ring in the simulator, and what a forger
// on the LAN can do to it: step any frame into a member in any member's
// name.
type attackRing struct {
	t *testing.T
	s *sim.Sim
}

func newAttackRing(t *testing.T) *attackRing {
	s := sim.New(sim.Config{Seed: 11})
	addMembers(t, s, []uint32{1, 2, 3})
	s.Run(100 * time.Millisecond)
	return &attackRing{t: t, s: s}
}

// newKeyedAttackRing is newAttackRing for a keyed cluster (TrustSenders:
// no vouching), the forger a member that holds the key.
func newKeyedAttackRing(t *testing.T, seed int64) *attackRing {
	s := sim.New(sim.Config{Seed: seed})
	addMembersTrusting(t, s, []uint32{1, 2, 3}, true)
	s.Run(100 * time.Millisecond)
	return &attackRing{t: t, s: s}
}

func (a *attackRing) ring(id uint32) *tokenring.Core { return a.s.Core(id).(*tokenring.Core) }

// forge steps a frame "from" member from into member to, as if it came
// off the network, and carries out what to wants done.
func (a *attackRing) forge(to, from uint32, k wire.Kind, p interface{ AppendBinary([]byte) ([]byte, error) }) error {
	a.t.Helper()
	b, err := p.AppendBinary(nil)
	if err != nil {
		a.t.Fatal(err)
	}
	var serr error
	a.s.Do(to, func(c core.Core) {
		serr = c.Step(core.Message{From: from, To: to, Kind: k, Payload: b, Time: a.s.Clock(to).Now()})
	})
	return serr
}

func (a *attackRing) acquire(id uint32, name string) mutex.RequestID {
	var req mutex.RequestID
	a.s.Do(id, func(c core.Core) {
		var err error
		if req, err = c.(*tokenring.Core).Acquire(a.s.Clock(id).Now(), mutex.Request{Lock: name}); err != nil {
			a.t.Fatalf("member %d: acquire %s: %v", id, name, err)
		}
	})
	return req
}

// grant waits for request req of member id to be granted and returns its
// fence and generation.
func (a *attackRing) grant(id uint32, req mutex.RequestID, within time.Duration) (fence, gen uint64) {
	a.t.Helper()
	ok := a.s.RunUntil(func() bool {
		for _, e := range a.s.EventsNamed(mutex.EventGranted) {
			if r, _ := e.Arg("request"); e.Node == id && r == uint64(req) {
				f, _ := e.Arg("fence")
				g, _ := e.Arg("generation")
				fence, gen = f.(uint64), g.(uint64)
				return true
			}
		}
		return false
	}, within)
	if !ok {
		a.t.Fatalf("member %d: request %d not granted within %v\n%s", id, req, within, a.s.Log())
	}
	return fence, gen
}

func (a *attackRing) granted(id uint32, req mutex.RequestID) bool {
	for _, e := range a.s.EventsNamed(mutex.EventGranted) {
		if r, _ := e.Arg("request"); e.Node == id && r == uint64(req) {
			return true
		}
	}
	return false
}

// TestForgedTokenCannotGrantAFenceTwice is the same-fence attack:
// while client A holds x at member 1 and B waits at member 2, a Token
// "from 1" to member 2 with HoldMS 0 and A's fence - 1 used to grant B the
// very fence A holds. Member 1 does not vouch for it (it holds the token):
// member 2 drops it unused, B waits for A's release and gets a higher
// fence. The same from member 3, which never passed member 2 this token.
func TestForgedTokenCannotGrantAFenceTwice(t *testing.T) {
	for _, from := range []uint32{1, 3} {
		t.Run(fmt.Sprintf("from %d", from), func(t *testing.T) {
			a := newAttackRing(t)
			ra := a.acquire(1, "x")
			fa, gen := a.grant(1, ra, 5*time.Second)
			rb := a.acquire(2, "x")
			a.s.Run(20 * time.Millisecond)
			err := a.forge(2, from, wire.KindToken, wire.Token{Name: "x", HoldMS: 0, Generation: gen, Hop: 1 << 40, Fence: fa - 1})
			if err != nil {
				t.Fatalf("the forged token was refused before vouching (%v): fine, but not the path under test", err)
			}
			a.s.Run(500 * time.Millisecond)
			if a.granted(2, rb) {
				t.Fatalf("B granted while A holds fence %d\n%s", fa, a.s.Log())
			}
			if n := a.ring(2).Report().Counters["tokens_disowned"]; n != 1 {
				t.Errorf("member 2 counters %v: want the token disowned", a.ring(2).Report().Counters)
			}
			a.s.Do(1, func(c core.Core) { c.(*tokenring.Core).Release(a.s.Clock(1).Now(), ra) })
			fb, _ := a.grant(2, rb, 5*time.Second)
			if fb <= fa {
				t.Errorf("B's fence %d after A's %d", fb, fa)
			}
		})
	}
}

// TestAbsurdGenerationRefused is the lock-killing probe: one
// prepare with generation (2^24-1)<<32|1 used to make x ungrantable on
// every member, for good. Now it is refused and counted, as is a jump
// beyond the table's credit, and x is granted everywhere.
func TestAbsurdGenerationRefused(t *testing.T) {
	a := newAttackRing(t)
	for to := uint32(1); to <= 3; to++ {
		err := a.forge(to, 1+to%3, wire.KindRingProbe, wire.RingProbe{Op: wire.ProbePrepare, Name: "x", Nonce: 7, Generation: (1<<24-1)<<32 | 1})
		if !errors.Is(err, epoch.ErrAbsurd) {
			t.Errorf("member %d: %v, want absurd", to, err)
		}
		far := tokenring.MakeGeneration(tokenring.GenerationBurst+1, 1+to%3)
		if err := a.forge(to, 1+to%3, wire.KindRingProbe, wire.RingProbe{Op: wire.ProbePrepare, Name: "y", Nonce: 8, Generation: far}); !errors.Is(err, epoch.ErrTooFast) {
			t.Errorf("member %d: %v, want too fast", to, err)
		}
		if c := a.ring(to).Report().Counters; c["rejected_generation_absurd"] != 1 || c["rejected_generation_too_fast"] != 1 {
			t.Errorf("member %d counters %v", to, c)
		}
	}
	for id := uint32(1); id <= 3; id++ {
		req := a.acquire(id, "x")
		a.grant(id, req, 5*time.Second)
		a.s.Do(id, func(c core.Core) { c.(*tokenring.Core).Release(a.s.Clock(id).Now(), req) })
	}
	// And after every member restarts.
	for id := uint32(1); id <= 3; id++ {
		a.s.Restart(id)
	}
	a.s.Run(100 * time.Millisecond)
	req := a.acquire(2, "x")
	a.grant(2, req, 10*time.Second)
}

// TestPersistedAbsurdGenerationRefused: state an older build wrote after
// such a probe is refused at start with ErrState, not run.
func TestPersistedAbsurdGenerationRefused(t *testing.T) {
	a := newAttackRing(t)
	cfg := a.ring(1).Config()
	// A lock "x" promised (2^24-1)<<32|1, written as version 1 state.
	state := []byte{1, 0, 1, 1, 'x', 0, 0xff, 0xff, 0xff, 0, 0, 0, 1}
	state = appendCRC(state)
	cfg.Persisted = state
	if _, err := tokenring.New(cfg); !errors.Is(err, tokenring.ErrState) || !errors.Is(err, epoch.ErrAbsurd) {
		t.Fatalf("New = %v, want ErrState for an absurd generation", err)
	}
}

// TestLockTableCannotBeFilled is the table-filling attack: 5000
// probes naming made-up locks, wants, locates, checks and prepares, in a
// member's name. Only the prepares make entries, at most that member's
// share; real locks are still granted, and the metrics do not grow.
func TestLockTableCannotBeFilled(t *testing.T) {
	a := newAttackRing(t)
	ops := []wire.ProbeOp{wire.ProbeWant, wire.ProbeLocate, wire.ProbeCheck, wire.ProbeVouch}
	refused := 0
	for i := range 5000 {
		// In both other members' names: each fills at most its share.
		for _, from := range []uint32{1, 3} {
			name := fmt.Sprintf("junk-%d-%d", from, i)
			gen := tokenring.MakeGeneration(1, from)
			a.forge(2, from, wire.KindRingProbe, wire.RingProbe{Op: ops[i%len(ops)], Name: name, Nonce: uint32(i), Generation: gen})
			if a.forge(2, from, wire.KindRingProbe, wire.RingProbe{Op: wire.ProbePrepare, Name: name, Nonce: uint32(i), Generation: gen}) != nil {
				refused++
			}
		}
	}
	st := a.ring(2).Report()
	cfg := a.ring(2).Config()
	share := cfg.MaxLocks / 2 / 2
	if len(st.Locks) > 2*share || refused != 2*(5000-share) || st.Counters["share_full"] != uint64(refused) {
		t.Errorf("%d entries after the flood (shares of %d), %d prepares refused; counters %v", len(st.Locks), share, refused, st.Counters)
	}
	// Member 2's own clients still get locks, many of them.
	for i := range 50 {
		req := a.acquire(2, fmt.Sprintf("real-%d", i))
		a.grant(2, req, 10*time.Second)
	}
	var m core.MetricSet
	a.ring(2).Metrics(&m)
	for _, f := range m.Families() {
		if len(f.Samples) > 60 {
			t.Errorf("%s has %d samples", f.Name, len(f.Samples))
		}
	}
}

func appendCRC(b []byte) []byte {
	sum := crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli))
	return binary.BigEndian.AppendUint32(b, sum)
}

// TestForgedServedNumbers: a token (in a keyed cluster: from a member,
// trusted) whose Served list claims absurd numbers. The entry beyond any
// clock is refused and counted; the entry for the receiver itself beyond
// its last want is replaced by its own number; an entry for member 3 that
// is merely ahead makes its wants look served, which costs member 3 one
// loss timeout (its locate is a want no number drops), once: the token,
// there, takes member 3's own number, and its next want is served in one
// pass without a locate.
func TestForgedServedNumbers(t *testing.T) {
	s := sim.New(sim.Config{Seed: 12})
	addMembersTrusting(t, s, []uint32{1, 2, 3}, true)
	s.Run(100 * time.Millisecond)
	a := &attackRing{t: t, s: s}
	release := func(id uint32, req mutex.RequestID) {
		s.Do(id, func(c core.Core) { c.(*tokenring.Core).Release(s.Clock(id).Now(), req) })
	}
	var gen uint64
	for _, id := range []uint32{1, 2, 1} { // member 2 has numbered a want
		req := a.acquire(id, "x")
		_, gen = a.grant(id, req, 5*time.Second)
		release(id, req)
		s.Run(20 * time.Millisecond)
	}
	s.Run(time.Second) // the wants heard while the token was made are old

	now := uint64(s.Clock(2).Now().UnixMilli())
	round := tokenring.GenerationRound(gen) + 1
	forged := wire.Token{Name: "x", Generation: tokenring.MakeGeneration(round, 1), Hop: 1, Fence: uint64(round) << 40,
		Served: []wire.WantServed{{Member: 1, Want: math.MaxUint64}, {Member: 2, Want: math.MaxUint64}, {Member: 3, Want: now + 10*60*1000}}}
	if err := a.forge(2, 1, wire.KindToken, forged); err != nil {
		t.Fatalf("forged token refused before its Served list was read: %v", err)
	}
	c2 := a.ring(2).Report().Counters
	if c2["token_served_absurd"] != 1 || c2["token_served_ahead"] != 1 {
		t.Errorf("member 2 counters %v: want member 1's entry refused as absurd, its own as ahead", c2)
	}
	r3 := a.acquire(3, "x")
	start := s.Elapsed()
	a.grant(3, r3, 5*time.Second)
	cfg := a.ring(3).Config()
	waited := s.Elapsed() - start
	if waited > cfg.LossTimeout+time.Second {
		t.Errorf("member 3 waited %v with a forged served number (want about a loss timeout, %v)", waited, cfg.LossTimeout)
	}
	if n := a.ring(2).Report().Counters["wants_served_already"]; n == 0 {
		t.Errorf("member 2 took member 3's want although the forged token said it was served (not the path under test)")
	}
	t.Logf("member 3 waited %v with a forged served number", waited)
	release(3, r3)
	for _, id := range []uint32{1, 3} {
		locates := a.ring(id).Report().Counters["probes_locate"]
		req := a.acquire(id, "x")
		start := s.Elapsed()
		a.grant(id, req, 5*time.Second)
		if waited := s.Elapsed() - start; waited > cfg.LossTimeout/2 {
			t.Errorf("member %d waited %v once the token had been there", id, waited)
		}
		if n := a.ring(id).Report().Counters["probes_locate"]; n != locates {
			t.Errorf("member %d looked for the token (%d locates) once it had been there", id, n-locates)
		}
		release(id, req)
		s.Run(20 * time.Millisecond)
	}
}

// TestLateCopyOfAnOlderWant: a want datagram that arrives after a newer
// one of the same member (reordered, or a copy) does not stand for it: the
// token that served the older one is still passed on for the newer.
func TestLateCopyOfAnOlderWant(t *testing.T) {
	a := newKeyedAttackRing(t, 13)
	s := a.s
	req := a.acquire(1, "x")
	_, gen := a.grant(1, req, 5*time.Second)
	s.Do(1, func(c core.Core) { c.(*tokenring.Core).Release(s.Clock(1).Now(), req) })
	s.Run(time.Second)

	num := uint64(s.Clock(3).Now().UnixMilli())
	for _, n := range []uint64{num + 1, num} {
		if err := a.forge(2, 3, wire.KindRingProbe, wire.RingProbe{Op: wire.ProbeWant, Name: "x", Generation: n}); err != nil {
			t.Fatal(err)
		}
	}
	passed := a.ring(2).Report().Counters["tokens_passed"]
	round := tokenring.GenerationRound(gen) + 1
	tok := wire.Token{Name: "x", Generation: tokenring.MakeGeneration(round, 1), Hop: 1, Fence: uint64(round) << 40,
		Served: []wire.WantServed{{Member: 3, Want: num}}}
	if err := a.forge(2, 1, wire.KindToken, tok); err != nil {
		t.Fatal(err)
	}
	if n := a.ring(2).Report().Counters["tokens_passed"]; n != passed+1 {
		t.Errorf("member 2 kept the token (%d passes): member 3's want %d was taken for its served %d", n-passed, num+1, num)
	}
}

// TestAbsurdLeaseLeftInAPromise: a promise (a prepare's OK answer) whose
// Lease Left is the largest the wire carries, 49 days. No lease runs
// longer than MaxLease, so the answer is taken for that much and counted
// (lease_left_clamped): the new token grants within a Hold. Main's code
// waited the 49 days, the lock stuck at the proposer.
func TestAbsurdLeaseLeftInAPromise(t *testing.T) {
	s := sim.New(sim.Config{Seed: 14, DefaultLink: sim.LinkConfig{Delay: 200 * time.Microsecond}})
	addMembersTrusting(t, s, []uint32{1, 2, 3}, true)
	s.Run(100 * time.Millisecond)
	a := &attackRing{t: t, s: s}
	var prepare *wire.RingProbe
	s.OnSend(func(f sim.SentFrame) {
		var p wire.RingProbe
		if f.From == 1 && f.Frame.Kind == wire.KindRingProbe && p.UnmarshalBinary(f.Frame.Payload) == nil && p.Op == wire.ProbePrepare && prepare == nil {
			prepare = &p
		}
	})
	req := a.acquire(1, "x")
	if !s.RunUntil(func() bool { return prepare != nil }, 2*time.Second) {
		t.Fatal("member 1 sent no prepare")
	}
	reply := wire.RingProbeReply{Op: wire.ProbePrepare, Name: "x", Status: wire.ProbeOK, Flags: wire.ProbeConfirmKnown,
		Nonce: prepare.Nonce, Generation: prepare.Generation, LeaseLeftMS: math.MaxUint32}
	if err := a.forge(1, 2, wire.KindRingProbeReply, reply); err != nil {
		t.Fatal(err)
	}
	cfg := a.ring(1).Config()
	a.grant(1, req, cfg.Hold()+time.Second)
	if n := a.ring(1).Report().Counters["lease_left_clamped"]; n != 1 {
		t.Errorf("lease_left_clamped %d, want 1", n)
	}
}

// TestForgedSameRoundTokenCannotLowerTheFence is FuzzTokenRing's finding
// (testdata/fuzz/FuzzTokenRing/79daf87c909d90c7): in a keyed cluster a
// member gone wrong (or, without a key, one that vouches for its own
// forgery) sends member 1, which granted fence fa on the token of
// generation (r, owner), a token of the same round with a larger owner
// and fence r<<40. It used to supersede the real token (member 1's client
// lost its lock) and member 1's next grant numbered on from the forged
// fence, below fa: a fenced resource would have refused the new holder
// for good. A token whose fence is below one this member granted is not
// the ring's (fences only grow along it): refused and counted.
func TestForgedSameRoundTokenCannotLowerTheFence(t *testing.T) {
	a := newKeyedAttackRing(t, 11)
	ra := a.acquire(1, "x")
	fa, gen := a.grant(1, ra, 5*time.Second)
	forged := tokenring.MakeGeneration(tokenring.GenerationRound(gen), math.MaxUint32)
	err := a.forge(1, 2, wire.KindToken, wire.Token{Name: "x", Generation: forged, Hop: 1, Fence: uint64(tokenring.GenerationRound(gen)) << 40})
	if !errors.Is(err, tokenring.ErrBadToken) {
		t.Fatalf("forged token of generation %#x, fence below %#x: %v, want ErrBadToken", forged, fa, err)
	}
	if n := a.ring(1).Report().Counters["rejected_bad_token"]; n != 1 {
		t.Errorf("member 1 counters %v: want the token counted as rejected_bad_token", a.ring(1).Report().Counters)
	}
	for _, e := range a.s.EventsNamed(mutex.EventLost) {
		if r, _ := e.Arg("request"); e.Node == 1 && r == uint64(ra) {
			t.Fatalf("member 1's client lost x to the forged token: %v", e)
		}
	}
	a.s.Do(1, func(c core.Core) { c.(*tokenring.Core).Release(a.s.Clock(1).Now(), ra) })
	rb := a.acquire(1, "x")
	if fb, _ := a.grant(1, rb, 5*time.Second); fb <= fa {
		t.Errorf("fence %#x granted after %#x", fb, fa)
	}
}
