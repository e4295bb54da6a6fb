package berkeley_test

import (
	"errors"
	"testing"
	"time"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/elect/bully"
	"github.com/synclab/synclab/pkg/liveness"
	"github.com/synclab/synclab/pkg/timesync/berkeley"
	"github.com/synclab/synclab/pkg/wire"
)

// TestWorkerReportsItsTransmitLag: a worker asks to hear when its readings
// leave, and tells the master the shortest of how late they left after their
// stamps; it answers each poll of a burst once, and takes the correction
// as of the arrival of the poll the master names.
func TestWorkerReportsItsTransmitLag(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	w, err := berkeley.New(core.Env{ID: 1, Members: []uint32{1, 2}, Now: t0}, berkeley.Config{})
	if err != nil {
		t.Fatal(err)
	}
	w.Tick(t0)
	w.Ready()
	term := bully.MakeTerm(1, 2)
	coord, _ := wire.Coordinator{}.AppendBinary(nil)
	if err := w.Step(core.Message{From: 2, Kind: wire.KindCoordinator, Term: term, Payload: coord, Time: t0}); err != nil {
		t.Fatal(err)
	}
	w.Ready()
	poll := func(round uint32, sample uint8, at time.Time) wire.ClockReading {
		t.Helper()
		p, _ := wire.ClockPoll{Round: round, Sample: sample}.AppendBinary(nil)
		if err := w.Step(core.Message{From: 2, Kind: wire.KindClockPoll, Term: term, Payload: p, Sent: at.Add(-100 * time.Microsecond), Time: at}); err != nil {
			t.Fatal(err)
		}
		var r wire.ClockReading
		for _, m := range w.Ready().Messages {
			if m.Kind == wire.KindClockReading {
				if !m.Report {
					t.Fatal("a reading without a transmit report asked")
				}
				if err := r.UnmarshalBinary(m.Payload); err != nil {
					t.Fatal(err)
				}
				// The driver sends it 30-50 µs after its stamp.
				lag := time.Duration(30+10*int(sample)) * time.Microsecond
				w.Step(core.Message{Local: true, To: 2, Kind: m.Kind, Term: m.Term, Payload: m.Payload, Sent: at, Time: at.Add(lag)})
				return r
			}
		}
		t.Fatalf("poll %d/%d not answered", round, sample)
		return r
	}
	if r := poll(1, 0, t0.Add(time.Second)); r.TxLag != 0 || r.Sample != 0 {
		t.Fatalf("first reading: %+v", r)
	}
	poll(1, 1, t0.Add(time.Second+10*time.Millisecond))
	if r := poll(1, 2, t0.Add(time.Second+20*time.Millisecond)); r.TxLag != 30_000 || r.Sample != 2 {
		t.Fatalf("third reading: lag %d ns, sample %d; want the shortest of 30 and 40 µs reported", r.TxLag, r.Sample)
	}
	// A duplicate poll is not answered twice.
	p, _ := wire.ClockPoll{Round: 1, Sample: 1}.AppendBinary(nil)
	w.Step(core.Message{From: 2, Kind: wire.KindClockPoll, Term: term, Payload: p, Sent: t0, Time: t0.Add(2 * time.Second)})
	for _, m := range w.Ready().Messages {
		if m.Kind == wire.KindClockReading {
			t.Fatal("a duplicate poll was answered")
		}
	}
	// The correction names poll 1: it is applied as of that poll's arrival.
	adj, _ := wire.ClockAdjust{Round: 1, Sample: 1, Correction: int64(5 * time.Millisecond), Error: 1000}.AppendBinary(nil)
	if err := w.Step(core.Message{From: 2, Kind: wire.KindClockAdjust, Term: term, Payload: adj, Time: t0.Add(time.Second + 30*time.Millisecond)}); err != nil {
		t.Fatal(err)
	}
	// It reaches the servo at the next tick, which the driver applies at
	// once (see Core.correct).
	if st := w.Report(); st.Synchronized {
		t.Fatal("the correction ran before the tick")
	}
	w.Tick(t0.Add(time.Second + 31*time.Millisecond))
	st := w.Report()
	if st.LastAdjust == nil || st.LastAdjust.CorrectionNS != int64(5*time.Millisecond) || !st.Synchronized {
		t.Fatalf("after the correction: %+v", st)
	}
	// A correction naming a poll this worker never saw is refused.
	adj, _ = wire.ClockAdjust{Round: 1, Sample: 7, Correction: 1}.AppendBinary(nil)
	if err := w.Step(core.Message{From: 2, Kind: wire.KindClockAdjust, Term: term, Payload: adj, Time: t0.Add(2 * time.Second)}); err == nil {
		t.Fatal("a correction for an unknown poll was accepted")
	}
}

