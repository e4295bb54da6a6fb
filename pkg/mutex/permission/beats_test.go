package permission_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/mutex"
	"github.com/synclab/synclab/pkg/mutex/internal/mutextest"
	"github.com/synclab/synclab/pkg/mutex/permission"
	"github.com/synclab/synclab/pkg/wire"
)

// TestLateLoopLeaseShortfall: a loaded host whose loop sends every busy
// heartbeat δ late (8 in a row), the others' frames arriving just before
// each tick. Leases are counted from the majority last heard (leaseFrom):
// the frames' count (countFor) must not fall behind their stamps by the
// lateness summed over every beat it looks back across. Before, it did
// (a review): 5δ - Margin/4 short, 50 ms at δ = 20 ms where counting at
// the read had lost 20, 150 ms at δ = 40 ms. Each beat's lateness is
// credited up to Margin/10, at most Margin/4 in all (the package doc,
// "Links"): nothing is lost at δ = 20 ms, and at δ = 40 ms at most
// 5δ - Margin/2.
//
// A renewal asked then waits for a majority counted since its asking
// (renewFrom), so its lease is never short of the asking and the
// lateness costs it time instead: answered a millisecond later, it is
// confirmed on the answers at δ = 10 ms; at 20 and 40 ms they count no
// later than the last late beat (its lateness is not credited until
// inFlight after it), and the renewal waits for the others' frames after
// the next busy heartbeat.
func TestLateLoopLeaseShortfall(t *testing.T) {
	for _, tc := range []struct {
		late, most, wait time.Duration
	}{
		{10 * time.Millisecond, 0, time.Millisecond},
		{20 * time.Millisecond, 0, 221 * time.Millisecond},
		{40 * time.Millisecond, 100 * time.Millisecond, 241 * time.Millisecond},
	} {
		t.Run(fmt.Sprintf("late %v", tc.late), func(t *testing.T) {
			m, id := grantedMember(t, []uint32{1, 2, 3})
			busy := m.c.Config().HeartbeatInterval / 5
			lease := m.c.Config().MaxLease
			late := func() (heard time.Time) {
				m.tick(busy + tc.late - time.Millisecond)
				heard = m.now
				m.beat(2)
				m.beat(3)
				m.tick(time.Millisecond) // the late heartbeat
				return heard
			}
			var heard time.Time
			for range 8 {
				heard = late()
			}
			if short := heard.Sub(m.c.MajorityHeard()); short > tc.most {
				t.Fatalf("a loop %v late on each of 8 busy heartbeats, the others heard %v ago: counted %v before their stamps (want at most %v)",
					tc.late, m.now.Sub(heard), short, tc.most)
			} else if testing.Verbose() {
				t.Logf("majority counted %v before its stamps", short)
			}

			m.out = nil
			renewed(m.c)
			asked := m.now
			if err := m.c.Renew(m.now, id, 0); err != nil {
				t.Fatal(err)
			}
			m.drain()
			if r := renewed(m.c); len(r) != 0 {
				t.Fatalf("renewal confirmed on the majority heard %v before it was asked: %+v", m.now.Sub(heard), r)
			}
			stamp, hb, ok := m.announcement()
			if !ok || !hb.AckWanted {
				t.Fatalf("the renewal's heartbeat asks for no acknowledgement: %+v (found %v)", hb, ok)
			}
			m.now = m.now.Add(time.Millisecond) // the round trip
			m.ack(2, stamp)
			m.ack(3, stamp)
			m.tick(0) // confirmed at a reading of the clock
			r := renewed(m.c)
			for len(r) == 0 && m.now.Sub(asked) < tc.wait {
				late()
				r = renewed(m.c)
			}
			if len(r) != 1 {
				t.Fatalf("renewal not confirmed %v after it was asked (want by %v): %+v", m.now.Sub(asked), tc.wait, r)
			}
			if short := asked.Add(lease).Sub(r[0].Expires); short > 0 {
				t.Fatalf("renewal confirmed %v after it was asked: its lease ends %v before the asking and the lease", m.now.Sub(asked), short)
			}
			if testing.Verbose() {
				t.Logf("renewal confirmed %v after it was asked", m.now.Sub(asked))
			}
		})
	}
}

