package central_test

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/pkg/clock"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/mutex"
	"github.com/synclab/synclab/pkg/mutex/central"
	"github.com/synclab/synclab/pkg/mutex/internal/mutextest"
	"github.com/synclab/synclab/pkg/wire"
)

// ignoresAfter is a token-asking core that drops every Request.After: its
// grants follow the plain central queue.
type ignoresAfter struct{ *central.Core }

func (x ignoresAfter) Acquire(now time.Time, r mutex.Request) (mutex.RequestID, error) {
	r.After = clock.Vector{}
	return x.Core.Acquire(now, r)
}

// fatalTB records the first Fatalf and ends the goroutine that called it
// (run the simulation in its own).
type fatalTB struct {
	testing.TB
	msg string
}

func (f *fatalTB) Fatalf(format string, args ...any) {
	if f.msg == "" {
		f.msg = fmt.Sprintf(format, args...)
	}
	runtime.Goexit()
}

// TestOracleCatchesIgnoredAfter: the oracle's simulations of tokenask
// and central were the same run (no client passed Request.After, the one
// thing tokenask orders by), so a token-asking core that ignored the
// vectors passed every seed. Now the clients pass the vectors of
// program messages from other members' clients, and the oracle fails
// such a core.
func TestOracleCatchesIgnoredAfter(t *testing.T) {
	broken := central.TokenAskFactory
	broken.New = func(env core.Env, opt mutex.Options) (mutex.Algorithm, error) {
		a, err := central.TokenAskFactory.New(env, opt)
		if err != nil {
			return nil, err
		}
		return ignoresAfter{a.(*central.Core)}, nil
	}
	caught := 0
	for seed := int64(1); seed <= 10; seed++ {
		f := &fatalTB{TB: t}
		done := make(chan struct{})
		go func() {
			defer close(done)
			mutextest.Run(f, seed, mutextest.Config{Factory: broken, Faults: []mutex.Fault{}, CausalSkipEvent: central.EventUnknownPredecessor, CausalSkipAfter: causalSkipAfter, CausalRefused: causalRefused})
		}()
		<-done
		if strings.Contains(f.msg, "causal order broken") {
			caught++
			if caught == 1 {
				t.Logf("seed %d: %s", seed, strings.SplitN(f.msg, "\n", 2)[0])
			}
		} else if f.msg != "" {
			t.Errorf("seed %d: the oracle failed for another reason: %s", seed, f.msg)
		}
	}
	if caught == 0 {
		t.Fatal("the oracle passed a token-asking core that ignores Request.After on 10 seeds out of 10")
	}
	t.Logf("caught on %d seeds out of 10", caught)
}

// TestTokenAskSilentPredecessor replays the seed on which the causal
// oracle first failed tokenask (TestOracle's config, seed 93, lossy
// links): two beats in a row lost to member 2, whose request for printer
// waited, and the coordinator dropped it for member 2's silence
// (dropped_silent); V jumped past it, and members 3 and 4, whose requests
// named it, were granted 1.4 s before it, with no WARN. The dropped
// request now holds V back for DeadAfter (member 2's next sync queues it
// again).
func TestTokenAskSilentPredecessor(t *testing.T) {
	c := mutextest.Run(t, 93, mutextest.Config{Factory: central.TokenAskFactory, Target: coordinator, CausalSkipEvent: central.EventUnknownPredecessor, CausalSkipAfter: causalSkipAfter, CausalRefused: causalRefused})
	var dropped uint64
	for _, id := range c.IDs() {
		if c.Sim().Running(id) {
			dropped += c.Sim().Core(id).(*central.Core).Report().Counters["dropped_silent"]
		}
	}
	if dropped == 0 {
		t.Fatal("no waiting request dropped for its member's silence: the seed no longer reaches the case")
	}
	t.Log(c)
}

