package maekawa_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/mutex"
	"github.com/synclab/synclab/pkg/mutex/internal/mutextest"
	"github.com/synclab/synclab/pkg/mutex/maekawa"
	"github.com/synclab/synclab/pkg/wire"
)

// TestGrantReadLate: the answers that complete a grant came in time (their
// receive stamps, t0+2 ms, leave most of the lease), but the loop read
// them late: the process was paused (SIGSTOP) with them in the kernel, and
// its first reading of the clock after they were stepped is 1.5 s on,
// past the lease's end. No grant is reported (before, Step reported one
// judged on the stamps, and the next Tick ended it at once: seed 628 of
// the harsh oracle); the votes are given back, a WARN says why, and the
// request asks again after its backoff. Both ways to a grant: at once on
// votes that recorded the proposal, and after a commit round.
func TestGrantReadLate(t *testing.T) {
	const lease = time.Second
	for _, commit := range []bool{false, true} {
		name := "direct"
		if commit {
			name = "commit"
		}
		t.Run(name, func(t *testing.T) {
			c := newCore(t, func(cfg *maekawa.Config) { cfg.Members = []uint32{1, 2, 3, 4} }) // 2x2: cross of 1 is 1,2,3
			id, err := c.Acquire(t0, mutex.Request{Lock: "db", Lease: lease})
			if err != nil {
				t.Fatal(err)
			}
			c.Ready()
			arrived := t0.Add(2 * time.Millisecond)
			step := func(v uint32, op wire.VoteOp, fence uint64, recorded bool) {
				m := frame(v, wire.KindMaekawa, wire.Vote{Op: op, Name: "db", Attempt: attemptOf(t, c), Fence: fence, Recorded: recorded})
				m.Time = arrived
				if err := c.Step(m); err != nil {
					t.Fatal(err)
				}
			}
			step(2, wire.VoteLocked, 1, !commit)
			step(3, wire.VoteLocked, 1, !commit)
			if commit {
				if got := sent(c.Ready()); len(got) != 2 || got[0] != "2 commit 1" {
					t.Fatalf("votes not recorded: %v, want fence 1 committed", got)
				}
				step(2, wire.VoteCommitOK, 1, false)
				step(3, wire.VoteCommitOK, 1, false)
			}
			if out := c.Outcomes(); len(out) != 0 {
				t.Fatalf("reported on the frames' stamps, before any reading of the clock: %+v", out)
			}
			if d := c.Deadline(); d.After(arrived.Add(time.Millisecond)) {
				t.Fatalf("deadline %v after the grant came due: want a Tick at once", d.Sub(t0))
			}
			resumed := t0.Add(1500 * time.Millisecond)
			c.Tick(resumed)
			rd := c.Ready()
			for _, o := range c.Outcomes() {
				if g, ok := o.(mutex.Granted); ok {
					t.Fatalf("granted at %v with its lease over at %v: %+v", resumed.Sub(t0), g.Expires.Sub(t0), g)
				}
			}
			if st, ok := c.Lookup(id); !ok || st.Granted {
				t.Fatalf("request after the late reading: %+v (found %v), want it waiting", st, ok)
			}
			if got := sent(rd); !slices.Contains(got, "2 release 0") || !slices.Contains(got, "3 release 0") {
				t.Fatalf("frames at the late reading: %v, want the votes of 2 and 3 released", got)
			}
			i := slices.IndexFunc(rd.Events, func(e core.Event) bool { return e.Name == mutex.EventGrantLate })
			if i < 0 || !rd.Events[i].Warn {
				t.Fatalf("events: %+v, want a WARN %s", rd.Events, mutex.EventGrantLate)
			}
			if st := c.Report(); st.Counters["grants_late"] != 1 || st.Counters["retries_lease_spent"] != 1 {
				t.Fatalf("counters: grants_late %d, retries_lease_spent %d, want 1 and 1", st.Counters["grants_late"], st.Counters["retries_lease_spent"])
			}
			// The request asks again once its backoff ends.
			c.Tick(resumed.Add(time.Second))
			if got := sent(c.Ready()); !slices.ContainsFunc(got, func(s string) bool { return strings.HasPrefix(s, "2 request ") }) {
				t.Fatalf("after the backoff: %v, want the request sent again", got)
			}
		})
	}
}

