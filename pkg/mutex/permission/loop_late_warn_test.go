package permission_test

import (
	"testing"
	"time"

	"github.com/synclab/synclab/pkg/mutex/permission"
)

// TestLoopLateWarnRateLimited: a loop 250 ms late on every tick for a
// minute (a loaded host) says loop_late at WARN at most once every 30 s,
// the lines between counted in the next one's repeated (a review counted
// 48 WARNs of 500 characters in that minute: the daemon logs every WARN
// event).
func TestLoopLateWarnRateLimited(t *testing.T) {
	m := newMember(t, 1, []uint32{1, 2, 3})
	for range 10 {
		m.beat(2)
		m.beat(3)
		m.tick(time.Second)
	}
	m.evs = nil
	for range 48 { // 60 s
		m.beat(2)
		m.beat(3)
		m.tick(1250 * time.Millisecond)
	}
	var warns int
	var repeated any
	for _, e := range m.evs {
		if e.Name == permission.EventLoopLate {
			warns++
			for i := 0; i+1 < len(e.Args); i += 2 {
				if e.Args[i] == "repeated" {
					repeated = e.Args[i+1]
				}
			}
		}
	}
	if warns < 1 || warns > 2 {
		t.Fatalf("loop_late at WARN %d times in 60 s of a loop late on every beat: want 1 or 2 (at most one every 30 s)", warns)
	}
	if warns == 2 && repeated == uint64(0) {
		t.Errorf("the second loop_late line says repeated=%v: want the late beats between the lines", repeated)
	}
}

// TestLoopLateWorseSaidAtOnce: one heartbeat 250 ms late (said), then,
// 10 s later, the loop stalls for a second (a paused VM, a swap storm):
// under cut_off's 2 s, so only loop_late can tell the administrator, and
// the 30 s limit must not keep it unsaid (a review: with no late beat
// after it, it was never said). A beat twice as late as the last one said
// is said at once.
func TestLoopLateWorseSaidAtOnce(t *testing.T) {
	m := newMember(t, 1, []uint32{1, 2, 3})
	beats := func(n int, every time.Duration) {
		for range n {
			m.beat(2)
			m.beat(3)
			m.tick(every)
		}
	}
	beats(10, time.Second)
	m.evs = nil
	beats(1, 1250*time.Millisecond) // 250 ms late: said
	beats(10, time.Second)
	beats(1, 2*time.Second) // a second late
	beats(3, time.Second)
	var lates []int64
	for _, e := range m.evs {
		if e.Name == permission.EventLoopLate {
			for i := 0; i+1 < len(e.Args); i += 2 {
				if e.Args[i] == "late" {
					lates = append(lates, e.Args[i+1].(int64))
				}
			}
		}
	}
	if len(lates) != 2 || lates[1] < 900 {
		t.Errorf("loop_late said the lateness %v ms: want 250, then about 1000 at once (a stall four times the last said)", lates)
	}
}
