package berkeley_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/testkit/corefuzz"
	"github.com/synclab/synclab/pkg/clock"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/elect/bully"
	"github.com/synclab/synclab/pkg/epoch"
	"github.com/synclab/synclab/pkg/timesync/berkeley"
	"github.com/synclab/synclab/pkg/wire"
)

// FuzzBerkeley drives one Berkeley member through a program read from the
// input: election frames with any term, polls, readings, adjustments and
// acknowledgements from the master it knows, other members, itself and
// strangers, in its term or any other, with extreme rounds, samples,
// corrections, errors, pending slews, frequencies, lags and timestamps;
// transmit reports; ticks; restarts from what it persisted; failed writes.
// It must never panic, and:
//   - no frame leaves with a term its disk does not hold;
//   - no adjustment is absurd: a step only forward, slews and steps within
//     a day (a forged frame cannot fling the clock), a finite frequency;
//   - what it persists it can restart from.
func FuzzBerkeley(f *testing.F) {
	corefuzz.Fuzz(f, berkeleySeeds, runBerkeley)
}

// BenchmarkFuzzBerkeley is FuzzBerkeley's cost per execution (execs/s).
func BenchmarkFuzzBerkeley(b *testing.B) {
	corefuzz.Bench(b, "FuzzBerkeley", berkeleySeeds, runBerkeley)
}

var berkeleySeeds = [][]byte{
	{},
	{1, 0, 0, 9, 3, 0, 0, 9, 4, 0, 0, 9, 5, 3},
	[]byte("\x02\x00\x05\x00\x06\x06\x06\x07\x00\x08\x00\x09\x01\x00"),
}

// berkeleySteps bounds a program (corefuzz's doc, "What a program costs"):
// Berkeley's rounds take long programs to reach (random programs cover 59%
// of the package at 150 steps, 66% at 300), so it keeps 300.
const berkeleySteps = 300