// TestAgreementRefusalExcusesNothing: seed 2, every member running
// configuration agreement, a core that ignores Request.After. Its first
// causal violation is at 1.10 s (member 3's request, asked at 1 ms,
// granted after member 4's, which names it); member 3 was never faulted:
// only an election frame of its was refused at 1.26 ms by a member still
// waiting for its announcement (config_unverified). Such a refusal
// between agreeing members used to open a fault window on both, which
// excused the violation; the run was caught only at 4.47 s, on another
// pair (review-simcheck).
func TestAgreementRefusalExcusesNothing(t *testing.T) {
	broken := central.TokenAskFactory
	broken.New = func(env core.Env, opt mutex.Options) (mutex.Algorithm, error) {
		a, err := central.TokenAskFactory.New(env, opt)
		if err != nil {
			return nil, err
		}
		return ignoresAfter{a.(*central.Core)}, nil
	}
	f := &fatalTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		mutextest.Run(f, 2, mutextest.Config{Factory: broken, Target: coordinator, Builds: mutextest.BuildsAgreeing, CausalSkipEvent: central.EventUnknownPredecessor, CausalSkipAfter: causalSkipAfter, CausalRefused: causalRefused})
	}()
	<-done
	if first := strings.SplitN(f.msg, "\n", 2)[0]; !strings.HasPrefix(first, "1.100631993s: member 3's request 1.1 granted") {
		t.Fatalf("the causal oracle did not catch the violation at 1.10 s (member 3's request 1.1, never faulted); first failure: %s", first)
	}
}

// causalSkipAfter is the least tokenask waits before it grants a request
// without a predecessor its stamp names, at the oracle's 100 ms heartbeat:
// 2 x DeadAfter of the predecessor's member's silence (unknownWait and
// vnow's rule), counted from no earlier than the predecessor's asking.
// The causal oracle excuses a skip it reports no sooner
// (mutextest.Config.CausalSkipAfter).
var causalSkipAfter = func() time.Duration {
	d, err := central.SilentLapseFor(mutex.Options{Lease: time.Second, Heartbeat: 100 * time.Millisecond})
	if err != nil {
		panic(err)
	}
	return d
}()

// causalRefused reads a coordinator's refusal of a waiting request
// (KindCentralRefuse) for the causal oracle (mutextest.Config.CausalRefused):
// the request ends there, not when its member reports it lost, a lost
// refusal later.
func causalRefused(f wire.Frame) (member uint32, counter uint64, ok bool) {
	if f.Kind != wire.KindCentralRefuse {
		return 0, 0, false
	}
	var r wire.CentralRefuse
	if r.UnmarshalBinary(f.Payload) != nil || r.Reason == wire.RefuseNotHeld {
		return 0, 0, false
	}
	return f.Receiver, uint64(r.Incarnation)<<32 | r.Seq, true
}

// tokenAskShortCuts is the oracle's config for tokenask under short
// one-way cuts (mutextest.Config.ShortCuts): the frames on the streams
// (requests and syncs to the coordinator, grants from it) lost with no
// fault to excuse an overtaking, and skips excused only when reported
// and no sooner than causalSkipAfter.
func tokenAskShortCuts(hosts mutextest.Hosts) mutextest.Config {
	return mutextest.Config{Factory: central.TokenAskFactory, Target: coordinator, Hosts: hosts, ShortCuts: true,
		CausalSkipEvent: central.EventUnknownPredecessor, CausalSkipAfter: causalSkipAfter, CausalRefused: causalRefused}
}

