package node

import (
	"maps"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/pkg/wire"
)

// scaleMembers is a member list of n members, 127.0.1.1 to 127.0.1.n.
func scaleMembers(n int) map[uint32]netip.AddrPort {
	m := map[uint32]netip.AddrPort{}
	for id := 1; id <= n; id++ {
		m[uint32(id)] = netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 1, byte(id)}), 7000)
	}
	return m
}

// scaleLAN is n keyed members whose cores send nothing (Ω's followers at
// rest: only agreement's frames say a member is up), ticked every step.
func scaleLAN(t *testing.T, n int, step time.Duration) *agreeLAN {
	all := scaleMembers(n)
	var cfgs []Config
	for id := uint32(1); id <= uint32(n); id++ {
		cfgs = append(cfgs, Config{ID: id, Members: maps.Clone(all), Keys: []wire.Key{testKey}})
	}
	l := newAgreeLAN(t, cfgs...)
	l.quiet, l.step = true, step
	return l
}

// restart replaces node id by a new incarnation inc of it, its
// configuration changed by mutate (nil: the same).
func (l *agreeLAN) restart(id, inc uint32, mutate func(*Config)) {
	l.t.Helper()
	old := l.nodes[id].cfg
	c := Config{ID: id, Members: maps.Clone(old.Members), Keys: old.Keys, Cluster: old.Cluster, Service: old.Service, Incarnation: inc,
		Agreement: &Agreement{Algorithm: "bully", Params: map[string]string{"priorities": ""}}}
	if mutate != nil {
		mutate(&c)
	}
	n, err := New(c, l.cores[id])
	if err != nil {
		l.t.Fatal(err)
	}
	l.nodes[id] = n
}

// sent is every announcement and refresh node id has sent.
func (l *agreeLAN) sent(id uint32) int { return l.configs[id] + l.refreshes[id] }

// TestAgreementRefreshAtScale is issue 34's scale case at node level: 64
// members at rest, their cores silent. Each member used to announce its
// whole configuration to each other every QuietInterval (8 s): 63/8 = 7.9
// frames a second sent and as many received per member, 504 a second for
// the cluster, every one a ~760-byte announcement. Now a member that
// agrees is refreshed (28 bytes) every RefreshSpacing, (64-1) x 1 s: each
// member sends about one frame a second, whatever the number of members,
// and every member still counts every other as agreeing, with no notice
// (no member said unreachable for its silence between refreshes).
func TestAgreementRefreshAtScale(t *testing.T) {
	const n = 64
	l := scaleLAN(t, n, 500*time.Millisecond)
	l.run(90 * time.Second) // the start, and the first round of refreshes
	for id := range l.nodes {
		l.notices(id)
	}
	clear(l.configs)
	clear(l.refreshes)
	const rest = 5 * time.Minute
	l.run(rest)
	total := 0
	for id := uint32(1); id <= n; id++ {
		total += l.sent(id)
		// One frame per RefreshPace, and one round of refreshes more
		// for the edges of the window: 363. Without refreshes: 2,362.
		if got, most := l.sent(id), int(rest/DefaultRefreshPace)+n-1; got > most {
			t.Errorf("node %d sent %d announcements and refreshes in %v at rest, want at most %d (one a second)", id, got, rest, most)
		}
		if l.configs[id] != 0 {
			t.Errorf("node %d sent %d full announcements at rest, want only refreshes", id, l.configs[id])
		}
		st := l.nodes[id].Status().Agreement
		if l.standing(id) != StandingAgreed || len(st.Agree) != n {
			t.Fatalf("node %d after %v at rest: %v, %d agree (%s)", id, rest, l.standing(id), len(st.Agree), l.nodes[id].StandingReason())
		}
		if got := l.notices(id); got != "" {
			t.Fatalf("node %d noticed at rest:\n%s", id, got)
		}
	}
	t.Logf("%d members at rest: %.1f announcements and refreshes a second, the whole cluster (%.0f before)", n, float64(total)/rest.Seconds(), float64(n*(n-1))/DefaultQuietInterval.Seconds())

	// A member restarted with another algorithm is seen at once, by the
	// others and by itself, however long the spacing.
	l.restart(64, 2, func(c *Config) { c.Agreement.Algorithm = "ring" })
	l.run(time.Second)
	if got := l.notices(1); !strings.Contains(got, "member 64's algorithm differs") {
		t.Fatalf("1 s after member 64 restarted with another algorithm, node 1 noticed %q", got)
	}
	if got := l.notices(64); l.standing(64) != StandingSteppedBack || !strings.Contains(got, "algorithm differs") {
		t.Fatalf("1 s after its restart with another algorithm, node 64 %v, noticed %q", l.standing(64), got)
	}
	if st := l.nodes[1].Status().Agreement; len(st.Differ) != 1 || st.Differ[0] != 64 {
		t.Fatalf("node 1's status: differ %v, want [64]", st.Differ)
	}
	// A member restarted as it was learns every other's configuration
	// from their answers to its first round, and runs at once.
	l.restart(63, 2, nil)
	l.run(500 * time.Millisecond)
	if st := l.nodes[63].Status().Agreement; l.standing(63) != StandingAgreed || len(st.Agree) != n-1 {
		t.Fatalf("node 63 500ms after its restart: %v, %d agree (%s)", l.standing(63), len(st.Agree), l.nodes[63].StandingReason())
	}
}

