package majority_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/elect"
	"github.com/synclab/synclab/pkg/elect/majority"
	"github.com/synclab/synclab/pkg/wire"
)

// requests counts the vote requests in rd.
func requests(rd core.Ready) int {
	n := 0
	for _, m := range rd.Messages {
		if m.Kind == wire.KindVoteRequest {
			n++
		}
	}
	return n
}

// TestVoteTimeoutFromTheWrite: a candidate's vote requests carry its new
// term, so they leave only once its write of the term ends; its vote
// timeout runs from then (the first Tick after Advance), not from the
// decision. Counted from the decision, a 100 ms write (twice the LAN's
// 50 ms VoteTimeout) spent the first try at home and the second at once,
// and the candidate gave up 100 ms after its requests left, just before
// votes that waited for the voters' own 100 ms writes came: at the LAN
// defaults, 5 members whose writes take 100 ms never elected anybody.
func TestVoteTimeoutFromTheWrite(t *testing.T) {
	cfg := majority.DefaultLANConfig()
	t0 := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	c, err := majority.New(core.Env{ID: 1, Members: []uint32{1, 2, 3}, Now: t0, Rand: rand.New(rand.NewPCG(1, 2))}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	now := t0
	for c.Role() != elect.RoleCandidate { // a free member stands within its stagger
		if now = now.Add(time.Millisecond); now.Sub(t0) > time.Second {
			t.Fatal("no candidacy within a second")
		}
		c.Ready()
		c.Advance(true)
		c.Tick(now)
	}
	if rd := c.Ready(); requests(rd) == 0 || !rd.Promise {
		t.Fatalf("the candidacy's Ready: %+v; want its term (a promise) and its requests", rd)
	}
	// Its write takes 100 ms; the requests leave when it ends.
	const write = 100 * time.Millisecond
	left := now.Add(write)
	c.Advance(true)
	if d := c.Deadline(); d.After(left) {
		t.Fatalf("deadline %v after the write's end: the timeout is not re-armed at once", d.Sub(now))
	}
	c.Tick(left)
	if n := requests(c.Ready()); n != 0 {
		t.Fatalf("asked again (%d requests) right after the write: the vote timeout ran while the requests were at home", n)
	}
	if d, want := c.Deadline(), left.Add(cfg.VoteTimeout); !d.Equal(want) {
		t.Fatalf("deadline %v after the requests left, want the VoteTimeout %v", d.Sub(left), cfg.VoteTimeout)
	}
	c.Tick(left.Add(cfg.VoteTimeout))
	if n := requests(c.Ready()); n == 0 || c.Role() != elect.RoleCandidate {
		t.Fatalf("at the vote timeout after the requests left: %d requests, role %v; want the second try", n, c.Role())
	}
}

// TestSimSlowDiskElects: 5 members on the LAN defaults whose every write
// takes 100 ms (a busy disk: twice the VoteTimeout, within its three
// tries) elect a leader, and another after the leader dies, over 10
// seeds. Before the vote timeout ran from the write's end, none did in
// 120 s (about 1,970 candidacies each). The times are logged: the
// candidacies still collide, since each becomes visible only after a
// write longer than the Stagger that separates them (the LAN defaults
// assume writes within it: docs/electd.md).
func TestSimSlowDiskElects(t *testing.T) {
	const write = 100 * time.Millisecond
	var firsts, failovers []time.Duration
	sim.Seeds(t, 10, func(t *testing.T, seed int64) {
		s := sim.New(sim.Config{Seed: seed, DefaultLink: sim.LinkConfig{Delay: 100 * time.Microsecond, Jitter: time.Millisecond}})
		c := newCluster(t, s, ids(5), false)
		for _, id := range s.IDs() {
			s.SetWriteLatency(id, write, write)
		}
		lead, first := c.converge(s.IDs(), 30*time.Second)
		c.run(2 * time.Second)
		s.Crash(lead)
		_, fo := c.converge(s.IDs(), 30*time.Second)
		firsts, failovers = append(firsts, first), append(failovers, fo)
	})
	t.Logf("writes of %v: first leader after %v, failover %v", write, firsts, failovers)
}
