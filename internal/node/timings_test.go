package node

import (
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/wire"
)

// timed is a config of member id whose agreement tells heartbeat hb and
// leader timeout lt.
func timed(id uint32, hb, lt time.Duration) Config {
	return keyed(id, func(c *Config) {
		c.Agreement = &Agreement{Algorithm: "bully", Params: map[string]string{"priorities": ""}, Heartbeat: hb, LeaderTimeout: lt}
	})
}

// TestTimingsMismatchWarnsOnce: member 3 beats every second, members 1
// and 2 give a silent leader up after 400 ms. The configurations agree
// (timings are each host's own: nobody steps back), but each side warns
// of the other once, naming both flags and both values, and status says
// it; members whose timings fit are not named. Member 3 restarted without
// timings (an older build) is no longer named.
func TestTimingsMismatchWarnsOnce(t *testing.T) {
	l := newAgreeLAN(t, timed(1, 200*time.Millisecond, 400*time.Millisecond), timed(2, 200*time.Millisecond, 400*time.Millisecond),
		timed(3, time.Second, 3*time.Second))
	l.quiet = true
	l.run(time.Second)
	for _, id := range []uint32{1, 2} {
		got := l.notices(id)
		want := "timing mismatch with member 3: member 3 beats every 1s (its --heartbeat), this member gives a silent leader up after 400ms (its --leader-timeout)"
		if strings.Count(got, "timing mismatch") != 1 || !strings.Contains(got, want) {
			t.Fatalf("node %d noticed %q, want once %q", id, got, want)
		}
		st := l.nodes[id].Status().Agreement
		if l.standing(id) != StandingAgreed || len(st.Agree) != 3 {
			t.Fatalf("node %d: %v, agree %v: a timing is no configuration difference", id, l.standing(id), st.Agree)
		}
		if len(st.TimingMismatch) != 1 || st.TimingMismatch[0] != 3 {
			t.Fatalf("node %d timing_mismatch %v, want [3]", id, st.TimingMismatch)
		}
		for _, m := range st.Members {
			if (m.ID == 3) != (len(m.Timing) > 0) {
				t.Fatalf("node %d's status of member %d: timing %q", id, m.ID, m.Timing)
			}
			if m.ID == 3 && (m.Heartbeat != time.Second || m.LeaderTimeout != 3*time.Second) {
				t.Fatalf("node %d's status of member 3: heartbeat %v, leader timeout %v", id, m.Heartbeat, m.LeaderTimeout)
			}
		}
	}
	got := l.notices(3)
	for _, id := range []string{"1", "2"} {
		want := "timing mismatch with member " + id + ": member " + id + " gives a silent leader up after 400ms (its --leader-timeout), this member beats every 1s (its --heartbeat)"
		if !strings.Contains(got, want) {
			t.Fatalf("node 3 noticed %q, want %q", got, want)
		}
	}
	// At rest, and through the members' asks, no second warning.
	l.run(30 * time.Second)
	for id := range l.nodes {
		if got := l.notices(id); got != "" {
			t.Fatalf("node %d noticed again: %q", id, got)
		}
	}
	// Member 3 restarts without timings (rolled back to an older build):
	// its old ones are forgotten with its old incarnation.
	l.restart(3, 2, nil) // bully, no timings
	l.run(2 * time.Second)
	for _, id := range []uint32{1, 2} {
		if st := l.nodes[id].Status().Agreement; len(st.TimingMismatch) != 0 {
			t.Fatalf("node %d still names %v after member 3 restarted without timings", id, st.TimingMismatch)
		}
	}
}