// TestAgreementRefreshSmallClusterUnchanged: with fewer members than
// QuietInterval / RefreshPace, a member is refreshed every QuietInterval,
// as it was announced to: a cluster of 5 sends what it did (4 frames per
// member per 8 s), only smaller.
func TestAgreementRefreshSmallClusterUnchanged(t *testing.T) {
	const n = 5
	l := scaleLAN(t, n, 100*time.Millisecond)
	l.run(30 * time.Second)
	clear(l.configs)
	clear(l.refreshes)
	const rest = 80 * time.Second
	l.run(rest)
	for id := uint32(1); id <= n; id++ {
		want := (n - 1) * int(rest/DefaultQuietInterval)
		if got := l.refreshes[id]; got < want-(n-1) || got > want+(n-1) || l.configs[id] != 0 {
			t.Errorf("node %d sent %d refreshes and %d announcements in %v, want %d refreshes, give or take a round", id, got, l.configs[id], rest, want)
		}
	}
}

// TestAgreementRefreshMixedCluster: member 4 is an older build, which
// drops refreshes as unknown_kind and sends none. The others learn so
// from its silence: they keep announcing to it in full every
// QuietInterval (so that it counts them as agreeing, as it always did),
// send it one refresh per incarnation of it to find out, and refresh one
// another. Nobody notices anything.
func TestAgreementRefreshMixedCluster(t *testing.T) {
	l := scaleLAN(t, 4, 100*time.Millisecond)
	l.legacy[4] = true
	l.run(20 * time.Second)
	clear(l.pairs)
	const rest = 2 * time.Minute
	l.run(rest)
	for id := uint32(1); id <= 4; id++ {
		st := l.nodes[id].Status().Agreement
		if l.standing(id) != StandingAgreed || len(st.Agree) != 4 {
			t.Fatalf("node %d: %v, agree %v (%s)", id, l.standing(id), st.Agree, l.nodes[id].StandingReason())
		}
		if got := l.notices(id); got != "" {
			t.Fatalf("node %d noticed %q", id, got)
		}
		if id == 4 {
			continue
		}
		// Full announcements to the older build every 8 s.
		if got, least := l.pairs[[2]uint32{id, 4}], int(rest/DefaultQuietInterval)-1; got < least {
			t.Errorf("node %d sent the older build %d announcements in %v, want at least %d (one every %v)", id, got, rest, least, DefaultQuietInterval)
		}
		for _, m := range st.Members {
			if m.Refreshes != (m.ID != 4) {
				t.Errorf("node %d's status says member %d refreshes: %v", id, m.ID, m.Refreshes)
			}
		}
	}
	if got := l.unknown[4]; got > 3 {
		t.Errorf("the older build got %d refreshes (unknown_kind), want at most one from each member", got)
	}
	if l.refreshes[1] == 0 {
		t.Errorf("node 1 sent no refreshes to the members of its build")
	}
}