// TestIdleTraffic: an idle cluster's frames (issue 34 counts them). Each
// member beats every heartbeat to the N-1 others, asking them to
// acknowledge (what its count needs: ackCap), and acknowledges each of
// theirs: 2(N-1) frames a second per member, N-1 before the
// acknowledgements, and nothing else (no probe, no relay, no retry).
func TestIdleTraffic(t *testing.T) {
	const n, window = 5, 30 * time.Second
	for _, f := range factories {
		t.Run(f.Name, func(t *testing.T) {
			s := mutextest.NewLockSim(t, f, mutex.Options{}, n, 1, sim.LinkConfig{Delay: 200 * time.Microsecond, Jitter: 300 * time.Microsecond}, 5*time.Second)
			sent := map[string]int{}
			s.OnSend(func(sf sim.SentFrame) {
				var hb wire.PermHeartbeat
				switch {
				case sf.Frame.Kind != wire.KindPermHeartbeat || hb.UnmarshalBinary(sf.Frame.Payload) != nil:
					sent[sf.Frame.Kind.String()]++
				case hb.Ack != 0:
					sent["ack"]++
				default:
					sent["heartbeat"]++
				}
			})
			s.Run(window)
			per := func(k string) float64 { return float64(sent[k]) / window.Seconds() / n }
			t.Logf("per member per second: %.2f heartbeats, %.2f acknowledgements; all frames %v", per("heartbeat"), per("ack"), sent)
			if h, a := per("heartbeat"), per("ack"); len(sent) != 2 || h > n-1+0.1 || a > n-1+0.1 {
				t.Fatalf("an idle member sends %.2f heartbeats and %.2f acknowledgements a second, want at most %d of each and nothing else: %v", h, a, n-1, sent)
			}
		})
	}
}

// TestIdleBeatsToIdleOlderBuild: members 2 and 3 send only 5-byte idle
// heartbeats, member 4 extended ones. A 5-byte idle heartbeat marks
// nothing: members of this build send it to a member they take for older,
// and a branch that marked them back for it left two members of this
// build on the 5-byte form for good, their frames uncapped
// (review-perm6: TestUpgradeRestartLossStaysCapped). So member 1's idle
// heartbeats go extended to all, asking for acknowledgements (an idle
// older member refuses them: a sign of life only); a busy 5-byte
// heartbeat (2: an older build) gets 2 the 5-byte form (but for the
// first idle heartbeat after it and every eighth since: olderProbe), and
// an extended frame of 2 (upgraded) the extended form again.
func TestIdleBeatsToIdleOlderBuild(t *testing.T) {
	m := newMember(t, 1, []uint32{1, 2, 3, 4})
	cfg := m.c.Config()
	ext := func(from uint32) {
		t.Helper()
		if err := m.step(from, wire.KindPermHeartbeat, wire.PermHeartbeat{Interval: 1000, Ext: true}, cfg.Lamport.Now()+1); err != nil {
			t.Fatal(err)
		}
	}
	// second runs a second of beats, 4's last in the form given, and
	// checks the form of 1's idle heartbeat to each member.
	second := func(short4 bool, want map[uint32]bool) {
		t.Helper()
		m.beat(2)
		m.beat(3)
		if short4 {
			m.beat(4)
		} else {
			ext(4)
		}
		m.out = nil
		m.tick(cfg.HeartbeatInterval)
		got := map[uint32]bool{}
		for _, msg := range m.out {
			var hb wire.PermHeartbeat
			if msg.Kind != wire.KindPermHeartbeat || hb.UnmarshalBinary(msg.Payload) != nil || hb.Busy || hb.Ack != 0 {
				continue
			}
			for _, to := range []uint32{2, 3, 4} {
				if msg.To == core.Broadcast || msg.To == to {
					// Extended if any heartbeat to it is: one that sends
					// 5-byte idle heartbeats gets a 5-byte copy too now
					// and then (TestShortCopiesToIdleOlderBuild).
					got[to] = got[to] || hb.Ext
					if hb.Ext && !hb.AckWanted {
						t.Errorf("member 1's extended idle heartbeat to %d asks for no acknowledgement: %+v", to, hb)
					}
				}
			}
		}
		for to, w := range want {
			if e, ok := got[to]; !ok || e != w {
				t.Fatalf("member 1's idle heartbeat to member %d: extended %v (sent %v), want extended %v", to, e, ok, w)
			}
		}
	}
	for range 5 {
		second(false, map[uint32]bool{2: true, 3: true, 4: true})
	}
	second(true, map[uint32]bool{2: true, 3: true, 4: true})
	if err := m.step(2, wire.KindPermHeartbeat, wire.PermHeartbeat{Interval: 1000, Busy: true}, cfg.Lamport.Now()+1); err != nil {
		t.Fatal(err)
	}
	// The first idle heartbeat after the mark, and every eighth since,
	// goes extended anyway (a member of this build marked by a forged
	// frame answers it: TestForgedShortBusyStaysCapped); 2, older,
	// refuses it and answers nothing extended, so it stays marked.
	for i := range 2*8 + 1 {
		second(false, map[uint32]bool{2: i%8 == 0, 3: true, 4: true})
		if older := m.c.Report().Detail.(permission.Detail).Older; !slices.Equal(older, []uint32{2}) {
			t.Fatalf("%d s after 2's busy 5-byte heartbeat, status lists members %v as older, want [2]", i+1, older)
		}
	}
	ext(2)
	second(false, map[uint32]bool{2: true, 3: true, 4: true})
}