// TestTimingsForgottenWithoutAgreement: member 3, whose timings did not
// fit, restarts without configuration agreement at all (an older build,
// or timed outside --mode berkeley): it never announces again, and is
// followed unverified once it has been heard long enough. Its last run's
// timings are forgotten then, not named in status until this node
// restarts.
func TestTimingsForgottenWithoutAgreement(t *testing.T) {
	l := newAgreeLAN(t, timed(1, 200*time.Millisecond, 400*time.Millisecond), timed(2, 200*time.Millisecond, 400*time.Millisecond),
		timed(3, time.Second, 3*time.Second))
	l.run(time.Second)
	if st := l.nodes[1].Status().Agreement; len(st.TimingMismatch) != 1 {
		t.Fatalf("node 1 timing_mismatch %v, want [3]", st.TimingMismatch)
	}
	l.restart(3, 2, func(c *Config) { c.Agreement = nil }) // it announces nothing
	l.run(10 * time.Second)
	for _, id := range []uint32{1, 2} {
		if got := l.notices(id); !strings.Contains(got, "member 3 announces no configuration") {
			t.Fatalf("node %d noticed %q: member 3 not followed unverified", id, got)
		}
		if st := l.nodes[id].Status().Agreement; len(st.TimingMismatch) != 0 {
			t.Fatalf("node %d still names %v after member 3 restarted without agreement", id, st.TimingMismatch)
		}
	}
}

// TestTimingsLostAreToldAgain: once agreed, members exchange refreshes
// only; member 3's early KindConfigTimings to member 1 are lost. They are
// told again on the retries (each riding on a refresh), and member 1
// names the mismatch too.
func TestTimingsLostAreToldAgain(t *testing.T) {
	l := newAgreeLAN(t, timed(1, 200*time.Millisecond, 400*time.Millisecond), timed(2, 200*time.Millisecond, 400*time.Millisecond),
		timed(3, time.Second, 3*time.Second))
	l.quiet = true
	lost := 0
	l.drop = func(from, to uint32, k wire.Kind) bool {
		if from == 3 && to == 1 && k == wire.KindConfigTimings {
			lost++
			return true
		}
		return false
	}
	l.run(2 * time.Second)
	if lost == 0 || l.standing(1) != StandingAgreed {
		t.Fatalf("%d timings from 3 to 1 lost, node 1 %v: want some lost, agreed", lost, l.standing(1))
	}
	if st := l.nodes[1].Status().Agreement; len(st.TimingMismatch) != 0 {
		t.Fatalf("node 1 timing_mismatch %v with every timings of member 3 lost", st.TimingMismatch)
	}
	l.drop = nil
	l.run(time.Minute)
	if st := l.nodes[1].Status().Agreement; len(st.TimingMismatch) != 1 || st.TimingMismatch[0] != 3 {
		t.Fatalf("node 1 timing_mismatch %v a minute after the loss, want [3]", st.TimingMismatch)
	}
	if got := l.notices(1); strings.Count(got, "timing mismatch with member 3") != 1 {
		t.Fatalf("node 1 noticed %q, want the mismatch once", got)
	}
	// Told again by the retries (15 s, then 30 s after the first two),
	// each riding on a refresh, and answered once: not one per tick.
	if got := l.timings[[2]uint32{3, 1}] - lost; got < 2 || got > 10 {
		t.Fatalf("member 3 sent member 1 its timings %d times in a minute, want 2 to 10", got)
	}
}

// TestTimingsAtRestNotWithEveryRefresh: three members of this build whose
// timings fit, at rest. Each pair tells its timings on the retries (one
// every timingsRetryCap once they have backed off), not with every
// refresh: answering every tell made each refresh carry timings both ways
// for good, as many frames as the refreshes (225 a pair in 30 minutes at
// 8 s spacings; at 64 members 63 frames a second more for the cluster).
func TestTimingsAtRestNotWithEveryRefresh(t *testing.T) {
	l := newAgreeLAN(t, timed(1, 200*time.Millisecond, 400*time.Millisecond), timed(2, 200*time.Millisecond, 400*time.Millisecond),
		timed(3, 200*time.Millisecond, 400*time.Millisecond))
	l.quiet = true
	l.run(10 * time.Minute)
	const window = 30 * time.Minute
	timings, refreshes := maps.Clone(l.timings), maps.Clone(l.pairs)
	l.run(window)
	for pair := range l.timings {
		told, refreshed := l.timings[pair]-timings[pair], l.pairs[pair]-refreshes[pair]
		if most := int(window/timingsRetryCap) + 1; told == 0 || told > most || refreshed < 100 {
			t.Errorf("member %d told member %d its timings %d times in %v at rest, with %d refreshes: want 1 to %d (one every %v), and refreshes going on",
				pair[0], pair[1], told, window, refreshed, most, timingsRetryCap)
		}
	}
	for id := range l.nodes {
		if got := l.notices(id); strings.Contains(got, "timing") {
			t.Errorf("node %d noticed %q", id, got)
		}
	}
}