// forgeRefresh hands node to a refresh "from" member id (incarnation
// inc, as seen by to) of digest d and spacing, sent from member id's
// address without a key: what anyone on the LAN can send to a cluster
// running --insecure.
func (l *agreeLAN) forgeRefresh(id, to, inc uint32, d [wire.ConfigDigestLen]byte, spacing uint16) {
	l.t.Helper()
	payload, err := wire.ConfigRefresh{Spacing: spacing, Digest: d}.AppendBinary(nil)
	if err != nil {
		l.t.Fatal(err)
	}
	l.forged++
	f := wire.Frame{Header: wire.Header{Kind: wire.KindConfigRefresh, Cluster: l.nodes[to].cluster, Sender: id, Receiver: to,
		Seq: wire.Seq(inc, 0, 1000+l.forged), Lamport: 1}, Payload: payload}
	b, err := f.AppendBinary(nil)
	if err != nil {
		l.t.Fatal(err)
	}
	if err := l.nodes[to].Receive(Inbound{From: members[id], Data: b, Time: l.now}); err != nil {
		l.t.Fatalf("forged refresh refused: %v", err)
	}
}

// TestForgedRefreshes: without a key anyone can send a refresh in a
// member's name. One with another digest is believed in nothing: the
// node counts the member as agreeing still, stays agreed, and asks the
// member for its announcement (whose answer says what it is). One with
// the member's digest and the longest spacing keeps the member counted,
// once it falls silent, for at most three of twice the node's own
// spacing: no longer than an honest member of its build could be.
func TestForgedRefreshes(t *testing.T) {
	l := newAgreeLAN(t, insecure(1), insecure(2), insecure(3))
	l.quiet = true
	l.run(20 * time.Second)
	n2 := l.nodes[2]
	n2.Ready()
	var other [wire.ConfigDigestLen]byte
	copy(other[:], "another config!!")
	inc := n2.agree.members[1].cfgInc
	l.forgeRefresh(1, 2, inc, other, 5)
	if st := n2.Status().Agreement; n2.Standing() != StandingAgreed || len(st.Agree) != 3 || len(st.Differ) != 0 {
		t.Fatalf("after a forged refresh with another digest: %v, agree %v, differ %v", n2.Standing(), st.Agree, st.Differ)
	}
	asked := false
	for _, s := range n2.Ready().Sends {
		var f wire.Frame
		var c wire.ConfigAnnounce
		if f.UnmarshalBinary(n2.Finalize(s, l.now)) == nil && f.Kind == wire.KindConfig && f.Receiver == 1 &&
			c.UnmarshalBinary(f.Payload) == nil && c.Flags&wire.ConfigAnswer != 0 {
			asked = true
		}
	}
	if !asked {
		t.Fatal("a refresh with another digest did not make node 2 ask member 1 for its announcement")
	}

	// The member's own digest, the longest spacing, then the member
	// falls silent (its node is gone from the LAN).
	l.forgeRefresh(1, 2, inc, n2.agree.own.Digest, 0xffff)
	heard := l.now
	delete(l.nodes, 1)
	held := 3 * 2 * n2.agree.spacing
	for l.now.Sub(heard) < held+time.Second {
		l.run(time.Second)
		agrees := false
		for _, m := range n2.Status().Agreement.Members {
			agrees = agrees || m.ID == 1 && m.Agrees
		}
		if agrees && l.now.Sub(heard) > held {
			t.Fatalf("member 1 silent for %v still counts as agreeing (at most %v)", l.now.Sub(heard), held)
		}
	}
}

