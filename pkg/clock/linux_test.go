//go:build linux

package clock

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestFrequencyRequest(t *testing.T) {
	for _, tc := range []struct {
		ppm  float64
		tick int64
		freq int64
	}{
		{0, 10000, 0},
		{12.5, 10000, 12.5 * 65536},
		{-500, 10000, -500 * 65536},
		{501, 10005, 1 * 65536},
		{83333, 10833, 33 * 65536},
		{-83333 + 20, 9167, -13 * 65536},
		{100500, 11000, 500 * 65536},
		{-100500, 9000, -500 * 65536},
	} {
		tx, err := frequencyRequest(tc.ppm, 10000)
		if err != nil {
			t.Fatalf("%v ppm: %v", tc.ppm, err)
		}
		if tx.Modes != unix.ADJ_FREQUENCY|unix.ADJ_TICK || int64(tx.Tick) != tc.tick || int64(tx.Freq) != tc.freq {
			t.Errorf("%v ppm: modes %#x tick %d freq %d, want tick %d freq %d", tc.ppm, tx.Modes, tx.Tick, tx.Freq, tc.tick, tc.freq)
		}
	}
	for _, ppm := range []float64{100500.01, -200000, math.NaN(), math.Inf(-1)} {
		if _, err := frequencyRequest(ppm, 10000); !errors.Is(err, ErrFrequencyRange) {
			t.Errorf("%v ppm: err = %v", ppm, err)
		}
	}
	// Any in-range value is produced to 2^-16 ppm, within kernel limits.
	r := rand.New(rand.NewPCG(1, 1))
	for range 10000 {
		ppm := (r.Float64()*2 - 1) * 100500
		tx, err := frequencyRequest(ppm, 10000)
		if err != nil {
			t.Fatal(err)
		}
		if got := timexPPM(&tx, 10000); math.Abs(got-ppm) > 1.0/65536 {
			t.Fatalf("%v ppm produces %v", ppm, got)
		}
		if tx.Tick < 9000 || tx.Tick > 11000 || tx.Freq < -500<<16 || tx.Freq > 500<<16 {
			t.Fatalf("%v ppm: tick %d freq %d out of kernel range", ppm, tx.Tick, tx.Freq)
		}
	}
}

func TestStepRequest(t *testing.T) {
	for _, tc := range []struct {
		off       time.Duration
		sec, nsec int64
	}{
		{1500 * time.Millisecond, 1, 500000000},
		{-1500 * time.Millisecond, -2, 500000000},
		{-time.Nanosecond, -1, 999999999},
		{-2 * time.Second, -2, 0},
		{time.Nanosecond, 0, 1},
	} {
		tx := stepRequest(tc.off)
		if tx.Modes != unix.ADJ_SETOFFSET|unix.ADJ_NANO || int64(tx.Time.Sec) != tc.sec || int64(tx.Time.Usec) != tc.nsec {
			t.Errorf("%v: modes %#x time %d.%09d, want %d.%09d", tc.off, tx.Modes, tx.Time.Sec, tx.Time.Usec, tc.sec, tc.nsec)
		}
	}
}

func TestSingleShotRequest(t *testing.T) {
	tx := singleShotRequest(-1499 * time.Nanosecond)
	if tx.Modes != unix.ADJ_OFFSET_SINGLESHOT || tx.Offset != -1 {
		t.Fatalf("modes %#x offset %d", tx.Modes, tx.Offset)
	}
}