// TestTimingsToOlderBuild: a member of an older build drops every
// KindConfigTimings as unknown_kind; it is sent them timingsTells times
// per pair of incarnations, then backing off to one every
// timingsRetryCap, not with every announcement (one every QuietInterval
// to a member that does not refresh): in an hour at rest, about 12 per
// pair (docs/mismatch.md says so). A node without timings (mutexd, whose
// timing is agreed in full) sends none.
func TestTimingsToOlderBuild(t *testing.T) {
	l := newAgreeLAN(t, timed(1, 200*time.Millisecond, 400*time.Millisecond), timed(2, 200*time.Millisecond, 400*time.Millisecond),
		keyed(3, nil))
	l.legacy[3] = true
	l.quiet = true
	l.run(2 * time.Minute)
	// Member 3's incarnation unknown, then announced: two pairs; then
	// one after 15 s, 30 s and 1 minute.
	first := map[uint32]int{}
	for _, from := range []uint32{1, 2} {
		first[from] = l.timings[[2]uint32{from, 3}]
		if got, most := first[from], 2*timingsTells+3; got == 0 || got > most {
			t.Errorf("node %d sent the older build %d timings in 2 minutes, want 1 to %d", from, got, most)
		}
	}
	l.run(time.Hour)
	for _, from := range []uint32{1, 2} {
		if got, most := l.timings[[2]uint32{from, 3}]-first[from], int(time.Hour/timingsRetryCap)+1; got < most-2 || got > most {
			t.Errorf("node %d sent the older build %d timings in the next hour, want %d to %d", from, got, most-2, most)
		}
		if got := l.timings[[2]uint32{3, from}]; got != 0 {
			t.Errorf("node 3, without timings, sent %d", got)
		}
	}
	for id := range l.nodes {
		if got := l.notices(id); strings.Contains(got, "timing") {
			t.Errorf("node %d noticed %q", id, got)
		}
	}
}

// mismatchNamed says whether node id's status names exactly the members
// want as not fitting its timing.
func (l *agreeLAN) mismatchNamed(id uint32, want ...uint32) bool {
	return slices.Equal(l.nodes[id].Status().Agreement.TimingMismatch, want)
}

