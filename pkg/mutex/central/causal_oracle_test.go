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
			mutextest.Run(f, seed, mutextest.Config{Factory: broken, Faults: []mutex.Fault{}, CausalSkipEvent: central.EventUnknownPredecessor})
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
	c := mutextest.Run(t, 93, mutextest.Config{Factory: central.TokenAskFactory, Target: coordinator, CausalSkipEvent: central.EventUnknownPredecessor})
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
		mutextest.Run(f, 2, mutextest.Config{Factory: broken, Target: coordinator, Builds: mutextest.BuildsAgreeing, CausalSkipEvent: central.EventUnknownPredecessor})
	}()
	<-done
	if first := strings.SplitN(f.msg, "\n", 2)[0]; !strings.HasPrefix(first, "1.100631993s: member 3's request 1.1 granted") {
		t.Fatalf("the causal oracle did not catch the violation at 1.10 s (member 3's request 1.1, never faulted); first failure: %s", first)
	}
}
