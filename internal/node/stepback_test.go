package node

import (
	"github.com/synclab/synclab/pkg/wire"
	"strings"
	"testing"
	"time"
)

// TestAgreementClockSteppedBack: member 1's clock steps back 10 minutes
// (a Berkeley master stepping it, date -s under --clock system), the
// cores quiet (Ω's followers at rest: only agreement says a member is
// up). Its announcements and refreshes used to stop for the length of
// the step (its next round lay 10 minutes off): the others warned it
// unreachable, and member 2, member 3 restarted with other priorities,
// stood back on a tie. They go on at the rate they had.
func TestAgreementClockSteppedBack(t *testing.T) {
	l := newAgreeLAN(t, keyed(1, nil), keyed(2, nil), keyed(3, nil))
	l.quiet = true
	l.run(3 * time.Minute)
	before := l.sent(1)
	l.run(time.Minute)
	perMin := l.sent(1) - before
	if perMin == 0 {
		t.Fatalf("node 1 sent no announcement nor refresh in a minute at rest")
	}
	l.notices(2)
	l.off[1] = -10 * time.Minute
	for m := 1; m <= 3; m++ {
		before = l.sent(1)
		l.run(time.Minute)
		if got := l.sent(1) - before; 2*got < perMin {
			t.Fatalf("minute %d after node 1's clock stepped back 10 minutes: it sent %d announcements and refreshes, %d a minute before", m, got, perMin)
		}
	}
	l.restart(3, 2, func(c *Config) {
		c.Agreement = &Agreement{Algorithm: "bully", Params: map[string]string{"priorities": "3,2,1"}}
	})
	l.run(30 * time.Second)
	if l.standing(2) != StandingAgreed {
		t.Fatalf("node 2 %v (%s) with member 1 configured alike, its clock stepped back", l.standing(2), l.nodes[2].StandingReason())
	}
	if got := l.notices(2); strings.Contains(got, "member 1 not heard") {
		t.Fatalf("node 2 noticed %q", got)
	}
}

// TestTimingsRetryClockSteppedBack: every KindConfigTimings between
// members 1 and 3 is lost both ways for two minutes from the start;
// 90 s in, both clocks step back 10 minutes (a Berkeley master stepping
// its members). A retry planned before the step lay 10 minutes off, and
// the pair learned 10m3s after the loss ended instead of within the gap
// it would have waited unstepped: the retry is told at once when its time
// lies further off than timingsRetryCap. Stepped forward, it is simply due.
func TestTimingsRetryClockSteppedBack(t *testing.T) {
	for _, step := range []time.Duration{0, -10 * time.Minute, 10 * time.Minute} {
		l := newAgreeLAN(t, timed(1, 200*time.Millisecond, 400*time.Millisecond), timed(3, time.Second, 3*time.Second))
		l.quiet = true
		l.drop = func(from, to uint32, k wire.Kind) bool { return k == wire.KindConfigTimings }
		l.run(90 * time.Second)
		l.off[1], l.off[3] = step, step
		l.run(30 * time.Second)
		l.drop = nil
		start := l.now
		for l.now.Sub(start) < 15*time.Minute && !(l.mismatchNamed(1, 3) && l.mismatchNamed(3, 1)) {
			l.run(time.Second)
		}
		took := l.now.Sub(start)
		t.Logf("clocks stepped %v: the pair learned %v after the loss ended", step, took)
		if took > 3*time.Minute {
			t.Errorf("clocks stepped %v during the loss: the pair learned %v after it ended, want within 3 minutes", step, took)
		}
	}
}