func TestSyncRequestAndState(t *testing.T) {
	const other = unix.STA_PLL | unix.STA_NANO
	tx := syncRequest(other|unix.STA_UNSYNC, true, 1500*time.Nanosecond, time.Hour)
	if tx.Modes != unix.ADJ_STATUS|unix.ADJ_ESTERROR|unix.ADJ_MAXERROR || tx.Status != other ||
		tx.Esterror != 2 || tx.Maxerror != 16000000 {
		t.Fatalf("synced request %+v", tx)
	}
	tx = syncRequest(other, false, -1, 0)
	if tx.Status != other|unix.STA_UNSYNC || tx.Esterror != 0 {
		t.Fatalf("unsynced request %+v", tx)
	}
	st := stateFromTimex(&unix.Timex{Status: unix.STA_PLL, Freq: -3 << 16, Tick: 10001, Esterror: 20, Maxerror: 300}, 10000)
	want := State{Synchronized: true, Frequency: 97, EstError: 20 * time.Microsecond, MaxError: 300 * time.Microsecond}
	if st != want {
		t.Fatalf("state %+v, want %+v", st, want)
	}
	if stateFromTimex(&unix.Timex{Status: unix.STA_UNSYNC, Tick: 10000}, 10000).Synchronized {
		t.Fatal("STA_UNSYNC read as synchronized")
	}
}

func TestPlanSlew(t *testing.T) {
	p, err := planSlew(400*time.Microsecond, 83333, 12, 10000)
	if err != nil || p.Bulk != 0 || p.Tail != 400*time.Microsecond {
		t.Fatalf("small slew plan %+v, %v", p, err)
	}
	for _, off := range []time.Duration{10 * time.Millisecond, -3 * time.Second} {
		p, err := planSlew(off, 83333, 12, 10000)
		if err != nil {
			t.Fatal(err)
		}
		if p.Bulk+p.Tail != off || p.Tail.Abs() != bulkTail || (p.Tail < 0) != (off < 0) {
			t.Fatalf("%v: bulk %v tail %v", off, p.Bulk, p.Tail)
		}
		if got := p.FastPPM - p.BasePPM; math.Abs(math.Abs(got)-83333) > 1 {
			t.Fatalf("%v: slew rate %v", off, got)
		}
		// The planned monotonic length absorbs the bulk to the ns, and it
		// is longer than |bulk|/rate since the monotonic clock runs fast
		// (or slow) with the slew.
		if d := p.absorbed(p.Duration) - p.Bulk; d.Abs() > time.Nanosecond {
			t.Fatalf("%v: absorbed(Duration) misses by %v", off, d)
		}
		naive := time.Duration(math.Abs(float64(p.Bulk)) / (math.Abs(p.FastPPM-p.BasePPM) * 1e-6))
		if off > 0 && p.Duration <= naive || off < 0 && p.Duration >= naive {
			t.Fatalf("%v: duration %v vs naive %v", off, p.Duration, naive)
		}
	}
	// A base near the tick limit leaves room only for a slower slew.
	p, err = planSlew(time.Second, 83333, 90000, 10000)
	if err != nil || p.Bulk == 0 || math.Abs(p.FastPPM-100500) > 1 {
		t.Fatalf("clamped plan %+v, %v", p, err)
	}
	p, err = planSlew(time.Second, 83333, 100000, 10000)
	if err != nil || p.Bulk != 0 || p.Tail != time.Second {
		t.Fatalf("no-room plan %+v, %v", p, err)
	}
	if _, err := planSlew(time.Second, 83333, 1e6, 10000); !errors.Is(err, ErrFrequencyRange) {
		t.Fatalf("out-of-range base: %v", err)
	}
}

// fakeKernel records requests instead of making them: the slew logic is
// tested without ever writing the clock.
type fakeKernel struct {
	reqs  []unix.Timex
	state unix.Timex
	err   error
	mono  time.Duration
	timer func()
	delay time.Duration
}

func (k *fakeKernel) adjtime(tx *unix.Timex) (int, error) {
	if tx.Modes == 0 {
		*tx = k.state
		return unix.TIME_OK, nil
	}
	if tx.Modes == unix.ADJ_OFFSET_SS_READ {
		tx.Offset = 42
		return unix.TIME_OK, nil
	}
	if k.err != nil {
		return 0, k.err
	}
	k.reqs = append(k.reqs, *tx)
	return unix.TIME_OK, nil
}