// TestTimingsLostBothWaysAreToldAgain: every KindConfigTimings between
// member 3 (a heartbeat of 1 s) and the others (a leader timeout of
// 400 ms) is lost both ways for twenty minutes from the start (a loss
// burst, a socket not yet up), everything else delivered. Neither side
// of a pair ever heard the other's, so neither knew the other knows the
// kind: both used to give up after timingsTells each, and the mismatch
// was never said for as long as both ran. The tells go on, backing off
// to one every timingsRetryCap: once the loss ends, every pair learns
// within a cap and a refresh spacing, warns once, and the tells to a
// silent member in the twenty minutes stay few.
func TestTimingsLostBothWaysAreToldAgain(t *testing.T) {
	l := newAgreeLAN(t, timed(1, 200*time.Millisecond, 400*time.Millisecond), timed(2, 200*time.Millisecond, 400*time.Millisecond),
		timed(3, time.Second, 3*time.Second))
	l.quiet = true
	l.drop = func(from, to uint32, k wire.Kind) bool {
		return k == wire.KindConfigTimings && (from == 3 || to == 3)
	}
	const loss = 20 * time.Minute
	l.run(loss)
	for _, id := range []uint32{1, 2, 3} {
		if l.standing(id) != StandingAgreed || !l.mismatchNamed(id) {
			t.Fatalf("node %d %v, timing_mismatch %v with every timings to and from member 3 lost", id, l.standing(id),
				l.nodes[id].Status().Agreement.TimingMismatch)
		}
	}
	// The cost while nothing answers: timingsTells in each pair
	// of incarnations (at most two: the member's unknown, then
	// announced), then one after 15 s, 30 s, 1, 2, 4 minutes, and every
	// 5 minutes (timingsRetryCap): 7 in 20 minutes.
	for _, p := range [][2]uint32{{1, 3}, {3, 1}, {2, 3}, {3, 2}} {
		if got, least, most := l.timings[p], timingsTells+6, 2*timingsTells+7; got < least || got > most {
			t.Errorf("member %d told member %d its timings %d times in %v unanswered, want %d to %d", p[0], p[1], got, loss, least, most)
		}
	}
	l.drop = nil
	// Learned within a retry gap at its cap (timingsRetryCap, 5 minutes)
	// and a refresh spacing (8 s).
	const within = 5*time.Minute + 10*time.Second
	l.run(within)
	for _, id := range []uint32{1, 2} {
		if !l.mismatchNamed(id, 3) {
			t.Fatalf("node %d timing_mismatch %v %v after the loss ended, want [3]", id,
				l.nodes[id].Status().Agreement.TimingMismatch, within)
		}
		if got := l.notices(id); strings.Count(got, "timing mismatch with member 3") != 1 {
			t.Fatalf("node %d noticed %q, want the mismatch with member 3 once", id, got)
		}
	}
	if !l.mismatchNamed(3, 1, 2) {
		t.Fatalf("node 3 timing_mismatch %v %v after the loss ended, want [1 2]", l.nodes[3].Status().Agreement.TimingMismatch, within)
	}
	if got := l.notices(3); strings.Count(got, "timing mismatch with member") != 2 {
		t.Fatalf("node 3 noticed %q, want each mismatch once", got)
	}
}