// TestShortCopiesToIdleOlderBuild: member 2 sends only 5-byte idle
// heartbeats (an idle member of the build before the extended form, or
// one of this build that takes member 1 for older), member 3 extended
// ones. An idle 5-byte heartbeat marks nothing (review-perm6), so 1's
// idle heartbeats go extended to both; an older 2 refuses them, a sign of
// life only, and, until it was heard busy once, it took none of 1's idle
// heartbeats: the leave it gave 1's request stayed unspent (after 1
// crashed, it waited DeadAfter, not SuspectAfter). Now 1 sends 2 a
// 5-byte copy of each heartbeat of its idle tail (the notice, IdleNotice
// after the release, and two more) and of every eighth idle heartbeat
// after, and 3 none; none once 2 sent an extended frame.
func TestShortCopiesToIdleOlderBuild(t *testing.T) {
	m, id := grantedMember(t, []uint32{1, 2, 3}) // 2 and 3 beat in the 5-byte form (member.beat)
	cfg := m.c.Config()
	ext := func(from uint32) {
		t.Helper()
		if err := m.step(from, wire.KindPermHeartbeat, wire.PermHeartbeat{Interval: 1000, Ext: true}, cfg.Lamport.Now()+1); err != nil {
			t.Fatal(err)
		}
	}
	ext(3)
	if err := m.c.Release(m.now, id); err != nil {
		t.Fatal(err)
	}
	m.drain()
	released := m.now
	// run runs d, 2 and 3 beating every second (2 in the 5-byte form
	// unless ext2), and returns when 1 sent 5-byte idle heartbeats to 2
	// and 3 (since the release), and how many extended idle heartbeats
	// went to all.
	run := func(d time.Duration, ext2 bool) (to2, to3 []time.Duration, exts int) {
		t.Helper()
		const step = 10 * time.Millisecond
		for end := m.now.Add(d); m.now.Before(end); {
			m.out = nil
			m.tick(step)
			if m.now.Sub(released)%time.Second == 0 {
				if ext2 {
					ext(2)
				} else {
					m.beat(2)
				}
				ext(3)
			}
			for _, msg := range m.out {
				var hb wire.PermHeartbeat
				if msg.Kind != wire.KindPermHeartbeat || hb.UnmarshalBinary(msg.Payload) != nil || hb.Busy || hb.Ack != 0 {
					continue
				}
				switch {
				case hb.Ext && msg.To == core.Broadcast:
					exts++
				case hb.Ext:
					t.Errorf("an extended idle heartbeat to member %d alone", msg.To)
				case msg.To == 2:
					to2 = append(to2, m.now.Sub(released))
				default:
					to3 = append(to3, m.now.Sub(released))
				}
			}
		}
		return to2, to3, exts
	}
	to2, to3, exts := run(20*time.Second, false)
	t.Logf("5-byte copies to 2 at %v, to 3 at %v; %d extended idle heartbeats to all", to2, to3, exts)
	if len(to3) != 0 {
		t.Errorf("member 3 (extended heartbeats) got 5-byte idle heartbeats at %v", to3)
	}
	tail := cfg.IdleNotice() + 2*cfg.BusyHeartbeat() + 10*time.Millisecond
	if len(to2) < 3 || to2[0] > cfg.IdleNotice()+10*time.Millisecond || to2[2] > tail {
		t.Fatalf("member 2 (5-byte idle heartbeats) got 5-byte copies at %v after the release, want one at the notice (by %v) and two more by %v", to2, cfg.IdleNotice()+10*time.Millisecond, tail)
	}
	// Every eighth idle heartbeat after the tail (about 19 in 20 s: two
	// or three copies).
	if n := len(to2) - 3; n < 2 || n > 3 {
		t.Errorf("member 2 got %d 5-byte copies after the idle tail in 20 s, want every eighth idle heartbeat (2 or 3): %v", n, to2)
	}
	if exts < 19 {
		t.Errorf("%d extended idle heartbeats to all in 20 s: the copies must not replace them", exts)
	}
	if to2, _, _ := run(20*time.Second, true); len(to2) != 0 {
		t.Errorf("member 2, upgraded (extended heartbeats), still got 5-byte copies at %v", to2)
	}
}

