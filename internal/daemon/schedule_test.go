package daemon

import (
	"context"
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

// TestLoopSleepsUntilTheDeadline: a core that says when it needs Tick is
// ticked then, not every TickInterval (2 ms here: 250 ticks in half a
// second); a Do that moves its deadline re-arms the loop's timer at once.
func TestLoopSleepsUntilTheDeadline(t *testing.T) {
	cfg := testConfig(t, transport.NewMemNetwork(), shortDir(t), 1, 1)
	s := &sleeper{period: 200 * time.Millisecond}
	d, err := New(cfg, func(core.Env) (core.Core, error) { return s, nil })
	if err != nil {
		t.Fatal(err)
	}
	start(t, d)
	time.Sleep(500 * time.Millisecond)
	// The first Tick one TickInterval after the start, then one per 200 ms:
	// 3 in half a second (a loaded host may make it 2).
	if n := s.count(); n < 2 || n > 4 {
		t.Errorf("%d ticks in 500 ms at a 200 ms deadline, want 3", n)
	}
	for i := 1; i < len(s.ticks); i++ {
		if gap := s.ticks[i].Sub(s.ticks[i-1]); gap < s.period {
			t.Errorf("tick %d came %v after the last, before the deadline", i, gap)
		}
	}
	// A Do that wants a tick in 5 ms, and then none for an hour, gets
	// exactly that one.
	before := s.count()
	var asked time.Time
	if err := d.Do(context.Background(), func(*node.Node) {
		s.mu.Lock()
		asked = cfg.Clock.Now()
		s.next, s.period = asked.Add(5*time.Millisecond), time.Hour
		s.mu.Unlock()
	}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(150 * time.Millisecond)
	s.mu.Lock()
	defer s.mu.Unlock()
	if got := s.ticks[before:]; len(got) != 1 || got[0].Sub(asked) < 5*time.Millisecond {
		t.Errorf("ticks after asking for one in 5 ms: %v after asking", func() (ds []time.Duration) {
			for _, g := range got {
				ds = append(ds, g.Sub(asked))
			}
			return ds
		}())
	}
}
