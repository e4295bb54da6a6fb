package permission_test

import (
	"testing"
	"time"

	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/pkg/mutex"
	"github.com/synclab/synclab/pkg/mutex/internal/mutextest"
)

// grants returns the grants among c's outcomes since the last call.
func grants(m *member) []mutex.Granted {
	var out []mutex.Granted
	for _, o := range m.c.Outcomes() {
		if g, ok := o.(mutex.Granted); ok {
			out = append(out, g)
		}
	}
	return out
}

// TestGrantReadLate: the replies that let member 1 enter came in time
// (their receive stamps, now), but its loop read them late: the process
// was paused with them already read, and its first reading of the clock
// after they were stepped is 1.5 s on, past the 1 s lease counted from
// the stamp. No grant is reported on the stamps (before, Step granted on
// them and the client was told it held a lease the next Tick ended); the
// grant is made at the reading, every condition judged again then (a
// majority heard within FreshWindow), its lease counted from it as from
// any grant (capped by the majority last heard: leaseFrom).
func TestGrantReadLate(t *testing.T) {
	m, _ := answeredMember(t, []uint32{1, 2, 3}, time.Second)
	if g := grants(m); len(g) != 0 {
		t.Fatalf("granted on the replies' stamps, before any reading of the clock: %+v", g)
	}
	if d := m.c.Deadline(); d.After(m.now.Add(time.Millisecond)) {
		t.Fatalf("deadline %v after the grant came due: want a Tick at once", d.Sub(m.now))
	}
	m.tick(1500 * time.Millisecond)
	g := grants(m)
	if len(g) != 1 || !g[0].Expires.Equal(m.now.Add(time.Second)) {
		t.Fatalf("at the late reading: %+v, want one grant whose lease counts from it (ends %v)", g, m.now.Add(time.Second))
	}
}

// TestRenewalReadLate: a bounded member's renewal, acknowledged by a
// majority in time (the acknowledgements' stamps), read by a loop that ran
// late: it is confirmed at the next reading of the clock, not on the
// stamps (where a Renewed was reported whose lease could be over), and,
// read after the lease ended, not at all.
func TestRenewalReadLate(t *testing.T) {
	ids := []uint32{1, 2, 3, 4, 5}
	m, id := grantedMember(t, ids)
	if err := m.c.Renew(m.now, id, 0); err != nil {
		t.Fatal(err)
	}
	m.tick(200 * time.Millisecond) // a busy heartbeat asks for acknowledgements
	a, _, ok := m.announcement()
	if !ok {
		t.Fatal("no announcement")
	}
	m.ack(2, a)
	m.ack(3, a)
	m.tick(100 * time.Millisecond) // bounded now: a renewal waits for a majority's acknowledgement
	m.out = nil
	renewed(m.c)
	if err := m.c.Renew(m.now, id, 0); err != nil {
		t.Fatal(err)
	}
	m.drain()
	a, hb, ok := m.announcement()
	if !ok || !hb.Bounded {
		t.Fatalf("renewal announced %+v (found %v): want a bounded announcement", hb, ok)
	}
	for _, from := range []uint32{2, 3, 4} {
		m.ack(from, a)
	}
	if r := renewed(m.c); len(r) != 0 {
		t.Fatalf("renewal confirmed on the acknowledgements' stamps, before any reading of the clock: %+v", r)
	}
	m.tick(4 * time.Second) // the loop reads them late: every lease has ended
	for _, r := range renewed(m.c) {
		if !r.Expires.After(m.now) {
			t.Fatalf("renewed at the late reading with the lease over (%v before it): %+v", m.now.Sub(r.Expires), r)
		}
	}
	if _, held := m.c.Expires(id); held {
		t.Fatal("still held after its lease ended")
	}
}

// TestOracleHarsh: the three keep the oracle on harsh hosts
// (mutextest.Harsh: clocks drifting up to 495 ppm, loops 5-20 ms late, a
// paused member reading frames stamped before its pause), a grant never
// reported with its lease over among the rest; and with the datagrams
// that reach a paused member kept by its kernel and read when it resumes
// (mutextest.HarshBuffered, half the pauses short stalls), and read by a
// loop that may tick before them, after them or amid them
// (mutextest.HarshInterleaved). A few seeds (the wide search:
// -sim.seeds).
func TestOracleHarsh(t *testing.T) {
	for _, f := range factories {
		for _, h := range []mutextest.Hosts{mutextest.Harsh, mutextest.HarshBuffered, mutextest.HarshInterleaved} {
			t.Run(f.Name+"/"+h.Name, func(t *testing.T) {
				sim.Seeds(t, 3, func(t *testing.T, seed int64) {
					c := mutextest.Run(t, seed, mutextest.Config{Factory: f, Hosts: h})
					t.Log(c)
				})
			})
		}
	}
}