// TestOlderBuildSaid: member 1 of five (majority 3) takes members for a
// build older than the extended heartbeat one by one (2 and 3: a busy
// 5-byte heartbeat; 4: a wire.KindHeartbeat; an idle 5-byte one marks
// nothing). Each is said
// once (EventOlderBuild): at INFO while the others of this build can
// still make a majority without them, at WARN, naming them all and what
// to do, once they are a majority of the others (then a renewal waits for
// their heartbeats). Status lists them (Detail.Older, and the "Older"
// line of `mutexd status`, saying what it costs); a member that sends an
// extended frame (upgraded) leaves the list. Before, nothing said which
// members were taken for older.
func TestOlderBuildSaid(t *testing.T) {
	m := newMember(t, 1, []uint32{1, 2, 3, 4, 5})
	cfg := m.c.Config()
	next := func() uint64 { return cfg.Lamport.Now() + 1 }
	feed := func(from uint32, k wire.Kind, p interface{ AppendBinary([]byte) ([]byte, error) }) {
		t.Helper()
		if err := m.step(from, k, p, next()); err != nil {
			t.Fatal(err)
		}
	}
	ext := func(from uint32) { feed(from, wire.KindPermHeartbeat, wire.PermHeartbeat{Interval: 1000, Ext: true}) }
	// check: the events said since the last call, and the status.
	check := func(step string, wantSaid []bool, wantOlder []uint32, wantLine string) {
		t.Helper()
		said := m.events(permission.EventOlderBuild)
		m.evs = nil
		var warns []bool
		for _, e := range said {
			warns = append(warns, e.Warn)
		}
		if !slices.Equal(warns, wantSaid) {
			t.Errorf("%s: %s said at WARN %v, want %v: %v", step, permission.EventOlderBuild, warns, wantSaid, said)
		}
		for _, e := range said {
			if e.Warn && !strings.Contains(e.Msg, "Upgrade members "+fmt.Sprint(wantOlder)) {
				t.Errorf("%s: the WARN does not name members %v and say to upgrade them: %s", step, wantOlder, e.Msg)
			}
			if !e.Warn && !strings.Contains(e.Msg, "rolling upgrade") {
				t.Errorf("%s: the INFO line does not say a rolling upgrade is normal: %s", step, e.Msg)
			}
		}
		st := m.c.Report()
		if got := st.Detail.(permission.Detail).Older; !slices.Equal(got, wantOlder) {
			t.Errorf("%s: status lists members %v as older, want %v", step, got, wantOlder)
		}
		raw, err := json.Marshal(st.Detail)
		if err != nil {
			t.Fatal(err)
		}
		lines, err := permission.StatusLines(st, raw)
		if err != nil {
			t.Fatal(err)
		}
		text := strings.Join(lines, "\n")
		if has := strings.Contains(text, "Older    :"); has != (wantLine != "") || !strings.Contains(text, wantLine) {
			t.Errorf("%s: status lines lack %q:\n%s", step, wantLine, text)
		}
	}
	busy := func(from uint32) { feed(from, wire.KindPermHeartbeat, wire.PermHeartbeat{Interval: 1000, Busy: true}) }
	ext(5)
	check("5 extended", nil, nil, "")
	m.beat(2)
	check("2 short, idle", nil, nil, "")
	busy(2)
	check("2 short, busy", []bool{false}, []uint32{2}, "Older    : members 2 taken for an older mutexd: heartbeats sent short; "+
		"their frames count by beats alone; renewals may wait for their heartbeats: upgrade them")
	busy(2)
	m.tick(cfg.HeartbeatInterval)
	m.beat(2)
	check("2 short again", nil, []uint32{2}, "Older    : members 2 ")
	feed(3, wire.KindPermHeartbeat, wire.PermHeartbeat{Interval: 1000, Busy: true})
	check("3 short, busy", []bool{false}, []uint32{2, 3}, "Older    : members 2,3 ")
	feed(4, wire.KindHeartbeat, wire.Heartbeat{})
	check("4 KindHeartbeat", []bool{true}, []uint32{2, 3, 4}, "a majority of the others: renewals wait for their heartbeats")
	feed(4, wire.KindHeartbeat, wire.Heartbeat{})
	check("4 again", nil, []uint32{2, 3, 4}, "Older    : members 2,3,4 ")
	ext(2) // upgraded
	check("2 extended", nil, []uint32{3, 4}, "Older    : members 3,4 taken for an older mutexd: heartbeats sent short; "+
		"their frames count by beats alone; renewals may wait")
	m.beat(2) // a short idle one after an extended one: not older
	check("2 short after extended", nil, []uint32{3, 4}, "Older    : members 3,4 ")
	ext(3)
	ext(4)
	check("all extended", nil, nil, "")
}