// TestTimersValidatedOnce: Berkeley's timers go through
// liveness.CheckTimeout, the one validation of every core's timeouts; a
// measurement bound (Threshold) is not a timer and may be short.
func TestTimersValidatedOnce(t *testing.T) {
	env := core.Env{ID: 1, Members: []uint32{1, 2}, Now: time.Unix(1e9, 0)}
	for name, cfg := range map[string]berkeley.Config{
		"BurstGap":    {BurstGap: 500 * time.Microsecond},
		"AdjustRetry": {AdjustRetry: 999 * time.Microsecond},
		"Stepout":     {Stepout: 1<<32*time.Millisecond + time.Hour},
	} {
		if _, err := berkeley.New(env, cfg); !errors.Is(err, liveness.ErrTimeoutRange) || !errors.Is(err, berkeley.ErrConfig) {
			t.Errorf("%s: %v, want an ErrConfig wrapping liveness.ErrTimeoutRange", name, err)
		}
	}
	if _, err := berkeley.New(env, berkeley.Config{Threshold: 500 * time.Microsecond}); err != nil {
		t.Errorf("a 500µs threshold: %v", err)
	}
}

// TestAbsurdReadingRefused is FuzzBerkeley's finding
// (testdata/fuzz/FuzzBerkeley/dfb3b9eb7d760836): a reading whose stamps put
// the worker's clock 146 years off (any receive time is taken near the
// reading's own send time, within an NTP era) used to enter the round; with
// two clocks and no majority agreeing the master took the median, the
// higher of the two, and slewed itself by 146 years. A reading more than a
// day off is refused, as a correction of more than a day is: Berkeley
// slews, and a clock that far off is set first.
func TestAbsurdReadingRefused(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	m, err := berkeley.New(core.Env{ID: 2, Members: []uint32{1, 2}, Now: t0}, berkeley.Config{})
	if err != nil {
		t.Fatal(err)
	}
	var poll wire.ClockPoll
	var polledAt time.Time
	for now := t0; polledAt.IsZero(); now = now.Add(100 * time.Millisecond) {
		if now.Sub(t0) > time.Minute {
			t.Fatal("member 2 never polled as master")
		}
		m.Tick(now)
		for _, msg := range m.Ready().Messages {
			if msg.Kind == wire.KindClockPoll && poll.UnmarshalBinary(msg.Payload) == nil {
				polledAt = now
			}
		}
		m.Advance(true) // its state written: the election claims only a term on disk
	}
	term := m.Report().Term
	at := polledAt.Add(time.Millisecond)
	for _, off := range []time.Duration{146 * 365 * 24 * time.Hour, 25 * time.Hour, -25 * time.Hour} {
		r, _ := wire.ClockReading{Round: poll.Round, Sample: poll.Sample, PollSent: wire.NTPTimeFromTime(polledAt),
			PollReceived: wire.NTPTimeFromTime(polledAt.Add(off))}.AppendBinary(nil)
		err := m.Step(core.Message{From: 1, Kind: wire.KindClockReading, Term: term, Payload: r, Sent: at.Add(off), Time: at})
		if !errors.Is(err, berkeley.ErrImplausible) {
			t.Errorf("reading %v off: %v, want ErrImplausible", off, err)
		}
	}
	for now := at; now.Before(at.Add(10 * time.Second)); now = now.Add(100 * time.Millisecond) {
		m.Tick(now)
		for _, a := range m.Ready().Adjustments {
			if a.Offset.Abs() > time.Second {
				t.Fatalf("the master adjusts its clock by %v (%v)", a.Offset, a.Kind)
			}
		}
	}
}
