package node

import (
	"testing"
	"time"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/wire"
)

// forgeCore sends node to one core frame (a heartbeat) forged in member
// id's name with incarnation inc, from id's address (keyless cluster).
func (l *agreeLAN) forgeCore(id, to, inc uint32) error {
	l.t.Helper()
	c := insecure(id)
	c.Cluster, c.Service, c.Incarnation = "lab", "electd", inc
	forger, err := New(c, &recorder{})
	if err != nil {
		l.t.Fatal(err)
	}
	forger.own = append(forger.own, core.Message{To: to, Kind: 35, Payload: make([]byte, 8)})
	var last error
	for _, s := range forger.Ready().Sends {
		last = l.nodes[to].Receive(Inbound{From: members[id], Data: forger.Finalize(s, l.now), Time: l.now})
	}
	return last
}

func (l *agreeLAN) heartbeatsTo(from, to uint32) int {
	n := 0
	for _, m := range l.cores[to].steps {
		if m.From == from && m.Kind == wire.KindHeartbeat {
			n++
		}
	}
	return n
}

// (review-mine2) one forged core frame with a made-up higher incarnation in member
// 1's name makes node 2 withhold its core's frames from the real member 1
// for the 3 s window, though member 1's real frames (its incarnation 1,
// admitted and checked) keep coming every tick.
func TestForgedIncarnationDoesNotWithholdRealMember(t *testing.T) {
	l := newAgreeLAN(t, insecure(1), insecure(2), insecure(3))
	l.run(2 * time.Second)
	before := l.heartbeatsTo(2, 1)
	err := l.forgeCore(1, 2, 7)
	t.Logf("forged frame: %v; withholds(1)=%v", err, l.nodes[2].withholds(1))
	at := l.now
	var withheldFor time.Duration
	for l.now.Sub(at) < 5*time.Second {
		l.run(100 * time.Millisecond)
		if l.nodes[2].withholds(1) {
			withheldFor = l.now.Sub(at)
		}
	}
	got := l.heartbeatsTo(2, 1) - before
	t.Logf("node 2 withheld from the real member 1 for %v after one forged frame; member 1 core got %d of node 2's heartbeats in 5 s (50 ticks); node 2 dropped %v", withheldFor, got, l.nodes[2].Status().Dropped)
	if withheldFor > 200*time.Millisecond {
		t.Errorf("one keyless forged frame cut node 2's core frames to the real member 1 for %v while member 1's own frames were admitted (one-way cut)", withheldFor)
	}
}

// (review-mine2) forging a fresh incarnation every 2.5 s keeps the one-way cut for good.
func TestForgedIncarnationsDoNotKeepWithholding(t *testing.T) {
	l := newAgreeLAN(t, insecure(1), insecure(2), insecure(3))
	l.run(2 * time.Second)
	before := l.heartbeatsTo(2, 1)
	beforeFrom1 := l.heartbeatsTo(1, 2)
	inc := uint32(7)
	at := l.now
	for l.now.Sub(at) < 20*time.Second {
		if l.now.Sub(at)%(2500*time.Millisecond) == 0 {
			l.forgeCore(1, 2, inc)
			inc++
		}
		l.run(100 * time.Millisecond)
	}
	got := l.heartbeatsTo(2, 1) - before
	heard := l.heartbeatsTo(1, 2) - beforeFrom1
	t.Logf("20 s, %d forged frames: member 1's core got %d heartbeats from node 2; node 2's core got %d from member 1; dropped %v", inc-7, got, heard, l.nodes[2].Status().Dropped)
	if got < 100 && heard > 100 {
		t.Errorf("one-way cut kept by a forged frame every 2.5 s: 1 hears %d of 2's heartbeats, 2 hears %d of 1's", got, heard)
	}
}

// (review-mine2) a forged announcement of a higher incarnation with another
// configuration, then one forged core frame of it: the member's real
// announcement (lower incarnation) is its word again, but the refusal of
// the forged incarnation is not undone by its real frames: withheld for good.
func TestForgedAnnouncementDoesNotWithholdForGood(t *testing.T) {
	l := newAgreeLAN(t, insecure(1), insecure(2), insecure(3))
	l.run(2 * time.Second)
	c := insecure(1)
	c.Cluster, c.Service, c.Incarnation = "lab", "electd", 7
	c.Agreement = &Agreement{Algorithm: "changroberts"}
	forger, ferr := New(c, &recorder{})
	if ferr != nil {
		t.Fatal(ferr)
	}
	forger.Tick(l.now)
	forger.own = append(forger.own, core.Message{To: 2, Kind: 35, Payload: make([]byte, 8)})
	var err error
	for _, s := range forger.Ready().Sends {
		if s.To == members[2] {
			e := l.nodes[2].Receive(Inbound{From: members[1], Data: forger.Finalize(s, l.now), Time: l.now})
			t.Logf("forged %v: %v", s.Kind, e)
			err = e
		}
	}
	t.Logf("forged frame: %v; withholds(1)=%v", err, l.nodes[2].withholds(1))
	before := l.heartbeatsTo(2, 1)
	beforeFrom1 := l.heartbeatsTo(1, 2)
	l.run(30 * time.Second)
	got := l.heartbeatsTo(2, 1) - before
	heard := l.heartbeatsTo(1, 2) - beforeFrom1
	st := l.nodes[2].Status()
	t.Logf("30 s later: withholds(1)=%v; member 1 got %d heartbeats from 2, 2 got %d from 1; node 2 standing %v, member 1 %+v; dropped %v", l.nodes[2].withholds(1), got, heard, st.Agreement.Standing, st.Agreement.Members[0], st.Dropped)
	if l.nodes[2].withholds(1) || got < 100 {
		t.Errorf("two keyless forged frames cut node 2's core frames to the real member 1 for good (30 s, %d sent) while 2 hears 1 (%d heartbeats)", got, heard)
	}
}

// (review-mine2) with a key, the forged frame fails authentication before
// agreement: nothing is withheld.
func TestKeyedForgedFrameWithholdsNothing(t *testing.T) {
	l := newAgreeLAN(t, keyed(1, nil), keyed(2, nil), keyed(3, nil))
	l.run(2 * time.Second)
	err := l.forgeCore(1, 2, 7)
	t.Logf("forged frame: %v", err)
	if l.nodes[2].withholds(1) {
		t.Fatal("keyed cluster: a keyless forged frame made node 2 withhold from member 1")
	}
	if err == nil {
		t.Fatal("keyless forged frame admitted in a keyed cluster")
	}
}
