package order

import (
	"errors"
	"testing"
	"time"

	"github.com/synclab/synclab/pkg/clock"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/wire"
)

func newTestCore(t *testing.T, id uint32, state []byte, log [][]byte) *Core {
	t.Helper()
	c, err := New(core.Env{ID: id, Members: []uint32{1, 2, 3}, Now: time.Unix(1e9, 0), Lamport: &clock.Lamport{}, State: state, Log: log}, DefaultLANConfig())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// The sequencer numbers a sender's submissions once and in order, in
// eras: the next ID of the sender's era, or the first of a newer era (a
// restarted sender), never one it numbered, one before its turn, or an
// old era's once a newer one began.
func TestSequencerTakesSubmissionsByEra(t *testing.T) {
	c := newTestCore(t, 1, nil, nil)
	c.seqr.leading, c.seqr.sids = 1, map[uint32]uint64{}
	sid := func(era, n uint64) uint64 { return era<<32 | n }
	for _, step := range []struct {
		from     uint32
		sid      uint64
		err      error
		numbered bool
	}{
		{2, sid(1, 1), nil, true},
		{2, sid(1, 3), ErrStale, false}, // before its turn: resent later
		{2, sid(1, 2), nil, true},
		{2, sid(1, 2), nil, false}, // numbered already
		{2, sid(1, 3), nil, true},
		{2, sid(2, 2), ErrStale, false}, // a new era's second before its first
		{2, sid(2, 1), nil, true},       // the sender restarted
		{2, sid(1, 4), nil, false},      // the old era, still in flight: never answered, not numbered
		{2, sid(2, 2), nil, true},
		{2, sid(3, 0), ErrImplausible, false},
		{3, sid(7, 1), nil, true}, // a sender's first in any era
		{3, sid(7, 1<<32-1), ErrStale, false},
	} {
		before := c.st.Log.last()
		err := c.takeSubmit(step.from, step.sid, []byte("m"))
		if !errors.Is(err, step.err) || step.err == nil && err != nil {
			t.Fatalf("submission %x from %d: %v, want %v", step.sid, step.from, err, step.err)
		}
		if got := c.st.Log.last() > before; got != step.numbered {
			t.Fatalf("submission %x from %d: numbered %v, want %v", step.sid, step.from, got, step.numbered)
		}
	}
}

// A start takes a new submission era, written before anything leaves; a
// submission is not written (it is answered once committed), and leaves
// at once.
func TestSubmissionEraWrittenSubmissionNot(t *testing.T) {
	c := newTestCore(t, 1, nil, nil)
	rd := c.Ready()
	if rd.State == nil || !rd.Promise {
		t.Fatalf("first Ready: state %d bytes, promise %v; want the era, promised", len(rd.State), rd.Promise)
	}
	disk := rd.State
	c.Advance(true)
	if c.st.Log.Era != 1 || c.Submission() != 1<<32 {
		t.Fatalf("era %d, last submission %x", c.st.Log.Era, c.Submission())
	}
	c.seqr.leader = 3
	if err := c.Multicast(time.Unix(1e9, 0), TotalOrder, []byte("m")); err != nil {
		t.Fatal(err)
	}
	rd = c.Ready()
	if rd.State != nil || len(rd.Entries) != 0 || rd.Promise {
		t.Fatalf("a submission was written: state %d bytes, %d records, promise %v", len(rd.State), len(rd.Entries), rd.Promise)
	}
	if len(rd.Messages) != 1 || rd.Messages[0].Kind != wire.KindOrderSubmit || rd.Messages[0].To != 3 {
		t.Fatalf("want one Submit to 3, got %+v", rd.Messages)
	}
	if sid := c.Submission(); sid != 1<<32|1 || !c.Submitting(sid) {
		t.Fatalf("submission %x, waiting %v", sid, c.Submitting(sid))
	}
	c.Advance(true)

	// Restarted from what it wrote: the next era, the submission gone.
	again := newTestCore(t, 1, disk, nil)
	if again.st.Log.Era != 2 || again.Submitting(1<<32|1) {
		t.Fatalf("after a restart: era %d, old submission waiting %v", again.st.Log.Era, again.Submitting(1<<32|1))
	}
}