// TestRefreshesResumeAfterNewIncarnation: a node that moves to a new
// incarnation while running (ReplaceCore, after a step back) is new to
// the members: they hold no refresh of that incarnation, and would send it
// full announcements until its next refresh, a RefreshSpacing away (15 s
// at 16 members). It tells them again at its next round.
func TestRefreshesResumeAfterNewIncarnation(t *testing.T) {
	l := scaleLAN(t, 16, 100*time.Millisecond)
	l.run(40 * time.Second)
	if err := l.nodes[2].ReplaceCore(l.cores[2]); err != nil {
		t.Fatal(err)
	}
	l.run(10 * time.Second)
	for _, m := range l.nodes[1].Status().Agreement.Members {
		if m.ID == 2 && !m.Refreshes {
			t.Fatalf("10 s after member 2 moved to incarnation %d, node 1 does not take it as refreshing: %+v", l.nodes[2].Incarnation(), m)
		}
	}
}

// steppedBackLAN is three members at rest, their cores silent, where
// member 2 stood back on announcements forged in the others' names.
func steppedBackLAN(t *testing.T) *agreeLAN {
	t.Helper()
	l := newAgreeLAN(t, insecure(1), insecure(2), insecure(3))
	l.quiet = true
	l.run(30 * time.Second)
	for _, from := range []uint32{1, 3} {
		l.forgeAnnouncement(from, 2, 2)
	}
	if l.standing(2) != StandingSteppedBack {
		t.Fatalf("node 2 %v after forged announcements (%s): the test did not attack", l.standing(2), l.nodes[2].StandingReason())
	}
	return l
}

// TestStepBackEndSaidInFull: a node that stood back said so in its full
// announcements (ConfigSteppedBack); when it runs again the members must
// hear that, though they take refreshes from it, which carry no flag.
// Without a full round at the end of the step back, node 1 showed member
// 2 stepped back (and stood unsettled) until member 2's next full
// announcement, which at rest never came.
func TestStepBackEndSaidInFull(t *testing.T) {
	l := steppedBackLAN(t)
	l.run(time.Second)
	if l.standing(2) != StandingAgreed {
		t.Fatalf("node 2 still %v a second after the forged announcements (%s)", l.standing(2), l.nodes[2].StandingReason())
	}
	for _, m := range l.nodes[1].Status().Agreement.Members {
		if m.ID == 2 && m.SteppedBack {
			t.Fatalf("node 1 still shows member 2 stepped back a second after it ran again: %+v", m)
		}
	}
}

// TestStepBackEndLost: the one full announcement that says a member runs
// again after standing back is lost; the member then sends only
// refreshes, which carry no flags. A refresh from a member shown stepped
// back makes the node ask for its announcement, which clears it: without
// the ask, node 1 showed member 2 stepped back for good.
func TestStepBackEndLost(t *testing.T) {
	l := steppedBackLAN(t)
	shownBack := func() bool {
		for _, m := range l.nodes[1].Status().Agreement.Members {
			if m.ID == 2 && m.SteppedBack {
				return true
			}
		}
		return false
	}
	for !shownBack() {
		if l.standing(2) != StandingSteppedBack {
			t.Fatal("node 2 ran again before node 1 heard it stepped back")
		}
		l.run(l.step)
	}
	l.drop = func(from, to uint32, k wire.Kind) bool { return from == 2 && to == 1 && k == wire.KindConfig }
	for l.standing(2) != StandingAgreed {
		l.run(l.step)
	}
	l.run(time.Second)
	l.drop = nil
	var shown bool
	for range 60 {
		l.run(time.Second)
		if shown = shownBack(); !shown {
			break
		}
	}
	if shown {
		t.Fatalf("node 1 still shows member 2 stepped back a minute after it ran again (its announcement saying so lost): %s", l.notices(1))
	}
}

