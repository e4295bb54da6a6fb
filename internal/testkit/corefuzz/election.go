package corefuzz

import (
	"testing"
	"time"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/elect"
	"github.com/synclab/synclab/pkg/elect/bully"
	"github.com/synclab/synclab/pkg/epoch"
	"github.com/synclab/synclab/pkg/wire"
)

// ElectionFrame is a bully frame to member self, chosen by the program:
// any election kind (or another), from a member, self or a stranger, with
// a term around cur (Epoch), the member's priority or any, and sometimes a
// garbage payload.
func ElectionFrame(p *Program, cur uint64, lim epoch.Limit, members []bully.Member, self uint32) core.Message {
	ids := make([]uint32, len(members))
	for i, mb := range members {
		ids[i] = mb.ID
	}
	kinds := []wire.Kind{wire.KindElection, wire.KindAnswer, wire.KindCoordinator, wire.KindLeaderHeartbeat, wire.KindLeaderProbe, wire.KindLeaderWatch, wire.KindClockPoll}
	m := core.Message{Kind: kinds[p.Intn(len(kinds))], To: self}
	switch p.Intn(8) {
	case 0:
		m.From = self
	case 1:
		m.From = 9 // a stranger
	default:
		m.From = ids[p.Intn(len(ids))]
	}
	m.Term = p.Epoch(cur, lim, ids)
	prio := uint32(0)
	for _, mb := range members {
		if mb.ID == m.From {
			prio = mb.Priority
		}
	}
	if p.Intn(8) == 0 {
		prio = p.U32()
	}
	switch m.Kind {
	case wire.KindElection:
		m.Payload, _ = wire.Election{Priority: prio, Reason: wire.ElectionReason(1 + p.Intn(5))}.AppendBinary(nil)
	case wire.KindAnswer:
		m.Payload, _ = wire.Answer{Priority: prio}.AppendBinary(nil)
	case wire.KindCoordinator:
		m.Payload, _ = wire.Coordinator{Priority: prio, Flags: p.Byte() & 1}.AppendBinary(nil)
	case wire.KindLeaderHeartbeat:
		m.Payload, _ = wire.LeaderHeartbeat{Priority: prio, Flags: p.Byte() & (wire.HeartbeatResign | wire.HeartbeatAnswer)}.AppendBinary(nil)
	case wire.KindLeaderProbe:
		m.Payload, _ = wire.LeaderProbe{Priority: prio}.AppendBinary(nil)
	case wire.KindLeaderWatch:
		m.Payload, _ = wire.LeaderWatch{Priority: prio}.AppendBinary(nil)
	}
	if p.Intn(10) == 0 {
		m.Payload = []byte{p.Byte(), p.Byte(), p.Byte()}
	}
	return m
}

// TermElector is an election core whose term is an owned epoch persisted
// in bully's state format (bully, the ring elections).
type TermElector interface {
	elect.Elector
	Term() uint64
}

// ElectionStepLimit bounds ElectionSteps' programs (doc.go, "What a
// program costs").
const ElectionStepLimit = 150

// ElectionSteps runs the program every election core's fuzz target shares
// on d's core (member self): up to ElectionStepLimit steps of ticks,
// restarts from the disk, resignations and frames (frame builds one for
// the current term), with failed writes. After each step: the term never goes back within a
// life nor below the disk, the disk holds a term the core can restart
// from, and the core leads only terms it owns. check, if set, adds the
// core's own invariants.
func ElectionSteps(t testing.TB, p *Program, d *Driver, self uint32, frame func(term uint64) core.Message, check func() error) {
	t.Helper()
	c := func() TermElector { return d.Core.(TermElector) }
	last := c().Term()
	for steps := 0; p.More() && steps < ElectionStepLimit; steps++ {
		fail := p.Intn(6) == 0
		var err error
		switch p.Intn(8) {
		case 0, 1:
			err = d.Tick(time.Duration(1+p.Intn(60))*10*time.Millisecond, fail)
		case 2:
			if err = d.Restart(); err == nil {
				last, _ = bully.Restore(d.Disk)
			}
		case 3:
			c().Resign(d.Now)
			err = d.Drain(fail)
		default:
			err = d.Step(frame(c().Term()), fail)
		}
		if err != nil {
			t.Fatal(err)
		}
		tm := c().Term()
		if tm < last {
			t.Fatalf("term went back %#x -> %#x", last, tm)
		}
		last = tm
		if saved, err := bully.Restore(d.Disk); err != nil || tm < saved || bully.CheckTerm(saved) != nil {
			t.Fatalf("disk %#x (%v), term %#x", saved, err, tm)
		}
		if l, tm, _ := c().Leader(); l == self && (c().Role() != elect.RoleLeader || epoch.Owner(tm) != self) {
			t.Fatalf("leads term %#x as %v", tm, c().Role())
		}
		if check != nil {
			if err := check(); err != nil {
				t.Fatal(err)
			}
		}
	}
}