// TestOracleShortCuts: the oracle's tokenask runs under short one-way
// cuts reach the rules the other oracle runs never checked (review-askrule
// LOW 4: syncs and grants travel on the members' streams, which only a
// cut, a fault, loses): grants lost or crossing a sync and made anew
// (grants_renewed_by_sync), dependents waiting for an unconfirmed grant's
// word (beats_called_confirm) and for an unknown predecessor's
// (beats_called_word), requests dropped for a silence (dropped_silent),
// and each skip said. The runs have no fault, so no fault window
// excuses an overtaking: the cuts alone reach the rules (15 seeds: 399
// cuts, 68 grants made anew, 288 confirmations and 1 word asked, 125
// requests dropped, 3 skips said; the word is the rare one, so the seeds
// run on until every rule was reached).
// Counted over the members running at the end and the WARNs of every
// run.
func TestOracleShortCuts(t *testing.T) {
	want := []string{"grants_renewed_by_sync", "beats_called_confirm", "beats_called_word", "dropped_silent"}
	sum := map[string]uint64{}
	skips, checked, waited, cuts := 0, 0, 0, 0
	reached := func() bool {
		for _, k := range want {
			if sum[k] == 0 {
				return false
			}
		}
		return true
	}
	// Six seeds at least, and more until every rule was reached (the
	// word is asked in a few runs only: 2 in the first 6 seeds when this
	// was written, none there after the refreshes were spread), 30 at most.
	seeds := int64(0)
	for seed := int64(1); seed <= 30 && (seed <= 6 || !reached()); seed++ {
		seeds = seed
		cfg := tokenAskShortCuts(mutextest.Calm)
		cfg.Faults = []mutex.Fault{} // the cuts alone: no fault window excuses anything
		c := mutextest.Run(t, seed, cfg)
		for _, id := range c.IDs() {
			if c.Sim().Running(id) {
				for name, n := range c.Sim().Core(id).(*central.Core).Report().Counters {
					sum[name] += n
				}
			}
		}
		skips += len(c.Sim().EventsNamed(central.EventUnknownPredecessor))
		ch, w := c.CausalCounts()
		checked, waited, cuts = checked+ch, waited+w, cuts+c.ShortCutsMade
	}
	t.Logf("%d seeds, %d short cuts: %d grants after a program message (%d asked while the predecessor waited); %d skips said; %v",
		seeds, cuts, checked, waited, skips, func() map[string]uint64 {
			out := map[string]uint64{}
			for _, k := range append(want, "grants_superseded", "beats_called_expired", "tokenask_unknown_predecessors", "tokenask_unconfirmed_predecessors") {
				out[k] = sum[k]
			}
			return out
		}())
	for _, k := range want {
		if sum[k] == 0 {
			t.Errorf("%s never counted: the short cuts no longer reach that rule", k)
		}
	}
}

// TestOracleCatchesEarlySkip: the oracle fails a tokenask whose rule for
// a predecessor never heard of gives way at once (a mutation:
// skipUnknownAtOnce), though it reports each skip: the reported skips
// used to excuse any overtaking, whenever it came. With short one-way
// cuts, on some of 10 seeds; without them too (a predecessor on its way
// a link's delay is overtaken then).
func TestOracleCatchesEarlySkip(t *testing.T) {
	defer central.SetSkipUnknownAtOnce(central.SetSkipUnknownAtOnce(true))
	for _, cuts := range []bool{true, false} {
		caught := 0
		for seed := int64(1); seed <= 10; seed++ {
			f := &fatalTB{TB: t}
			done := make(chan struct{})
			go func() {
				defer close(done)
				cfg := tokenAskShortCuts(mutextest.Calm)
				cfg.ShortCuts = cuts
				mutextest.Run(f, seed, cfg)
			}()
			<-done
			if strings.Contains(f.msg, "causal order broken") {
				caught++
				if caught == 1 {
					t.Logf("short cuts %v, seed %d: %s", cuts, seed, strings.SplitN(f.msg, "\n", 2)[0])
				}
			} else if f.msg != "" {
				t.Errorf("short cuts %v, seed %d: the oracle failed for another reason: %s", cuts, seed, f.msg)
			}
		}
		if caught == 0 {
			t.Errorf("short cuts %v: the oracle passed a tokenask that skips a predecessor never heard of at once, on 10 seeds of 10", cuts)
		}
		t.Logf("short cuts %v: caught on %d seeds of 10", cuts, caught)
	}
}
