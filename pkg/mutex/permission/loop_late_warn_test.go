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