// TestGrantReadInTime: a grant whose answers the loop reads with time
// left is reported at the next reading of the clock, its lease counted
// from when the votes began (t0), not from that reading: lateness never
// lengthens a lease.
func TestGrantReadInTime(t *testing.T) {
	const lease = time.Second
	c := newCore(t, func(cfg *maekawa.Config) { cfg.Members = []uint32{1, 2, 3, 4} })
	id, _ := c.Acquire(t0, mutex.Request{Lock: "db", Lease: lease})
	c.Ready()
	for _, v := range []uint32{2, 3} {
		m := frame(v, wire.KindMaekawa, wire.Vote{Op: wire.VoteLocked, Name: "db", Attempt: attemptOf(t, c), Fence: 1, Recorded: true})
		m.Time = t0.Add(2 * time.Millisecond)
		c.Step(m)
	}
	c.Tick(t0.Add(400 * time.Millisecond)) // read late, with 600 ms left
	var g mutex.Granted
	for _, o := range c.Outcomes() {
		if x, ok := o.(mutex.Granted); ok {
			g = x
		}
	}
	if g.ID != id || !g.Expires.Equal(t0.Add(lease)) {
		t.Fatalf("granted %+v, want request %d expiring at t0+%v", g, id, lease)
	}
}

// TestRenewalReadLate: a renewal its voters confirmed in time (their
// renew_ok's stamps) is reported at the next reading of the clock, its
// lease from when it was asked; read after that lease ended (the loop ran
// late), it is not reported at all (renewals_late, said at WARN as
// lock_renewal_late) and the lease runs on
// as it was (here a 3 s grant renewed for 1 s, the renewal read 1 s after
// it was asked, the grant's lease still running).
func TestRenewalReadLate(t *testing.T) {
	const lease, renewal = 3 * time.Second, time.Second
	for _, late := range []bool{false, true} {
		t.Run(fmt.Sprintf("late=%v", late), func(t *testing.T) {
			c, id, step := grantedDB(t, lease)
			renewAt := t0.Add(500 * time.Millisecond)
			if err := c.Renew(renewAt, id, renewal); err != nil {
				t.Fatal(err)
			}
			c.Ready()
			c.Outcomes()
			step(2, wire.VoteRenewOK, renewAt.Add(time.Millisecond))
			step(3, wire.VoteRenewOK, renewAt.Add(time.Millisecond))
			if out := c.Outcomes(); len(out) != 0 {
				t.Fatalf("reported on the confirmations' stamps, before any reading of the clock: %+v", out)
			}
			read := renewAt.Add(10 * time.Millisecond)
			if late {
				read = renewAt.Add(renewal + time.Millisecond)
			}
			c.Tick(read)
			said := 0
			for _, e := range c.Ready().Events {
				if e.Name == mutex.EventRenewalLate && e.Warn {
					said++
				}
			}
			var renewed []mutex.Renewed
			for _, o := range c.Outcomes() {
				if r, ok := o.(mutex.Renewed); ok {
					renewed = append(renewed, r)
				}
			}
			if !late {
				if len(renewed) != 1 || !renewed[0].Expires.Equal(renewAt.Add(renewal)) {
					t.Fatalf("renewed %+v, want one expiring at its asking + %v", renewed, renewal)
				}
				return
			}
			if len(renewed) != 0 {
				t.Fatalf("renewal read %v after its lease's end reported: %+v", read.Sub(renewAt.Add(renewal)), renewed)
			}
			if n := c.Report().Counters["renewals_late"]; n != 1 || said != 1 {
				t.Fatalf("renewals_late %d, %d %s events at WARN; want 1, 1", n, said, mutex.EventRenewalLate)
			}
			want := t0.Add(lease).Sub(read)
			if st, ok := c.Lookup(id); !ok || !st.Granted || (want-time.Duration(st.LeaseLeftMS)*time.Millisecond).Abs() > time.Millisecond {
				t.Fatalf("after the late renewal: %+v (found %v), want the grant's lease running on, %v left", st, ok, want)
			}
		})
	}
}

// grantedDB is member 1 of 4 granted "db" for lease at t0+2 ms on votes
// from 2 and 3, and step steps a vote on it from v, received at at.
func grantedDB(t *testing.T, lease time.Duration, mutate ...func(*maekawa.Config)) (c *maekawa.Core, id mutex.RequestID, step func(v uint32, op wire.VoteOp, at time.Time)) {
	t.Helper()
	kind := wire.KindMaekawa
	c = newCore(t, func(cfg *maekawa.Config) {
		cfg.Members = []uint32{1, 2, 3, 4}
		for _, f := range mutate {
			f(cfg)
		}
		if cfg.Quorum > 0 {
			kind = wire.KindQuorumLock
		}
	})
	id, _ = c.Acquire(t0, mutex.Request{Lock: "db", Lease: lease})
	c.Ready()
	step = func(v uint32, op wire.VoteOp, at time.Time) {
		t.Helper()
		m := frame(v, kind, wire.Vote{Op: op, Name: "db", Attempt: attemptOf(t, c), Fence: 1, Recorded: op == wire.VoteLocked})
		m.Time = at
		if err := c.Step(m); err != nil {
			t.Fatal(err)
		}
	}
	step(2, wire.VoteLocked, t0.Add(time.Millisecond))
	step(3, wire.VoteLocked, t0.Add(time.Millisecond))
	c.Tick(t0.Add(2 * time.Millisecond))
	if st, _ := c.Lookup(id); !st.Granted {
		t.Fatal("not granted")
	}
	return c, id, step
}