// TestRefreshingMemberRekeyed: a member that refreshes, restarted with
// another key right after its refresh, is listed as differing in status
// within a quiet window and its asks, as before refreshes, not after
// three refresh spacings (45 s at 16 members, 189 s at 64) in which the
// log said its key differs while status said it agrees: once its refresh
// is a quiet window old, the evidence against it makes the node ask it
// for its announcement, which a member under another key cannot answer.
func TestRefreshingMemberRekeyed(t *testing.T) {
	const n = 16
	l := scaleLAN(t, n, 250*time.Millisecond)
	l.run(60 * time.Second)
	if !l.nodes[1].agree.members[n].refreshes() {
		t.Fatalf("member %d does not refresh at rest: the test tests nothing", n)
	}
	for p := l.pairs[[2]uint32{n, 1}]; l.pairs[[2]uint32{n, 1}] == p; {
		l.run(l.step)
	}
	other := wire.Key{ID: 7, Secret: []byte("fedcba9876543210fedcba9876543210")}
	l.restart(n, 2, func(c *Config) { c.Keys = []wire.Key{other} })
	restarted := l.now
	for !slices.Contains(l.nodes[1].Status().Agreement.Differ, n) {
		if l.now.Sub(restarted) > 3*time.Minute {
			t.Fatal("node 1 never listed the rekeyed member as differing")
		}
		l.run(l.step)
	}
	took := l.now.Sub(restarted)
	if most := 3*DefaultQuietInterval + evidenceAsks*DefaultAnnounceInterval + 3*time.Second; took > most {
		t.Errorf("node 1 listed member %d, restarted with another key, as differing %v after (at most %v; it said so in its log: %q)", n, took, most, l.notices(1))
	}
}

// TestRefreshingMemberForgedEvidenceLostAnswer: frames forged under
// another key from a live member's address, once its refresh is a quiet
// window old, make node 1 ask it for its announcement; the answer is lost.
// One lost answer does not end its agreement (node 1 asks evidenceAsks
// times while evidence comes): with a single ask, the forger's one frame
// and one lost datagram listed a live member as differing (its frames
// refused) until its next refresh, up to a minute at 32 members.
func TestRefreshingMemberForgedEvidenceLostAnswer(t *testing.T) {
	const n = 32
	l := scaleLAN(t, n, 250*time.Millisecond)
	l.run(90 * time.Second)
	a, m := l.nodes[1].agree, l.nodes[1].agree.members[n]
	if !m.refreshes() || 3*m.refreshSpacing <= a.quietWindow {
		t.Fatalf("member %d refreshes %v every %v: the test tests nothing", n, m.refreshes(), m.refreshSpacing)
	}
	for l.now.Sub(m.heardAt) < a.quietWindow {
		l.run(l.step)
	}
	other := wire.Key{ID: 7, Secret: []byte("fedcba9876543210fedcba9876543210")}
	c := Config{ID: n, Members: scaleMembers(n), Keys: []wire.Key{other}, Cluster: "lab", Service: "electd", Incarnation: 1,
		Agreement: &Agreement{Algorithm: "bully", Params: map[string]string{"priorities": ""}}}
	forger, err := New(c, &recorder{})
	if err != nil {
		t.Fatal(err)
	}
	forger.Tick(l.now)
	l.drop = func(from, to uint32, k wire.Kind) bool { return from == n && to == 1 } // its answer lost
	for _, s := range forger.Ready().Sends {
		if s.To == c.Members[1] {
			l.nodes[1].Receive(Inbound{From: c.Members[n], Data: forger.Finalize(s, l.now), Time: l.now})
		}
	}
	l.run(3 * time.Second)
	l.drop = nil
	for _, mv := range l.nodes[1].Status().Agreement.Members {
		if mv.ID == n && mv.State != "agrees" {
			t.Fatalf("node 1 lists live member %d as %s after one forged frame and one lost answer: %+v", n, mv.State, mv)
		}
	}
}