func (k *fakeKernel) after(d time.Duration, f func()) func() bool {
	k.timer, k.delay = f, d
	return func() bool { k.timer = nil; return true }
}

func newFakeSystem(t *testing.T, opts SystemOptions) (*System, *fakeKernel) {
	t.Helper()
	k := &fakeKernel{state: unix.Timex{Tick: 10000, Freq: 5 << 16, Status: unix.STA_UNSYNC}}
	s, err := newSystem(opts, k.adjtime, func() time.Duration { return k.mono }, k.after)
	if err != nil {
		t.Fatal(err)
	}
	return s, k
}

func TestSystemSlewLifecycle(t *testing.T) {
	s, k := newFakeSystem(t, SystemOptions{})
	if s.basePPM != 5 {
		t.Fatalf("base from kernel = %v", s.basePPM)
	}
	// Small: the kernel's single shot alone.
	if err := s.Slew(300 * time.Microsecond); err != nil {
		t.Fatal(err)
	}
	if len(k.reqs) != 1 || k.reqs[0].Modes != unix.ADJ_OFFSET_SINGLESHOT || k.reqs[0].Offset != 300 {
		t.Fatalf("small slew requests %+v", k.reqs)
	}
	if st, _ := s.State(); st.SlewLeft != 42*time.Microsecond {
		t.Fatalf("SlewLeft from SS_READ = %v", st.SlewLeft)
	}
	// Large: cancel the single shot, then the fast rate.
	k.reqs = nil
	if err := s.Slew(10 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	plan, _ := planSlew(10*time.Millisecond, DefaultMaxSlewPPM, 5, 10000)
	if len(k.reqs) != 2 || k.reqs[0].Offset != 0 || k.reqs[1] != plan.Fast || k.delay != plan.Duration {
		t.Fatalf("large slew requests %+v, timer %v", k.reqs, k.delay)
	}
	k.mono += plan.Duration / 2
	st, _ := s.State()
	if st.Frequency != 5 || (st.SlewLeft-(10*time.Millisecond-plan.absorbed(plan.Duration/2))).Abs() > time.Nanosecond {
		t.Fatalf("state mid-slew %+v", st)
	}
	// The timer fires 1 ms late: base restored, the rest (200 µs minus
	// the overrun's effect) to the single shot.
	k.mono += plan.Duration - plan.Duration/2 + time.Millisecond
	k.reqs = nil
	k.timer()
	rest := 10*time.Millisecond - plan.absorbed(plan.Duration+time.Millisecond)
	if len(k.reqs) != 2 || k.reqs[0] != plan.Base || k.reqs[1].Modes != unix.ADJ_OFFSET_SINGLESHOT ||
		int64(k.reqs[1].Offset) != int64(math.Round(float64(rest)/1e3)) {
		t.Fatalf("end of bulk requests %+v, want rest %v", k.reqs, rest)
	}
	if rest <= 0 || rest >= bulkTail {
		t.Fatalf("rest %v: a 1 ms late timer should still undershoot", rest)
	}
}

func TestSystemSlewReplacedAndFrequencyChanged(t *testing.T) {
	s, k := newFakeSystem(t, SystemOptions{})
	if err := s.Slew(time.Second); err != nil {
		t.Fatal(err)
	}
	stale := k.timer
	plan, _ := planSlew(time.Second, DefaultMaxSlewPPM, 5, 10000)
	k.mono += time.Second
	// SetFrequency mid-slew: base restored, new base, rest re-planned on it.
	k.reqs = nil
	if err := s.SetFrequency(-20); err != nil {
		t.Fatal(err)
	}
	rest := time.Second - plan.absorbed(time.Second)
	replan, _ := planSlew(rest, DefaultMaxSlewPPM, -20, 10000)
	newBase, _ := frequencyRequest(-20, 10000)
	if len(k.reqs) != 3 || k.reqs[0] != plan.Base || k.reqs[1] != newBase || k.reqs[2] != replan.Fast {
		t.Fatalf("requests %+v", k.reqs)
	}
	// A new slew replaces the rest; the old timer no longer acts.
	k.reqs = nil
	if err := s.Slew(-2 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	neg, _ := planSlew(-2*time.Millisecond, DefaultMaxSlewPPM, -20, 10000)
	if len(k.reqs) != 2 || k.reqs[0] != replan.Base || k.reqs[1] != neg.Fast || neg.FastPPM > -80000 {
		t.Fatalf("replacing requests %+v", k.reqs)
	}
	k.reqs = nil
	stale()
	if len(k.reqs) != 0 {
		t.Fatalf("a stale timer wrote %+v", k.reqs)
	}
	// Close ends the fast phase and hands the rest to the kernel.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if len(k.reqs) != 2 || k.reqs[0] != neg.Base || k.reqs[1].Modes != unix.ADJ_OFFSET_SINGLESHOT || k.reqs[1].Offset != -2000 {
		t.Fatalf("close requests %+v", k.reqs)
	}
}

func TestSystemStepSyncAndErrors(t *testing.T) {
	s, k := newFakeSystem(t, SystemOptions{})
	if err := s.Step(-time.Second); !errors.Is(err, ErrBackwardStep) || len(k.reqs) != 0 {
		t.Fatalf("backward step: %v, %+v", err, k.reqs)
	}
	if err := s.Step(time.Second); err != nil || len(k.reqs) != 1 || k.reqs[0] != stepRequest(time.Second) {
		t.Fatalf("step: %v, %+v", err, k.reqs)
	}
	if err := s.SetSync(true, time.Millisecond, 2*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if got := k.reqs[1]; got != syncRequest(unix.STA_UNSYNC, true, time.Millisecond, 2*time.Millisecond) || got.Status&unix.STA_UNSYNC != 0 {
		t.Fatalf("sync request %+v", got)
	}
	k.err = unix.EPERM
	err := s.SetFrequency(1)
	if !errors.Is(err, ErrPermission) || !errors.Is(err, unix.EPERM) {
		t.Fatalf("EPERM became %v", err)
	}
	b, _ := newFakeSystem(t, SystemOptions{AllowBackwardStep: true})
	if err := b.Step(-time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := newSystem(SystemOptions{MaxSlewPPM: 2e5}, nil, nil, nil); err == nil {
		t.Fatal("200000 ppm slew accepted")
	}
}

// TestSystemReadState reads the real kernel, with Modes=0 only, and checks
// that a read-only System refuses every write before reaching the kernel.
func TestSystemReadState(t *testing.T) {
	s, err := NewSystem(SystemOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	st, err := s.State()
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(st.Frequency) > maxFrequencyPPM(nominalTickUS) || st.MaxError < 0 || st.EstError < 0 || st.SlewLeft != 0 {
		t.Fatalf("implausible kernel state %+v", st)
	}
	t.Logf("kernel: %+v", st)
	before := time.Now().Round(0)
	got := s.Now()
	after := time.Now().Round(0)
	if got.Before(before) || got.After(after) {
		t.Fatalf("Now is %v, not between the time.Now readings %v and %v around it", got, before, after)
	}
	now := time.Now()
	if !s.FromKernel(now).Equal(now) {
		t.Fatal("FromKernel is not the identity")
	}
	for name, err := range map[string]error{
		"Slew":         s.Slew(time.Millisecond),
		"Step":         s.Step(time.Millisecond),
		"SetFrequency": s.SetFrequency(1),
		"SetSync":      s.SetSync(true, 0, 0),
		"Apply":        Apply(s, Adjustment{Kind: AdjustSlew, Offset: time.Second}),
	} {
		if !errors.Is(err, ErrReadOnly) {
			t.Errorf("read-only %s: err = %v, want ErrReadOnly", name, err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}
