package tokenring_test

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/mutex"
	"github.com/synclab/synclab/pkg/mutex/tokenring"
)

// makerKill says which token's maker a recovery trial kills.
type makerKill int

const (
	freshMaker makerKill = iota // the first token of a ring just started, granting at once
	regenMaker                  // a token made after its holder crashed, killed within its Hold
)

// TestSimMakerKilledInItsHold: a token's maker dies (SIGKILL: a crash)
// while the promises that made its token still bound the leases it could
// have granted, and two members ask for the lock at the same instant
// after it, so that their locates and prepares run together. Since a
// locate that misses a new token's silent maker waits while the maker is
// not known down (TestSimLocateMissesTheMakerInItsHold), the replacement
// is made shortly before those promises end rather than at once: a
// collision of the two proposers costs a back-off the Hold used to
// absorb. The majority must grant again within 4 s of the kill (issue 15's
// recovery target) and the oracle holds (no two grants overlap in real
// time, fences grow). Logged: the gap from the kill, and how far the
// grant came after the old majority's promises ended.
func TestSimMakerKilledInItsHold(t *testing.T) {
	r0 := tokenring.DefaultLANConfig()
	for _, kind := range []makerKill{freshMaker, regenMaker} {
		name := map[makerKill]string{freshMaker: "fresh", regenMaker: "regenerated"}[kind]
		t.Run(name, func(t *testing.T) {
			var gaps, pasts []time.Duration
			sim.Seeds(t, 20, func(t *testing.T, seed int64) {
				gap, past := makerKilledGap(t, seed, kind)
				gaps, pasts = append(gaps, gap), append(pasts, past)
				if gap > 4*time.Second {
					t.Fatalf("the ring granted nothing for %v after the %s token's maker was killed (%v after its promises ended; want <= 4s)\n%s", gap, name, past, lastTail)
				}
			})
			if len(gaps) == 0 {
				return
			}
			slices.Sort(gaps)
			slices.Sort(pasts)
			t.Logf("%s token's maker killed: gap to the next grant median %v, longest %v (%d seeds)", name, gaps[len(gaps)/2], gaps[len(gaps)-1], len(gaps))
			if kind != freshMaker {
				return // its promises were answered a prepare's span before it was made: not measured here
			}
			// The replacement waits out the promises the dead maker got,
			// padded (HoldMargin, the clocks' rates), then checks: tens of
			// milliseconds. Main's code counted the promisers' answers from
			// the end of its prepare, which waited a locate's span for the
			// dead maker's answer: 178 ms.
			limit := r0.HoldMargin + 2*r0.ProbeTimeout/5
			t.Logf("grant after the dead maker's promises ended: median %v, longest %v (want a median <= %v)", pasts[len(pasts)/2], pasts[len(pasts)-1], limit)
			if pasts[len(pasts)/2] > limit {
				t.Errorf("the replacement granted a median %v after the dead maker's promises ended (want <= %v)", pasts[len(pasts)/2], limit)
			}
		})
	}
}

// makerKilledGap runs one trial and returns the time from the kill to the
// first grant at a surviving member, and from the end of the promises of
// the dead maker's majority (MaxLease after its token was made: a lease
// ends within MaxLease of the check it was granted on) to that grant.
func makerKilledGap(t *testing.T, seed int64, kind makerKill) (gap, past time.Duration) {
	return makerKilledGapLate(t, seed, kind, 0)
}