// runBerkeley runs one program of FuzzBerkeley.
func runBerkeley(t testing.TB, in []byte) {
	p := corefuzz.NewProgram(in)
	members := []bully.Member{{ID: 1}, {ID: 2}, {ID: 3}}
	ids := []uint32{1, 2, 3}
	self := uint32(1 + p.Intn(3))
	lim := epoch.Spaced(epoch.MaxRound, bully.TermBurst, 1)
	var d *corefuzz.Driver
	d = &corefuzz.Driver{
		Now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
		New: func(disk []byte) (core.Core, error) {
			return berkeley.New(core.Env{ID: self, Members: ids, Now: d.Now, Rand: rand.New(rand.NewPCG(1, 2)), State: disk}, berkeley.Config{})
		},
		Ready: func(rd core.Ready) error {
			for _, a := range rd.Adjustments {
				if err := plausibleAdjustment(a); err != nil {
					return err
				}
			}
			return nil
		},
		Sent: func(m core.Message, disk []byte) error {
			saved, _ := berkeley.Restore(disk)
			// The reservation bounds a claim that leaves before its
			// catch-up write (bully.Config.Reserve).
			term, reserved, _ := bully.RestoreReserved(saved.Election)
			if m.Term > max(term, reserved) {
				return fmt.Errorf("%v of term %#x left with %#x on disk (reserved %#x)", m.Kind, m.Term, term, reserved)
			}
			return nil
		},
	}
	if err := d.Start(); err != nil {
		t.Fatal(err)
	}
	bk := func() *berkeley.Core { return d.Core.(*berkeley.Core) }
	for steps := 0; p.More() && steps < berkeleySteps; steps++ {
		fail := p.Intn(8) == 0
		var err error
		lead, term, _ := bk().Election().Leader()
		switch p.Intn(10) {
		case 0, 1:
			err = d.Tick(time.Duration(1+p.Intn(1500))*time.Millisecond, fail)
		case 2:
			err = d.Restart()
		case 3:
			err = d.Step(corefuzz.ElectionFrame(p, term, lim, members, self), fail)
		case 4:
			// What a (forged) master does: a poll, then an adjustment
			// for it, in the term this member follows.
			if lead == 0 || lead == self {
				lead = ids[p.Intn(len(ids))]
			}
			round, sample := p.U32(), uint8(p.Intn(3))
			poll, _ := wire.ClockPoll{Round: round, Sample: sample}.AppendBinary(nil)
			adj, _ := wire.ClockAdjust{Round: round, Sample: sample, Correction: p.I64(), Error: p.U64()}.AppendBinary(nil)
			if err = d.Step(core.Message{From: lead, To: self, Kind: wire.KindClockPoll, Term: term, Payload: poll, Sent: d.Now.Add(-time.Millisecond)}, fail); err == nil {
				err = d.Step(core.Message{From: lead, To: self, Kind: wire.KindClockAdjust, Term: term, Payload: adj}, fail)
			}
		default:
			err = d.Step(clockFrame(p, d.Now, term, lim, ids, self), fail)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

func plausibleAdjustment(a clock.Adjustment) error {
	switch a.Kind {
	case clock.AdjustStep:
		if a.Offset <= 0 || a.Offset > 24*time.Hour {
			return fmt.Errorf("step of %v", a.Offset)
		}
	case clock.AdjustSlew:
		if a.Offset.Abs() > 48*time.Hour {
			return fmt.Errorf("slew of %v", a.Offset)
		}
	case clock.AdjustFrequency:
		if a.PPM != a.PPM || a.PPM > 1e6 || a.PPM < -1e6 {
			return fmt.Errorf("frequency %g ppm", a.PPM)
		}
	}
	return nil
}

// clockFrame is a Berkeley frame chosen by the program: mostly from the
// master this member follows, in its term, with extreme fields.
func clockFrame(p *corefuzz.Program, now time.Time, term uint64, lim epoch.Limit, ids []uint32, self uint32) core.Message {
	m := core.Message{To: self, Term: term, Time: now, Sent: now.Add(-time.Duration(p.Intn(5000)) * time.Microsecond)}
	switch p.Intn(6) {
	case 0:
		m.From = self
	case 1:
		m.From = 7
	default:
		m.From = ids[p.Intn(len(ids))]
	}
	if p.Intn(4) == 0 {
		m.Term = p.Epoch(term, lim, ids)
	}
	switch p.Intn(6) {
	case 0:
		m.Time = time.Time{}
	case 1:
		m.Sent = time.Time{}
	case 2:
		m.Sent = now.Add(time.Duration(p.I64()))
	}
	round := uint32(p.Intn(4))
	if p.Intn(6) == 0 {
		round = p.U32()
	}
	sample := uint8(p.Intn(4))
	switch p.Intn(5) {
	case 0:
		m.Kind = wire.KindClockPoll
		m.Payload, _ = wire.ClockPoll{Round: round, Sample: sample}.AppendBinary(nil)
	case 1:
		m.Kind = wire.KindClockReading
		m.Payload, _ = wire.ClockReading{Round: round, Sample: sample,
			PollSent: wire.NTPTimeFromTime(now.Add(-time.Duration(p.Intn(3000)) * time.Microsecond)), PollReceived: wire.NTPTime(p.U64()),
			Pending: p.I64(), Frequency: int32(p.U32()), TxLag: p.U32()}.AppendBinary(nil)
	case 2:
		m.Kind = wire.KindClockAdjust
		m.Payload, _ = wire.ClockAdjust{Round: round, Sample: sample, Correction: p.I64(), Error: p.U64()}.AppendBinary(nil)
	case 3:
		m.Kind = wire.KindClockAdjustAck
		m.Payload, _ = wire.ClockAdjustAck{Round: round}.AppendBinary(nil)
	default:
		// A transmit report, as the driver makes after a write.
		m.Kind, m.Local, m.From = []wire.Kind{wire.KindClockPoll, wire.KindClockReading}[p.Intn(2)], true, self
		m.Payload, _ = wire.ClockPoll{Round: round, Sample: sample}.AppendBinary(nil)
	}
	return m
}
