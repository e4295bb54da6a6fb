package daemon

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/node"
	"github.com/synclab/synclab/internal/transport"
	"github.com/synclab/synclab/pkg/core"
)

// sleeper needs Tick every period of its clock (core.Scheduler), and at
// once after a Do asks for it.
type sleeper struct {
	period time.Duration
	mu     sync.Mutex // the test reads ticks while the loop runs
	ticks  []time.Time
	next   time.Time
}

func (s *sleeper) Step(core.Message) error          { return nil }
func (s *sleeper) StepDatagram(core.Datagram) error { return nil }
func (s *sleeper) Status() any                      { return nil }
func (s *sleeper) Ready() core.Ready                { return core.Ready{} }
func (s *sleeper) Deadline() time.Time              { return s.next }
func (s *sleeper) Tick(now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ticks = append(s.ticks, now)
	s.next = now.Add(s.period)
}
func (s *sleeper) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.ticks)
}

// waitTicks polls until s has had n ticks, or fails the test after within
// (time enough for any scheduling delay a loaded host adds; the loop's own
// timers are far shorter).
func (s *sleeper) waitTicks(t *testing.T, n int, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for s.count() < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d ticks after %v, want %d", s.count(), within, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestLoopSleepsUntilTheDeadline: a core that says when it needs Tick is
// ticked then, not every TickInterval (2 ms here: 100 ticks per 200 ms
// period); a Do that moves its deadline re-arms the loop's timer at once.
//
// Nothing here counts ticks in a fixed wall-clock window: a loaded host
// delays the loop's wake-ups by tens of milliseconds, so the test waits
// for the ticks it needs and judges their spacing against the core's own
// period and the loop's own MaxSleep.
func TestLoopSleepsUntilTheDeadline(t *testing.T) {
	cfg := testConfig(t, transport.NewMemNetwork(), shortDir(t), 1, 1)
	s := &sleeper{period: 200 * time.Millisecond}
	d, err := New(cfg, func(core.Env) (core.Core, error) { return s, nil })
	if err != nil {
		t.Fatal(err)
	}
	start(t, d)
	// The first Tick one TickInterval after the start, then one per 200 ms.
	// No gap may be shorter than the period (a tick before the deadline);
	// the median gap must be nearer the period than twice it: a loop that
	// slept MaxSleep (1 s) or missed deadlines would fail, while one late
	// wake-up of any size moves only one gap of five.
	s.waitTicks(t, 6, 10*time.Second)
	s.mu.Lock()
	var gaps []time.Duration
	for i := 1; i < len(s.ticks); i++ {
		gaps = append(gaps, s.ticks[i].Sub(s.ticks[i-1]))
	}
	s.mu.Unlock()
	t.Logf("gaps between ticks at a 200 ms deadline: %v", gaps)
	for i, gap := range gaps {
		if gap < s.period {
			t.Errorf("tick %d came %v after the last, before the deadline", i+1, gap)
		}
	}
	if med := slices.Sorted(slices.Values(gaps))[len(gaps)/2]; med >= 2*s.period {
		t.Errorf("median gap %v at a %v deadline: ticks come late", med, s.period)
	}

	// Nothing due for an hour: the loop sleeps MaxSleep. Right after the
	// tick that ends such a sleep, a Do asks for a tick in 5 ms: it must
	// come at once, not when the MaxSleep timer would have fired again.
	// The bound, half of MaxSleep, is a hundred times the 5 ms asked and
	// tells the two apart under any load this machine sees.
	setNext := func(in time.Duration) (asked time.Time) {
		t.Helper()
		if err := d.Do(context.Background(), func(*node.Node) {
			s.mu.Lock()
			asked = cfg.Clock.Now()
			s.next, s.period = asked.Add(in), time.Hour
			s.mu.Unlock()
		}); err != nil {
			t.Fatal(err)
		}
		return asked
	}
	setNext(time.Hour)
	s.waitTicks(t, s.count()+1, 10*time.Second)
	before := s.count()
	asked := setNext(5 * time.Millisecond)
	s.waitTicks(t, before+1, 10*time.Second)
	// And no more ticks (the next is an hour, so MaxSleep, away): a loop
	// that ticked every TickInterval would add dozens in this time.
	time.Sleep(node.MaxSleep / 2)
	s.mu.Lock()
	defer s.mu.Unlock()
	got := s.ticks[before:]
	var after []time.Duration
	for _, g := range got {
		after = append(after, g.Sub(asked))
	}
	t.Logf("ticks after asking for one in 5 ms: %v", after)
	if len(got) > 1 && got[1].Sub(got[0]) < node.MaxSleep {
		t.Errorf("ticks after asking for one in 5 ms: %v after asking; want one, then none for MaxSleep", after)
	}
	if after[0] < 5*time.Millisecond || after[0] >= node.MaxSleep/2 {
		t.Errorf("the tick asked for in 5 ms came %v after asking", after[0])
	}
}
