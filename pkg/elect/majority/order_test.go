package majority_test

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/elect/majority"
	"github.com/synclab/synclab/pkg/epoch"
	"github.com/synclab/synclab/pkg/wire"
)

// TestStandingOrder: a follower keeps the standing order of its leader's
// renewal, members only and the leader left out (a forged or stale entry
// costs nothing), and once the leader is gone it stands exactly one Margin
// plus a Stagger per rank after its promise ran out; a member the order
// leaves out waits until after every ranked one. The leader announces its
// voters longest-running first, from the uptimes their replies carry.
func TestStandingOrder(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cfg := majority.DefaultLANConfig()
	members := []uint32{1, 2, 3, 4}
	newCore := func(id uint32) *majority.Core {
		c, err := majority.New(core.Env{ID: id, Members: members, Now: t0, Rand: rand.New(rand.NewPCG(1, 2))}, cfg)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	renewal := func(ranks ...uint32) core.Message {
		p, err := wire.LeaseRequest{Seq: 1, Weight: 1, Uptime: 5000, Ranks: ranks}.AppendBinary(nil)
		if err != nil {
			t.Fatal(err)
		}
		return core.Message{From: 1, Kind: wire.KindLeaseRenew, Term: epoch.Make(1, 1), Payload: p, Time: t0}
	}
	for _, tc := range []struct {
		id       uint32
		ranks    []uint32
		wantRank int // -1: not ranked
	}{
		{2, []uint32{9, 1, 3, 2, 4}, 1},
		{3, []uint32{9, 1, 3, 2, 4}, 0},
		{4, []uint32{3, 2}, -1},
	} {
		c := newCore(tc.id)
		if err := c.Step(renewal(tc.ranks...)); err != nil {
			t.Fatal(err)
		}
		want := slices.DeleteFunc(slices.Clone(tc.ranks), func(id uint32) bool { return id == 9 || id == 1 })
		if got := c.Detail().StandingOrder; !slices.Equal(got, want) {
			t.Errorf("%d: standing order %v, want %v", tc.id, got, want)
		}
		rd := c.Ready()
		if len(rd.Messages) != 1 || rd.Messages[0].Kind != wire.KindLeaseGrant {
			t.Fatalf("%d: sent %+v, want one grant", tc.id, rd.Messages)
		}
		c.Advance(true)
		free := t0.Add(cfg.Lease + cfg.Margin)
		c.Tick(free)
		stand := c.Deadline()
		if tc.wantRank >= 0 {
			if want := free.Add(cfg.Margin + time.Duration(tc.wantRank)*cfg.Stagger); !stand.Equal(want) {
				t.Errorf("%d: stands %v after its promise ran out, want %v", tc.id, stand.Sub(free), want.Sub(free))
			}
		} else if least := free.Add(cfg.Margin + time.Duration(len(want))*cfg.Stagger); stand.Before(least) {
			t.Errorf("%d (unranked): stands %v after its promise ran out, before every ranked member (%v)", tc.id, stand.Sub(free), least.Sub(free))
		}
		c.Tick(stand.Add(-time.Nanosecond))
		if rd := c.Ready(); len(rd.Messages) != 0 {
			t.Errorf("%d: sent %v before its turn", tc.id, rd.Messages[0].Kind)
		}
		c.Tick(stand)
		if rd := c.Ready(); len(rd.Messages) != 1 || rd.Messages[0].Kind != wire.KindVoteRequest {
			t.Errorf("%d: at its turn sent %+v, want a vote request", tc.id, rd.Messages)
		}
	}

	// The leader's side: 1 leads; 3 has run longest, then 2 and 4 (the
	// same uptime: by ID).
	l := newCore(1)
	l.Tick(t0)
	l.Tick(l.Deadline())
	rd := l.Ready()
	l.Advance(true)
	if len(rd.Messages) != 1 || rd.Messages[0].Kind != wire.KindVoteRequest {
		t.Fatalf("leader-to-be sent %+v", rd.Messages)
	}
	req := rd.Messages[0]
	now := l.Deadline().Add(-cfg.VoteTimeout + time.Millisecond)
	for _, v := range []struct{ id, uptime uint32 }{{4, 1000}, {2, 1000}, {3, 9000}} {
		p, _ := wire.LeaseReply{Seq: 1, Weight: 1, Verdict: wire.VerdictGranted, Uptime: v.uptime}.AppendBinary(nil)
		if err := l.Step(core.Message{From: v.id, Kind: wire.KindVote, Term: req.Term, Payload: p, Time: now}); err != nil {
			t.Fatal(err)
		}
	}
	if got := l.Detail().StandingOrder; !slices.Equal(got, []uint32{3, 2, 4}) {
		t.Errorf("leader's standing order %v, want [3 2 4]", got)
	}
	l.Ready() // the first renewal: the voters heard when it won (4, 2)
	l.Advance(true)
	l.Tick(l.Deadline())
	var renewed bool
	for _, m := range l.Ready().Messages {
		if m.Kind == wire.KindLeaseRenew {
			var r wire.LeaseRequest
			if err := r.UnmarshalBinary(m.Payload); err != nil || !slices.Equal(r.Ranks, []uint32{3, 2, 4}) {
				t.Errorf("renewal carries %v (%v), want [3 2 4]", r.Ranks, err)
			}
			renewed = true
		}
	}
	if !renewed {
		t.Error("the new leader sent no renewal")
	}
}