// TestTimingsRejudgedAfterRestart: member 3 restarts with other flags,
// and is judged again by its new run's timings. First from a fitting
// heartbeat to one of 1 s, every timings to and from it lost for 30 s
// after the restart (the others forgot its last run's with it, and
// its new run knows nobody's: every pair's early tells lost both ways):
// the mismatch is said within a retry cap after the loss. Then member 1
// restarts, the same loss after it: it learns member 3's again, and
// member 3 its. Then member 3 restarts fixed: the others' status no
// longer names it, shows its new timings, and says at INFO that the
// mismatch it warned of is over.
func TestTimingsRejudgedAfterRestart(t *testing.T) {
	fits := func(c *Config) { c.Agreement = timed(c.ID, 200*time.Millisecond, 400*time.Millisecond).Agreement }
	slow := func(c *Config) { c.Agreement = timed(c.ID, time.Second, 3*time.Second).Agreement }
	l := newAgreeLAN(t, timed(1, 200*time.Millisecond, 400*time.Millisecond), timed(2, 200*time.Millisecond, 400*time.Millisecond),
		timed(3, 200*time.Millisecond, 400*time.Millisecond))
	l.quiet = true
	l.run(2 * time.Second)
	for id := range l.nodes {
		if !l.mismatchNamed(id) || l.notices(id) != "" {
			t.Fatalf("node %d names %v, noticed %q: every timing fits", id, l.nodes[id].Status().Agreement.TimingMismatch, l.notices(id))
		}
	}
	// lose drops every timings to and from member id for d after now.
	lose := func(id uint32, d time.Duration) {
		end := l.now.Add(d)
		l.drop = func(from, to uint32, k wire.Kind) bool {
			return k == wire.KindConfigTimings && (from == id || to == id) && l.now.Before(end)
		}
	}
	const within = 30*time.Second + 5*time.Minute + 10*time.Second // the loss, a retry cap, a refresh spacing
	l.restart(3, 2, slow)
	lose(3, 30*time.Second)
	l.run(within)
	for _, id := range []uint32{1, 2} {
		if !l.mismatchNamed(id, 3) {
			t.Fatalf("node %d names %v %v after member 3 restarted with --heartbeat 1s, want [3]", id, l.nodes[id].Status().Agreement.TimingMismatch, within)
		}
		if got := l.notices(id); strings.Count(got, "timing mismatch with member 3: member 3 beats every 1s") != 1 {
			t.Fatalf("node %d noticed %q, want the mismatch once", id, got)
		}
	}
	if !l.mismatchNamed(3, 1, 2) {
		t.Fatalf("restarted node 3 names %v %v after its restart, want [1 2]", l.nodes[3].Status().Agreement.TimingMismatch, within)
	}
	l.notices(3)

	l.restart(1, 2, fits)
	lose(1, 30*time.Second)
	l.run(within)
	if !l.mismatchNamed(1, 3) || !l.mismatchNamed(3, 1, 2) {
		t.Fatalf("after member 1 restarted: node 1 names %v, node 3 %v, want [3] and [1 2]",
			l.nodes[1].Status().Agreement.TimingMismatch, l.nodes[3].Status().Agreement.TimingMismatch)
	}
	if got := l.notices(1); strings.Count(got, "timing mismatch with member 3") != 1 {
		t.Fatalf("restarted node 1 noticed %q, want the mismatch once", got)
	}
	if got := l.notices(3); strings.Count(got, "timing mismatch with member 1") != 1 {
		t.Fatalf("node 3 noticed %q, want member 1's new run's mismatch once", got)
	}

	l.restart(3, 3, fits)
	l.run(2 * time.Second)
	for _, id := range []uint32{1, 2} {
		st := l.nodes[id].Status().Agreement
		if len(st.TimingMismatch) != 0 {
			t.Fatalf("node %d names %v after member 3 restarted fixed", id, st.TimingMismatch)
		}
		for _, m := range st.Members {
			if m.ID == 3 && (m.Heartbeat != 200*time.Millisecond || m.LeaderTimeout != 400*time.Millisecond || len(m.Timing) != 0) {
				t.Fatalf("node %d's status of member 3 fixed: heartbeat %v, leader timeout %v, timing %q", id, m.Heartbeat, m.LeaderTimeout, m.Timing)
			}
		}
		var said []Notice
		for _, nt := range l.nodes[id].Notices() {
			if strings.Contains(nt.Msg, "timing") {
				said = append(said, nt)
			}
		}
		want := "member 3's timing fits this member's now"
		if len(said) != 1 || said[0].Warn || said[0].Member != 3 || !strings.HasPrefix(said[0].Msg, want) {
			t.Fatalf("node %d said %+v of member 3 fixed, want one INFO line %q", id, said, want)
		}
	}
	if !l.mismatchNamed(3) || l.notices(3) != "" {
		t.Fatalf("node 3 fixed names %v, noticed %q", l.nodes[3].Status().Agreement.TimingMismatch, l.notices(3))
	}
}