// makerKilledGapLate is makerKilledGap on a busy host: every member's loop
// runs up to late behind its timers and its socket (sim.SetLate).
func makerKilledGapLate(t *testing.T, seed int64, kind makerKill, late time.Duration) (gap, past time.Duration) {
	r := newLANRing(t, seed, 5)
	for _, id := range r.ids {
		r.s.SetLate(id, late)
	}
	ask := func(id uint32) mutex.RequestID { return r.ask(id, 0) }
	granted, runUntil := r.holds, r.runUntil
	made := func(after time.Duration) []sim.Event {
		var out []sim.Event
		for _, e := range r.s.EventsNamed(tokenring.EventRegenerated) {
			if e.At > after {
				out = append(out, e)
			}
		}
		return out
	}
	others := func(not ...uint32) []uint32 {
		var out []uint32
		for _, id := range r.ids {
			if !slices.Contains(not, id) {
				out = append(out, id)
			}
		}
		r.rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
		return out
	}
	// A ring just started: its members came up within the last second.
	r.run(time.Duration(r.rng.Int64N(int64(time.Second))), false)
	first := r.ids[r.rng.IntN(len(r.ids))]
	held := ask(first)
	if !runUntil(func() bool { return granted(first, held) }, 5*time.Second) {
		t.Fatalf("member %d never granted on a fresh ring\n%s", first, r.tail())
	}
	maker, down := first, []uint32{first}
	var killAt time.Duration
	if kind == regenMaker {
		// The first holder renews (checks: the others see its token
		// granting), then crashes; another member's request makes the
		// replacement, whose maker is killed within its Hold.
		for range 2 {
			r.run(time.Second, false)
			r.s.Do(first, func(cc core.Core) { cc.(*tokenring.Core).Renew(r.s.Clock(first).Now(), held, 0) })
		}
		r.run(time.Duration(r.rng.Int64N(int64(time.Second))), false)
		r.s.Crash(first)
		crashed := r.s.Elapsed()
		next := others(first)[0]
		ask(next)
		if !runUntil(func() bool { return len(made(crashed)) > 0 }, 6*time.Second) {
			t.Fatalf("no token made after the holder crashed\n%s", r.tail())
		}
		tok := made(crashed)[0]
		maker = tok.Node
		down = append(down, maker)
		hold := arg[time.Duration](tok, "hold")
		killAt = tok.At + time.Duration(r.rng.Int64N(int64(max(hold, time.Millisecond))))
	}
	tok := r.s.EventsNamed(tokenring.EventRegenerated)
	var made0 sim.Event
	for _, e := range tok {
		if e.Node == maker {
			made0 = e
		}
	}
	if kind == freshMaker {
		// Before its client's first renewal (a check the others would see).
		killAt = made0.At + time.Duration(r.rng.Int64N(int64(time.Second)))
	}
	r.run(max(killAt-r.s.Elapsed(), 0), false)
	r.s.Crash(maker)
	at := r.s.Elapsed()
	promisesEnd := made0.At + r.cfg.MaxLease
	// Two members ask at the same instant, a moment after the kill.
	r.run(time.Duration(r.rng.Int64N(int64(300*time.Millisecond))), false)
	pair := others(down...)[:2]
	ask(pair[0])
	ask(pair[1])
	before := len(r.grants["x"])
	if !runUntil(func() bool { return len(r.grants["x"]) > before }, 12*time.Second) {
		t.Fatalf("nothing granted in 12 s after member %d (maker) was killed\n%s", maker, r.tail())
	}
	grant := r.grants["x"][before].start
	gap, past = grant-at, grant-promisesEnd
	lastTail = fmt.Sprintf("maker %d killed at %v, its token made at %v; asked at %v by %v\n", maker, at, made0.At, r.s.Elapsed(), pair)
	for _, e := range r.s.Events() {
		if e.At >= at && e.At <= grant+time.Millisecond {
			lastTail += e.String() + "\n"
		}
	}
	for _, id := range r.ids {
		if r.s.Up(id) {
			cs := r.core(id).Report().Counters
			lastTail += fmt.Sprintf("member %d: prepares outbid %d, without a majority %d, deferred %d; locates found a rival %d, a token in its Hold %d\n",
				id, cs["prepare_outbid"], cs["prepare_no_majority"], cs["prepares_deferred"], cs["locate_rival"], cs["locate_token_in_hold"])
		}
	}
	r.run(4*time.Second, false)
	r.checkExclusion()
	return gap, past
}