// TestRenewAfterHeldConfirmation: a quorum's confirmation of a renewal,
// read in a Step, waits for the next reading of the clock (Deadline just
// after the stamp); a client's Renew before that Tick replaces the
// renewal, and so that deadline. Before, the deadline stayed: in the past
// at every later Tick (the node counts StaleDeadlines and ticks every 10
// ms until the lease ended).
func TestRenewAfterHeldConfirmation(t *testing.T) {
	c, id, step := grantedDB(t, 3*time.Second)
	renewAt := t0.Add(500 * time.Millisecond)
	if err := c.Renew(renewAt, id, time.Second); err != nil {
		t.Fatal(err)
	}
	step(2, wire.VoteRenewOK, renewAt.Add(time.Millisecond))
	step(3, wire.VoteRenewOK, renewAt.Add(time.Millisecond))
	again := renewAt.Add(2 * time.Millisecond)
	if err := c.Renew(again, id, time.Second); err != nil {
		t.Fatal(err)
	}
	read := again.Add(time.Millisecond)
	c.Tick(read)
	if dl := c.Deadline(); !dl.After(read) {
		t.Fatalf("deadline %v before the Tick that just ran: stale (counters %v)", read.Sub(dl), c.Report().Counters)
	}
}

// TestOracleHarsh: Maekawa and the majority quorum keep the oracle on
// harsh hosts (mutextest.Harsh: clocks drifting up to 495 ppm, loops 5-20
// ms late): a member paused with answers in its kernel reads them, when
// it continues, with stamps from before its pause. The seeds that found a
// grant (the first two) and a renewal (the next two) reported after its
// lease's end, then a few more (the wide search: -sim.seeds).
func TestOracleHarsh(t *testing.T) {
	for _, tc := range []struct {
		f     mutex.Factory
		found []int64
	}{
		{maekawa.Factory, []int64{103, 628, 34, 70}},
		{maekawa.MajorityFactory, []int64{51, 86, 19, 24}},
	} {
		t.Run(tc.f.Name, func(t *testing.T) {
			run := func(t *testing.T, seed int64, b mutextest.Builds) {
				c := mutextest.Run(t, seed, mutextest.Config{Factory: tc.f, Hosts: mutextest.Harsh, Builds: b})
				t.Log(c)
			}
			// Found without configuration agreement: pinned so
			// (BuildsOlder), they replay the runs found (even seeds
			// draw agreement on every member).
			for _, seed := range tc.found {
				t.Run(fmt.Sprintf("found=%d", seed), func(t *testing.T) { run(t, seed, mutextest.BuildsOlder) })
			}
			sim.Seeds(t, 6, func(t *testing.T, seed int64) { run(t, seed, mutextest.BuildsDrawn) })
		})
	}
}

// TestRenewalLateSaysWhy: in Maekawa's quorums and the majority quorum,
// a renewal for 300 ms refused at the reading is
// said (lock_renewal_late) with its cause. Its confirmations stamped 1 ms
// after it was asked and read 301 ms after: they came in time, this
// member's loop read them late (cause=loop_late: check the host's load).
// Stamped 350 ms after (member 3's the last), 50 ms past the lease they
// were to renew, and read at once: the answers came late (cause=
// answers_late, naming member 3 and its link), which no reading could
// have saved.
func TestRenewalLateSaysWhy(t *testing.T) {
	const renewal = 300 * time.Millisecond
	for _, tc := range []struct {
		cause          string
		answered, read time.Duration
		says           []string
	}{
		{"loop_late", time.Millisecond, renewal + time.Millisecond, []string{"came in time (the last, from member 3, 299ms before the end of the renewed lease it asked for)", "read them 300ms after they came, 1ms after it had ended", "its loop ran late", "Check the host's load"}},
		{"answers_late", renewal + 50*time.Millisecond, renewal + 51*time.Millisecond, []string{"came after the renewed lease it asked for had ended (the last, from member 3, 50ms after the end)", "not this member's loop", "slow or lossy link between this member and member 3", "Check the link"}},
	} {
		for quorum, q := range map[string]int{"maekawa": 0, "majority": 3} {
			t.Run(quorum+"/"+tc.cause, func(t *testing.T) {
				c, id, step := grantedDB(t, 3*time.Second, func(cfg *maekawa.Config) { cfg.Quorum = q })
				renewAt := t0.Add(500 * time.Millisecond)
				if err := c.Renew(renewAt, id, renewal); err != nil {
					t.Fatal(err)
				}
				c.Ready()
				step(2, wire.VoteRenewOK, renewAt.Add(tc.answered))
				step(3, wire.VoteRenewOK, renewAt.Add(tc.answered))
				c.Tick(renewAt.Add(tc.read))
				mutextest.RenewalLateSaid(t, c.Ready().Events, tc.cause, "member 3", tc.says...)
			})
		}
	}
}