// TestUnackedBeatsCutOff: member 1, idle, hears members 2 and 3 beat
// every second throughout, but from some instant on neither
// acknowledges its heartbeats (they no longer reach them). What 1 heard
// of them after that counts no later than a heartbeat and inFlight after
// the last heartbeat of its they acknowledged (ackCap: they heard 1
// then, and may hear nothing of it since): 1 takes itself for cut off
// RejoinAfter after that, before the others, who last heard it then,
// could give it up (SuspectAfter after). Before, their frames counted as
// they came (capped only by 1's own beats, sent on time): 1 never took
// itself for cut off. One unacknowledged heartbeat costs nothing.
func TestUnackedBeatsCutOff(t *testing.T) {
	m := newMember(t, 1, []uint32{1, 2, 3})
	cfg := m.c.Config()
	second := func(ack bool) {
		m.tick(cfg.HeartbeatInterval)
		stamp, hb, ok := m.announcement()
		if !ok || !hb.AckWanted || hb.Busy {
			t.Fatalf("member 1's idle heartbeat asks for no acknowledgement: %+v (found %v)", hb, ok)
		}
		for _, from := range []uint32{2, 3} {
			if ack {
				m.ack(from, stamp)
			}
			m.beat(from)
		}
	}
	for range 5 {
		second(true)
	}
	second(false) // one lost: nothing happens
	second(true)
	if cut := m.events(permission.EventCutOff); len(cut) != 0 {
		t.Fatalf("cut off with every heartbeat but one acknowledged: %v", cut[0].Msg)
	}
	lastAcked := m.now
	m.evs = nil
	// From here 1 ticks every step (the others still beat every second,
	// unacknowledging), so that the instant it takes itself for cut off
	// is seen within step: a cap looser by less than a heartbeat fails
	// too (with a tick a second it passed loosened by 900 ms).
	const step = 5 * time.Millisecond
	bound := lastAcked.Add(cfg.HeartbeatInterval + cfg.Margin/4 + cfg.SuspectAfter - cfg.HeartbeatInterval - cfg.Margin)
	for m.now.Before(bound.Add(cfg.HeartbeatInterval)) && len(m.events(permission.EventCutOff)) == 0 {
		m.tick(step)
		if m.now.Sub(lastAcked)%cfg.HeartbeatInterval == 0 {
			m.beat(2)
			m.beat(3)
		}
	}
	cut := m.events(permission.EventCutOff)
	t.Logf("cut off %v after the last acknowledged heartbeat (bound %v)", m.now.Sub(lastAcked), bound.Sub(lastAcked))
	if len(cut) == 0 || m.now.After(bound.Add(step)) {
		t.Fatalf("member 1 heard 2 and 3 every second, its heartbeats unacknowledged for %v since %v: cut off %d times by %v (want by %v, its next tick after)",
			m.now.Sub(lastAcked), lastAcked.Sub(sim.DefaultStart), len(cut), m.now.Sub(sim.DefaultStart), bound.Sub(sim.DefaultStart))
	}
}