// TestSimCrossingPrepares: the seeds of TestSimMakerKilledInItsHold (500
// of each kind) and TestSimHolderCutOffGap where main's code let two waiting members'
// prepares cross: each refused the other's, both gave up, and the
// promises they had got held the next token a whole Hold more (6.3 s
// without a grant). The member with the lower ID now proposes and the
// other, which heard its locate, waits for its prepare.
func TestSimCrossingPrepares(t *testing.T) {
	for _, c := range []struct {
		kind makerKill
		seed int64
	}{{freshMaker, 39}, {regenMaker, 52}} {
		gap, _ := makerKilledGap(t, c.seed, c.kind)
		if gap > 4*time.Second {
			t.Errorf("seed %d: the ring granted nothing for %v after the maker was killed (want <= 4s)\n%s", c.seed, gap, lastTail)
		}
		if !regexp.MustCompile(`deferred [1-9]`).MatchString(lastTail) {
			t.Errorf("seed %d: no member deferred its prepare to a lower one's: the seed no longer makes two prepares cross\n%s", c.seed, lastTail)
		}
		t.Logf("seed %d: %v from the kill to the next grant", c.seed, gap)
	}
	// And TestSimHolderCutOffGap's seed 292 (of 500): after the holder is
	// partitioned alone, two of the majority's prepares crossed on main's
	// code, and the majority granted nothing for 4.69 s.
	for _, fault := range []holderFault{partitionHolder, pauseHolder} {
		if gap := holderCutOffGap(t, 292, fault); gap > 4*time.Second {
			t.Errorf("holder %s, seed 292: the majority granted nothing for %v (want <= 4s)\n%s", map[holderFault]string{partitionHolder: "partitioned", pauseHolder: "paused"}[fault], gap, lastTail)
		}
	}
}

// TestSimMakerKilledOnABusyHost: TestSimMakerKilledInItsHold's trials on a
// loaded host (sim.SetLate): every member's loop gets the CPU up to 50 ms
// after something falls due for it, then runs its timer before it reads
// the frames that came meanwhile (issue 15's lab trial at load 13 took
// 8.13 s, prepares crossed at both askers). Every wall-clock wait
// overshoots there, the deferral to a lower locator's prepare among them,
// and two askers' prepares still cross now and then; crossing must cost no
// more than a new locate and prepare, never a whole Hold. So the ring
// grants again within 4 s of the kill, as on a quiet host, but for at
// most one trial in fifty, and within 4.5 s always. On main's code
// (e31b631) 47 and 45 of 100 trials (fresh, regenerated) took more than
// 4 s, up to 9.2 s; here 0 and 1 of 500 (4.09 s). Overloaded, loops up to
// 100 ms late: within 6 s always, and 4 s but for one in ten (main: 49 and
// 64 of 100 over 4 s, up to 11.6 s, two with nothing granted in 12 s;
// here 3 and 12 of 500, the longest 4.7 s).
func TestSimMakerKilledOnABusyHost(t *testing.T) {
	for _, load := range []struct {
		name     string
		late     time.Duration
		longest  time.Duration // no recovery longer
		overFour int           // at most one in this many over 4 s
	}{
		{"busy", 50 * time.Millisecond, 4500 * time.Millisecond, 50},
		{"overloaded", 100 * time.Millisecond, 6 * time.Second, 10},
	} {
		for _, kind := range []makerKill{freshMaker, regenMaker} {
			name := map[makerKill]string{freshMaker: "fresh", regenMaker: "regenerated"}[kind]
			t.Run(load.name+"/"+name, func(t *testing.T) {
				var gaps []time.Duration
				sim.Seeds(t, 20, func(t *testing.T, seed int64) {
					gap, _ := makerKilledGapLate(t, seed, kind, load.late)
					gaps = append(gaps, gap)
					if gap > load.longest {
						t.Fatalf("loops up to %v late: the ring granted nothing for %v after the %s token's maker was killed (want <= %v)\n%s", load.late, gap, name, load.longest, lastTail)
					}
				})
				if len(gaps) == 0 {
					return
				}
				slices.Sort(gaps)
				over := len(gaps) - sort.Search(len(gaps), func(i int) bool { return gaps[i] > 4*time.Second })
				t.Logf("%s token's maker killed, loops up to %v late: gap median %v, longest %v, %d of %d over 4s", name, load.late, gaps[len(gaps)/2], gaps[len(gaps)-1], over, len(gaps))
				if over*load.overFour > len(gaps) {
					t.Errorf("%d of %d recoveries took more than 4 s with loops up to %v late (want at most one in %d)", over, len(gaps), load.late, load.overFour)
				}
			})
		}
	}
}