// FuzzReceiveTimings: member 1, a key holder whose configuration agrees,
// sends member 2 a config_timings frame (kind 126) with any payload,
// numbered and sealed by member 1's own node, so that it authenticates:
// FuzzReceive and FuzzReceiveAgreement cannot forge a MAC, so they never
// get a kind 126 frame past authentication. Nothing panics; a payload
// that does not decode is refused, counted and changes nothing; one that
// decodes is shown in status as it came, named a mismatch exactly when it
// does not fit member 2's own timing (heartbeat 200 ms, leader timeout
// 400 ms), said in bounded text, and moves nothing else: member 2 still
// agrees, its core never sees the frame, and member 1's announcements and
// frames are still taken after it.
func FuzzReceiveTimings(f *testing.F) {
	for _, tm := range []wire.ConfigTimings{
		{Heartbeat: uint64(200 * time.Millisecond), LeaderTimeout: uint64(400 * time.Millisecond)},
		{Heartbeat: uint64(time.Second), LeaderTimeout: uint64(3 * time.Second)},
		{Heartbeat: uint64(50 * time.Millisecond), LeaderTimeout: uint64(150 * time.Millisecond)},
		{Heartbeat: uint64(400 * time.Millisecond), LeaderTimeout: uint64(800 * time.Millisecond)}, // at the bounds
		{Heartbeat: uint64(100 * time.Millisecond), LeaderTimeout: uint64(200 * time.Millisecond)},
		{Heartbeat: 1, LeaderTimeout: 1},
		{Heartbeat: wire.MaxTimingNanos, LeaderTimeout: wire.MaxTimingNanos},
	} {
		b, err := tm.AppendBinary(nil)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte{wire.ConfigVersion, 0, 0, 0})
	f.Fuzz(func(t *testing.T, payload []byte) {
		const hb, lt = 200 * time.Millisecond, 400 * time.Millisecond
		l := newAgreeLAN(t, timed(1, hb, lt), timed(2, hb, lt), timed(3, hb, lt))
		l.quiet = true
		l.run(time.Second)
		a, b := l.nodes[1], l.nodes[2]
		if l.standing(2) != StandingAgreed {
			t.Fatalf("node 2 %v before the frame", l.standing(2))
		}
		l.notices(2)
		before := b.Status()
		steps := len(l.cores[2].steps)
		a.own = append(a.own, core.Message{To: 2, Kind: wire.KindConfigTimings, Payload: payload})
		var frame []byte
		for _, s := range a.Ready().Sends {
			if s.Kind == wire.KindConfigTimings && s.To == members[2] {
				frame = a.Finalize(s, l.now)
			}
		}
		if frame == nil {
			return // not encodable (a payload beyond a frame's length): never leaves
		}
		err := b.Receive(Inbound{From: members[1], Data: frame, Time: l.now})
		var want wire.ConfigTimings
		derr := want.UnmarshalBinary(payload)
		if (err == nil) != (derr == nil) {
			t.Fatalf("payload %x: received %v, decodes %v", payload, err, derr)
		}
		after := b.Status()
		view := func(st Status) MemberAgreement {
			for _, m := range st.Agreement.Members {
				if m.ID == 1 {
					return m
				}
			}
			t.Fatalf("no member 1 in %+v", st.Agreement.Members)
			return MemberAgreement{}
		}
		if len(l.cores[2].steps) != steps {
			t.Fatalf("config_timings reached the core (err %v)", err)
		}
		if err != nil {
			if after.TotalDropped() != before.TotalDropped()+1 {
				t.Fatalf("refused (%v) without being counted", err)
			}
			if v, w := view(after), view(before); v.Heartbeat != w.Heartbeat || v.LeaderTimeout != w.LeaderTimeout || !slices.Equal(v.Timing, w.Timing) {
				t.Fatalf("a refused payload (%v) changed member 1's timing: %+v -> %+v", err, w, v)
			}
		} else {
			v := view(after)
			if v.Heartbeat != time.Duration(want.Heartbeat) || v.LeaderTimeout != time.Duration(want.LeaderTimeout) {
				t.Fatalf("status shows %v / %v, member 1 told %d / %d ns", v.Heartbeat, v.LeaderTimeout, want.Heartbeat, want.LeaderTimeout)
			}
			misfit := time.Duration(want.Heartbeat) >= lt || time.Duration(want.LeaderTimeout) <= hb
			if named := slices.Contains(after.Agreement.TimingMismatch, 1); named != misfit || (len(v.Timing) > 0) != misfit {
				t.Fatalf("timings %v / %v: named a mismatch %v (%q), want %v",
					time.Duration(want.Heartbeat), time.Duration(want.LeaderTimeout), named, v.Timing, misfit)
			}
		}
		for _, nt := range b.Notices() {
			if len(nt.Msg) > 8192 {
				t.Fatalf("notice of %d bytes", len(nt.Msg))
			}
		}
		if l.standing(2) != StandingAgreed {
			t.Fatalf("node 2 %v after member 1's timings (err %v)", l.standing(2), err)
		}
		l.run(10 * time.Second)
		if l.standing(2) != StandingAgreed || view(b.Status()).State != "agrees" {
			t.Fatalf("node 2 %v, view of member 1 %+v, after its timings", l.standing(2), view(b.Status()))
		}
	})
}
