package sim_test

import (
	"encoding/binary"
	"errors"
	"flag"
	"math"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/pkg/clock"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/liveness"
	"github.com/synclab/synclab/pkg/wire"
)

// probes adds n probe nodes (IDs 1..n) sending every `every` ticks to to
// (core.Broadcast: everyone), and returns their current cores.
func probes(s *sim.Sim, n, every int, to uint32, stream bool) func(id uint32) *probe {
	for id := uint32(1); id <= uint32(n); id++ {
		s.AddNode(id, netip.AddrPort{}, func(env core.Env) core.Core {
			disk := env.State
			p := newProbe(id, disk, every)
			p.to, p.stream = to, stream
			return p
		}, clock.SimConfig{})
	}
	return func(id uint32) *probe { return s.Core(id).(*probe) }
}

// livenessCluster adds members 1..n running the liveness core.
func livenessCluster(t *testing.T, s *sim.Sim, n int, clk func(id uint32) clock.SimConfig) []uint32 {
	ids := make([]uint32, n)
	for i := range ids {
		ids[i] = uint32(i + 1)
	}
	for _, id := range ids {
		s.AddNode(id, netip.AddrPort{}, func(env core.Env) core.Core {
			env.Members, env.Rand = ids, s.NewRand() // the stream the golden results were made with
			c, err := liveness.New(env, liveness.DefaultLANConfig())
			if err != nil {
				t.Fatal(err)
			}
			return c
		}, clk(id))
	}
	return ids
}

func live(s *sim.Sim, id uint32) *liveness.Core { return s.Core(id).(*liveness.Core) }

// scenario runs a small but busy cluster: jitter that reorders, loss,
// duplication, drifting clocks, a partition, a crash and a restart.
func scenario(seed int64) *sim.Sim {
	s := sim.New(sim.Config{Seed: seed, DefaultLink: sim.LinkConfig{
		Delay: 200 * time.Microsecond, Jitter: 30 * time.Millisecond, Loss: 0.1, Duplicate: 0.05}})
	ids := []uint32{1, 2, 3, 4, 5}
	for _, id := range ids {
		s.AddNode(id, netip.AddrPort{}, func(env core.Env) core.Core {
			env.Members, env.Rand = ids, s.NewRand() // the stream the golden results were made with
			c, err := liveness.New(env, liveness.DefaultLANConfig())
			if err != nil {
				panic(err)
			}
			return c
		}, clock.SimConfig{Offset: time.Duration(id) * time.Millisecond, DriftPPM: float64(id) * 20})
	}
	s.Run(time.Second)
	s.Partition([]uint32{1, 2}, []uint32{3, 4, 5})
	s.Run(time.Second)
	s.Heal()
	s.Crash(4)
	s.Run(700 * time.Millisecond)
	s.Restart(4)
	s.Run(time.Second)
	return s
}

func TestDeterminism(t *testing.T) {
	a, b := scenario(7), scenario(7)
	if a.Digest() != b.Digest() {
		t.Fatal("same seed, different message digests")
	}
	if !slices.Equal(a.Trace(), b.Trace()) {
		t.Fatal("same seed, different traces")
	}
	if a.Log() != b.Log() {
		t.Fatalf("same seed, different event logs:\n%s\n---\n%s", a.Log(), b.Log())
	}
	if len(a.Trace()) < 1000 || len(a.Events()) < 10 {
		t.Fatalf("scenario too quiet to prove anything: %d trace entries, %d events", len(a.Trace()), len(a.Events()))
	}
	c := scenario(8)
	if c.Digest() == a.Digest() || c.Log() == a.Log() {
		t.Fatal("different seeds, identical runs: the seed is not used")
	}
}

// delays pairs each Sent entry with its copies' arrivals.
func delays(s *sim.Sim) (d []time.Duration, sent, lost, dups int, reordered bool) {
	at := map[uint64]time.Duration{}
	last := map[[2]uint32]uint64{}
	for _, e := range s.Trace() {
		switch e.Fate {
		case sim.FateSent:
			sent++
			at[e.Packet] = e.At
		case sim.FateLost:
			lost++
		case sim.FateDelivered, sim.FateRejected:
			if e.Dup {
				dups++
				continue
			}
			d = append(d, e.At-at[e.Packet])
			k := [2]uint32{e.From, e.To}
			if e.Packet < last[k] {
				reordered = true
			}
			last[k] = e.Packet
		}
	}
	return
}

func TestLinkStatistics(t *testing.T) {
	cfg := sim.LinkConfig{Delay: 2 * time.Millisecond, Jitter: 4 * time.Millisecond, Loss: 0.2, Duplicate: 0.1}
	s := sim.New(sim.Config{Seed: 1, DefaultLink: cfg})
	probes(s, 2, 1, core.Broadcast, false)
	s.Run(40 * time.Second) // ~4000 datagrams each way
	d, sent, lost, dups, reordered := delays(s)
	if sent < 7900 {
		t.Fatalf("only %d sent", sent)
	}
	// Binomial tolerances: 4 standard deviations.
	within := func(name string, got, n int, p float64) {
		sd := math.Sqrt(float64(n) * p * (1 - p))
		if math.Abs(float64(got)-float64(n)*p) > 4*sd {
			t.Errorf("%s: %d of %d, want %.0f +- %.0f", name, got, n, float64(n)*p, 4*sd)
		}
	}
	within("loss", lost, sent, cfg.Loss)
	within("duplication", dups, sent-lost, cfg.Duplicate)
	var sum time.Duration
	lo, hi := d[0], d[0]
	for _, x := range d {
		sum += x
		lo, hi = min(lo, x), max(hi, x)
	}
	mean := sum / time.Duration(len(d))
	if lo < cfg.Delay || hi > cfg.Delay+cfg.Jitter {
		t.Errorf("delays span [%v, %v], want within [%v, %v]", lo, hi, cfg.Delay, cfg.Delay+cfg.Jitter)
	}
	// Uniform jitter: mean Delay + Jitter/2, standard error Jitter/sqrt(12n).
	want := cfg.Delay + cfg.Jitter/2
	if tol := time.Duration(4 * float64(cfg.Jitter) / math.Sqrt(12*float64(len(d)))); (mean - want).Abs() > tol {
		t.Errorf("mean delay %v, want %v +- %v", mean, want, tol)
	}
	if hi-lo < cfg.Jitter*9/10 {
		t.Errorf("delays span only %v of %v jitter", hi-lo, cfg.Jitter)
	}
	if reordered {
		t.Error("jitter 4ms < send gap 10ms reordered datagrams")
	}

	// Jitter wider than the gap between sends reorders datagrams...
	s = sim.New(sim.Config{Seed: 1, DefaultLink: sim.LinkConfig{Delay: time.Millisecond, Jitter: 50 * time.Millisecond}})
	probes(s, 2, 1, core.Broadcast, false)
	s.Run(5 * time.Second)
	if _, _, _, _, reordered := delays(s); !reordered {
		t.Error("50ms jitter over 10ms sends never reordered datagrams")
	}
	// ...but never stream frames, which are never lost either.
	s = sim.New(sim.Config{Seed: 1, DefaultLink: sim.LinkConfig{Delay: time.Millisecond, Jitter: 50 * time.Millisecond, Loss: 0.3, Duplicate: 0.3}})
	pr := probes(s, 2, 1, core.Broadcast, true)
	s.Run(5 * time.Second)
	if _, sent, lost, dups, reordered := delays(s); reordered || lost != 0 || dups != 0 || sent < 900 {
		t.Errorf("streams: %d sent, %d lost, %d duplicated, reordered %v", sent, lost, dups, reordered)
	}
	for id := uint32(1); id <= 2; id++ {
		for i, r := range pr(id).got {
			if r.n != uint64(i+1) {
				t.Fatalf("node %d: stream frame %d carries %d", id, i+1, r.n)
			}
		}
	}
}

func TestAsymmetricLinks(t *testing.T) {
	s := sim.New(sim.Config{Seed: 3})
	pr := probes(s, 2, 1, core.Broadcast, false)
	s.SetLink(1, 2, sim.LinkConfig{Delay: 5 * time.Millisecond})
	s.SetLink(2, 1, sim.LinkConfig{Delay: 1 * time.Millisecond})
	s.Run(time.Second)
	check := func(to uint32, want time.Duration) {
		for _, r := range pr(to).got {
			// Clocks are perfect here: receive minus transmit is the delay.
			if d := r.at.Sub(r.sent); d != want {
				t.Fatalf("to %d: delay %v, want %v", to, d, want)
			}
		}
		if len(pr(to).got) < 90 {
			t.Fatalf("to %d: only %d frames", to, len(pr(to).got))
		}
	}
	check(2, 5*time.Millisecond)
	check(1, time.Millisecond)
}

func TestPartitionAndHeal(t *testing.T) {
	s := sim.New(sim.Config{Seed: 4})
	pr := probes(s, 4, 1, core.Broadcast, false)
	counts := func() map[[2]uint32]int {
		m := map[[2]uint32]int{}
		for id := uint32(1); id <= 4; id++ {
			for _, r := range pr(id).got {
				m[[2]uint32{r.from, id}]++
			}
		}
		return m
	}
	s.Run(time.Second)
	s.Partition([]uint32{1, 2}, []uint32{3, 4})
	s.Cut(1, 2)                  // one way: 1 no longer reaches 2, 2 still reaches 1
	s.Run(10 * time.Millisecond) // what was in flight lands
	before := counts()
	s.Run(time.Second)
	during := counts()
	for from := uint32(1); from <= 4; from++ {
		for to := uint32(1); to <= 4; to++ {
			if from == to {
				continue
			}
			k := [2]uint32{from, to}
			grew := during[k] > before[k]
			cut := (from <= 2) != (to <= 2) || k == [2]uint32{1, 2}
			if grew == cut {
				t.Errorf("%d->%d: %d -> %d frames during the partition (cut %v)", from, to, before[k], during[k], cut)
			}
			if s.Connected(from, to) == cut {
				t.Errorf("Connected(%d, %d) = %v", from, to, !cut)
			}
		}
	}
	s.Heal()
	s.Run(time.Second)
	after := counts()
	for k, n := range after {
		if n-during[k] < 90 {
			t.Errorf("%d->%d: only %d frames after heal", k[0], k[1], n-during[k])
		}
	}
	s.Isolate(3)
	s.Run(10 * time.Millisecond)
	before = counts()
	s.Run(time.Second)
	for k, n := range counts() {
		if grew := n > before[k]; grew == (k[0] == 3 || k[1] == 3) {
			t.Errorf("isolating 3: %d->%d went %d -> %d", k[0], k[1], before[k], n)
		}
	}
}

func TestCrashRestart(t *testing.T) {
	s := sim.New(sim.Config{Seed: 5, DefaultLink: sim.LinkConfig{Delay: 5 * time.Millisecond}})
	pr := probes(s, 3, 2, core.Broadcast, false)
	s.Run(time.Second)
	old := pr(2)
	if old.n < 45 || s.Incarnation(2) != 1 {
		t.Fatalf("node 2 sent %d, incarnation %d", old.n, s.Incarnation(2))
	}
	// Let node 1 send, then crash 2 while the frame is in flight.
	s.RunUntil(func() bool {
		return slices.ContainsFunc(s.Trace(), func(e sim.TraceEntry) bool {
			return e.At == s.Elapsed() && e.From == 1 && e.Fate == sim.FateSent
		})
	}, time.Second)
	s.Crash(2)
	sentBefore := old.n
	if s.Running(2) || s.Up(2) {
		t.Fatal("crashed node runs")
	}
	if err := s.Do(2, func(core.Core) {}); !errors.Is(err, sim.ErrNotRunning) {
		t.Errorf("Do on a crashed node: %v", err)
	}
	ticks := len(old.ticks)
	s.Run(time.Second)
	if len(old.ticks) != ticks {
		t.Errorf("crashed node ticked %d times", len(old.ticks)-ticks)
	}
	if s.Counters(2).Missed == 0 {
		t.Error("nothing sent to the crashed node was counted missed")
	}
	if down := slices.ContainsFunc(s.Trace(), func(e sim.TraceEntry) bool { return e.Fate == sim.FateDown && e.To == 2 }); !down {
		t.Error("no copy to the crashed node ended down")
	}
	got1 := len(pr(1).got)

	s.Restart(2)
	p2 := pr(2)
	if p2 == old || p2.n != old.n || s.Incarnation(2) != 2 || s.Counters(2).Restarts != 1 {
		t.Fatalf("restart: new core %v, counter %d (disk %d), incarnation %d", p2 != old, p2.n, old.n, s.Incarnation(2))
	}
	s.Run(time.Second)
	// Its new frames continue the persisted numbering and pass the peers'
	// replay windows, thanks to the new incarnation.
	var after []uint64
	for _, r := range pr(1).got[got1:] {
		if r.from == 2 {
			after = append(after, r.n)
		}
	}
	if len(after) < 45 || after[0] != sentBefore+1 {
		t.Errorf("after restart node 1 got %d frames from 2, first #%v, want #%d", len(after), after[:min(1, len(after))], sentBefore+1)
	}
	if r := s.Node(1).Status().Dropped; len(r) != 0 {
		t.Errorf("node 1 dropped frames: %v", r)
	}
	if len(s.EventsNamed("sim.crash")) != 1 || len(s.EventsNamed("sim.restart")) != 1 {
		t.Errorf("log:\n%s", s.Log())
	}
}

func TestStreamResetByCrash(t *testing.T) {
	s := sim.New(sim.Config{Seed: 6, DefaultLink: sim.LinkConfig{Delay: 20 * time.Millisecond}})
	probes(s, 2, 1, 2, true) // both send streams to node 2 (node 2's go nowhere: counted no-route)
	s.Run(500 * time.Millisecond)
	s.Crash(1) // about two frames in flight from 1 to 2
	s.Run(100 * time.Millisecond)
	resets := 0
	for _, e := range s.Trace() {
		if e.Fate == sim.FateReset {
			resets++
		}
	}
	if resets < 1 {
		t.Errorf("%d stream frames reset by the sender's crash, want >= 1", resets)
	}
}

func TestPauseResume(t *testing.T) {
	s := sim.New(sim.Config{Seed: 7})
	probes(s, 3, 1, 2, false) // datagrams to node 2
	s.Run(time.Second)
	p2 := s.Core(2).(*probe)
	got, ticks := len(p2.got), len(p2.ticks)
	s.Pause(2)
	s.Run(2 * time.Second)
	if len(p2.got) != got || len(p2.ticks) != ticks {
		t.Fatalf("paused node received %d, ticked %d", len(p2.got)-got, len(p2.ticks)-ticks)
	}
	if s.Counters(2).Missed < 300 {
		t.Errorf("only %d datagrams missed while paused", s.Counters(2).Missed)
	}
	s.Resume(2)
	s.Run(time.Second)
	if s.Core(2) != p2 || len(p2.got)-got < 150 || len(p2.ticks)-ticks < 95 {
		t.Fatalf("after resume: same core %v, received %d, ticked %d", s.Core(2) == p2, len(p2.got)-got, len(p2.ticks)-ticks)
	}
	// The first tick after the pause sees the whole gap on the clock.
	if gap := p2.ticks[ticks].Sub(p2.ticks[ticks-1]); gap < 2*time.Second {
		t.Errorf("first tick after a 2s pause came %v after the last one", gap)
	}

	// Stream frames wait for a paused receiver and arrive in order.
	s = sim.New(sim.Config{Seed: 7})
	pr := probes(s, 2, 1, 2, true)
	s.Run(time.Second)
	s.Pause(2)
	s.Run(time.Second)
	s.Resume(2)
	s.Run(10 * time.Millisecond)
	for i, r := range pr(2).got {
		if r.from == 1 && r.n != uint64(i+1) {
			t.Fatalf("stream frame %d arrived as #%d", i+1, r.n)
		}
	}
	if n := len(pr(2).got); n < 195 {
		t.Errorf("only %d stream frames after resume", n)
	}
}

// TestPauseSocketBuffer: with a socket buffer (SetSocketBuffer), the
// datagrams that reach a paused node are kept until the buffer is full,
// the rest lost; at resume the node reads the kept ones in the order they
// came, stamped with their arrival (during the pause), before its first
// tick; a crash empties the buffer.
func TestPauseSocketBuffer(t *testing.T) {
	s := sim.New(sim.Config{Seed: 7})
	p := probes(s, 3, 1, 2, false) // datagrams to node 2, each sender every tick
	s.Run(time.Second)
	size := 0
	for _, e := range s.Trace() {
		if e.To == 2 {
			size = e.Size
		}
	}
	const keep = 40
	s.SetSocketBuffer(2, keep*(size+sim.SocketOverhead)+sim.SocketOverhead) // room for 40, not 41
	p2 := p(2)
	got, ticks, missed := len(p2.got), len(p2.ticks), s.Counters(2).Missed
	pausedAt := s.Now()
	s.Pause(2)
	s.Run(2 * time.Second)
	resumedAt := s.Now()
	if len(p2.got) != got || len(p2.ticks) != ticks {
		t.Fatalf("paused node received %d, ticked %d", len(p2.got)-got, len(p2.ticks)-ticks)
	}
	if lost := s.Counters(2).Missed - missed; lost < 300 {
		t.Errorf("only %d datagrams lost past a full buffer of %d", lost, keep)
	}
	s.Resume(2)
	read := p2.got[got:]
	if len(read) != keep {
		t.Fatalf("read %d datagrams at resume, want the %d the buffer held", len(read), keep)
	}
	for i, r := range read {
		if r.at.Before(pausedAt) || !r.at.Before(pausedAt.Add(200*time.Millisecond)) {
			t.Fatalf("kept datagram %d stamped %v after the pause began: want its arrival, early in the pause (the buffer filled fast)", i, r.at.Sub(pausedAt))
		}
		if i > 0 && r.at.Before(read[i-1].at) {
			t.Fatalf("kept datagram %d stamped before the one read before it", i)
		}
	}
	if len(p2.ticks) != ticks {
		t.Fatal("ticked before the kept datagrams were read")
	}
	s.Run(time.Second)
	if len(p2.ticks)-ticks < 95 || len(p2.got)-got < 150+keep {
		t.Fatalf("after resume: received %d, ticked %d", len(p2.got)-got, len(p2.ticks)-ticks)
	}
	if first := p2.ticks[ticks]; first.Before(resumedAt) {
		t.Errorf("first tick after the pause at %v, before the resume", first.Sub(resumedAt))
	}

	// A crash while paused loses what the buffer held.
	s.Pause(2)
	s.Run(100 * time.Millisecond)
	s.Crash(2)
	s.Restart(2)
	s.Run(5 * time.Millisecond)
	for _, r := range p(2).got {
		if r.at.Before(s.Now().Add(-5 * time.Millisecond)) {
			t.Fatalf("the restarted node read a datagram stamped %v ago, kept from before its crash", s.Now().Sub(r.at))
		}
	}
}

// TestResumeOrder: a resumed node's first tick falls among the kept
// datagrams where its ResumeOrder says: after them all (the default),
// before them all, or after some; ResumeDrawn draws each of the three
// over a few resumes, and a seed replays its draws.
func TestResumeOrder(t *testing.T) {
	run := func(seed int64, order sim.ResumeOrder, resumes int) (before []int, kept []int) {
		s := sim.New(sim.Config{Seed: seed})
		p := probes(s, 3, 1, 2, false)
		s.SetSocketBuffer(2, 1<<20)
		s.SetResumeOrder(2, order)
		s.Run(time.Second)
		for range resumes {
			s.Pause(2)
			s.Run(300 * time.Millisecond)
			p2 := p(2)
			got, ticks := len(p2.got), len(p2.ticks)
			s.Resume(2)
			s.Run(50 * time.Millisecond)
			if len(p2.ticks) == ticks {
				t.Fatalf("%v: no tick after the resume", order)
			}
			before = append(before, p2.readAt[ticks]-got)
			kept = append(kept, len(p2.got)-got)
			s.Run(500 * time.Millisecond)
		}
		return before, kept
	}
	for _, tc := range []struct {
		order sim.ResumeOrder
		want  func(before, kept int) bool
	}{
		{sim.ResumeFramesFirst, func(b, k int) bool { return b >= 50 && b <= k }},
		{sim.ResumeTickFirst, func(b, k int) bool { return b == 0 }},
	} {
		before, kept := run(3, tc.order, 1)
		if !tc.want(before[0], kept[0]) {
			t.Errorf("%v: %d kept datagrams read before the first tick (%d read in all)", tc.order, before[0], kept[0])
		}
	}
	seen := map[string]bool{}
	before, kept := run(5, sim.ResumeDrawn, 12)
	for i, b := range before {
		switch {
		case b == 0:
			seen["tick first"] = true
		case b >= 50: // all the pause's (more came after the tick)
			seen["frames first"] = true
		default:
			seen["mixed"] = true
		}
		if b > kept[i] {
			t.Fatalf("resume %d: %d read before the tick, %d in all", i, b, kept[i])
		}
	}
	if len(seen) != 3 {
		t.Errorf("12 drawn resumes gave only %v (before the first tick: %v)", seen, before)
	}
	if again, _ := run(5, sim.ResumeDrawn, 12); !slices.Equal(again, before) {
		t.Errorf("a seed drew %v, then %v", before, again)
	}
}

func TestDriftingClocksTick(t *testing.T) {
	drift := map[uint32]float64{1: 0, 2: 250, 3: -250, 4: 100}
	s := sim.New(sim.Config{Seed: 8})
	for id, ppm := range drift {
		s.AddNode(id, netip.AddrPort{}, func(env core.Env) core.Core { return newProbe(id, env.State, 0) },
			clock.SimConfig{Offset: time.Duration(id) * time.Second, DriftPPM: ppm})
	}
	const span = 200 * time.Second
	s.Run(span)
	for id, ppm := range drift {
		p := s.Core(id).(*probe)
		want := float64(span/(10*time.Millisecond)) * (1 + ppm/1e6)
		if got := float64(len(p.ticks)); math.Abs(got-want) > 1.5 {
			t.Errorf("node %d (%+v ppm): %v ticks in %v, want %.1f", id, ppm, got, span, want)
		}
		// On its own clock, every tick is TickInterval after the last, to
		// the nanosecond (a true nanosecond is not exactly a local one).
		for i := 1; i < len(p.ticks); i++ {
			if d := p.ticks[i].Sub(p.ticks[i-1]) - 10*time.Millisecond; d.Abs() > 1 {
				t.Fatalf("node %d tick %d: local interval off by %v", id, i, d)
			}
		}
	}

	// A step of the clock moves its reading, not the ticker.
	s = sim.New(sim.Config{Seed: 8})
	s.AddNode(1, netip.AddrPort{}, func(env core.Env) core.Core { return newProbe(1, env.State, 0) }, clock.SimConfig{})
	s.Run(time.Second)
	if err := s.Do(1, func(c core.Core) {
		c.(*probe).adjust(clock.Adjustment{Kind: clock.AdjustStep, Offset: 3 * time.Second})
	}); err != nil {
		t.Fatal(err)
	}
	s.Run(time.Second)
	p := s.Core(1).(*probe)
	if n := len(p.ticks); n < 199 || n > 201 {
		t.Errorf("%d ticks in 2s around a 3s step, want 200", n)
	}
	if off := s.Clock(1).TrueOffset(); (off - 3*time.Second).Abs() > time.Millisecond {
		t.Errorf("clock offset %v after a 3s step", off)
	}

	// A slew speeds the ticker up with the clock: at 400000 ppm, a 2s
	// slew lasts 5s, during which 1s of true time holds 1.4s of local time:
	// 140 ticks. The slew ends in the middle of a tick interval.
	s = sim.New(sim.Config{Seed: 8})
	s.AddNode(1, netip.AddrPort{}, func(env core.Env) core.Core { return newProbe(1, env.State, 0) },
		clock.SimConfig{DriftPPM: 30, MaxSlewPPM: 400000})
	s.Run(time.Second + 3*time.Millisecond)
	if err := s.Do(1, func(c core.Core) {
		c.(*probe).adjust(clock.Adjustment{Kind: clock.AdjustSlew, Offset: 2 * time.Second})
	}); err != nil {
		t.Fatal(err)
	}
	p = s.Core(1).(*probe)
	before := len(p.ticks)
	s.Run(4 * time.Second)
	if n := len(p.ticks) - before; n < 559 || n > 561 {
		t.Errorf("%d ticks in 4s of a +400000 ppm slew, want 560", n)
	}
	s.Run(3 * time.Second)
	for i := before + 1; i < len(p.ticks); i++ {
		if d := p.ticks[i].Sub(p.ticks[i-1]) - 10*time.Millisecond; d.Abs() > 1 {
			t.Fatalf("tick %d around a slew: local interval off by %v", i, d)
		}
	}
	if c := s.Counters(1); c.ClockAnomalies != 0 {
		t.Errorf("%d clock anomalies", c.ClockAnomalies)
	}
	if st, _ := s.Clock(1).State(); st.SlewLeft != 0 {
		t.Fatalf("slew not over: %v left", st.SlewLeft)
	}
}

func TestMulticastAndCounts(t *testing.T) {
	for _, mc := range []bool{false, true} {
		s := sim.New(sim.Config{Seed: 9, Multicast: mc})
		livenessCluster(t, s, 4, func(uint32) clock.SimConfig { return clock.SimConfig{} })
		s.Run(time.Second)
		s.ResetCounts()
		s.Run(time.Second)
		// 4 members x 10 heartbeats: one multicast frame each, or one
		// unicast frame per peer.
		want := uint64(40)
		if !mc {
			want *= 3
		}
		if got := s.Sent(wire.KindHeartbeat); got < want-4*3 || got > want+4*3 {
			t.Errorf("multicast %v: %d heartbeats sent in 1s, want ~%d", mc, got, want)
		}
		if got := s.Delivered(wire.KindHeartbeat); got < 110 || got > 130 {
			t.Errorf("multicast %v: %d heartbeats delivered in 1s, want ~120", mc, got)
		}
		for _, id := range s.IDs() {
			if n := live(s, id).AliveCount(); n != 4 {
				t.Errorf("multicast %v: node %d sees %d alive", mc, id, n)
			}
		}
	}
}

func TestSeedsRunsEverySeed(t *testing.T) {
	if flag.Lookup("sim.seed").Value.String() != "0" || flag.Lookup("sim.seeds").Value.String() != "0" {
		t.Skip("seed flags given: the default seed range is not in use")
	}
	want := 5
	if sim.Soak() {
		want *= sim.SoakFactor
	}
	var seen []int64
	sim.Seeds(t, 5, func(t *testing.T, seed int64) { seen = append(seen, seed) })
	if len(seen) != want || seen[0] != 1 || seen[len(seen)-1] != int64(want) {
		t.Errorf("seeds %v, want 1..%d", seen, want)
	}
	seen = nil
	sim.SoakSeeds(t, 2, 7, func(t *testing.T, seed int64) { seen = append(seen, seed) })
	if want := map[bool][]int64{false: {1, 2}, true: {1, 2, 3, 4, 5, 6, 7}}[sim.Soak()]; !slices.Equal(seen, want) {
		t.Errorf("soak %v: seeds %v, want %v", sim.Soak(), seen, want)
	}
}

// TestSoakEnv: SYNCLAB_SOAK=1 makes a soak run, as -soak does (a child
// test binary shows it).
func TestSoakEnv(t *testing.T) {
	if os.Getenv("SIM_SOAK_CHILD") == "1" {
		if !sim.Soak() {
			t.Fatal("SYNCLAB_SOAK=1 is not a soak run")
		}
		return
	}
	for value, soak := range map[string]bool{"1": true, "": false} {
		cmd := exec.Command(os.Args[0], "-test.run", "^TestSoakEnv$")
		cmd.Env = append(os.Environ(), "SIM_SOAK_CHILD=1", sim.SoakEnv+"="+value)
		if out, err := cmd.CombinedOutput(); (err == nil) != soak {
			t.Errorf("%s=%q: soak run %v, want %v\n%s", sim.SoakEnv, value, err == nil, soak, out)
		}
	}
}

// The nodes run the real framing layer: authenticated frames pass, and the
// copies a link duplicates are refused by the receiver's replay window and
// counted there.
func TestAuthAndDuplicates(t *testing.T) {
	key := wire.Key{ID: 7, Secret: []byte("0123456789abcdef0123456789abcdef")}
	s := sim.New(sim.Config{Seed: 10, Keys: []wire.Key{key},
		DefaultLink: sim.LinkConfig{Delay: time.Millisecond, Jitter: time.Millisecond, Duplicate: 0.2}})
	livenessCluster(t, s, 3, func(uint32) clock.SimConfig { return clock.SimConfig{} })
	s.Run(5 * time.Second)
	for _, id := range s.IDs() {
		if n := live(s, id).AliveCount(); n != 3 {
			t.Errorf("node %d sees %d alive", id, n)
		}
	}
	var dups, rejected int
	for _, e := range s.Trace() {
		if e.Fate == sim.FateSent && e.Size != wire.HeaderLen+wire.HeartbeatLen+wire.AuthTrailerLen {
			t.Fatalf("sealed heartbeat of %d bytes", e.Size)
		}
		if e.Dup {
			dups++
		}
		// The copy that arrives second is refused, duplicate or original.
		if e.Fate == sim.FateRejected {
			rejected++
		}
	}
	var replays uint64
	for _, id := range s.IDs() {
		replays += s.Node(id).Status().Dropped["replay"]
	}
	if dups < 50 || rejected != dups || replays != uint64(dups) {
		t.Errorf("%d duplicates, %d rejected, %d counted as replays", dups, rejected, replays)
	}
}

// Foreign datagrams (NTP) go to whatever node owns the address, stamped
// with the sender's clock at the send; addresses no node owns are counted.
func TestDatagrams(t *testing.T) {
	s := sim.New(sim.Config{Seed: 11, DefaultLink: sim.LinkConfig{Delay: time.Millisecond}})
	pr := probes(s, 3, 1, 0, false)
	s.Start()
	pr(1).dgramTo = s.Addr(2)
	pr(3).dgramTo = netip.MustParseAddrPort("192.0.2.1:123") // nobody's (and never a real packet)
	s.Run(time.Second)
	got := pr(2).dgrams
	if len(got) < 95 || s.DatagramsSent() < 190 {
		t.Fatalf("node 2 got %d datagrams, %d sent in all", len(got), s.DatagramsSent())
	}
	for _, d := range got {
		xmt := wire.NTPTime(binary.BigEndian.Uint64(d.Data[40:48])).Time()
		if d.Addr != s.Addr(1) || d.Time.Sub(xmt) != time.Millisecond {
			t.Fatalf("datagram from %v sent %v received %v", d.Addr, xmt, d.Time)
		}
	}
	if c := s.Counters(3); c.NoRoute < 95 || c.Sent != c.NoRoute {
		t.Errorf("node 3 counters %+v", c)
	}
}

// A node's send lag (SetSendLag): its datagrams leave lag after the clock
// reading they carry, the core hears of the later departure (the kernel's
// transmit stamp), and the link's delay counts from it.
func TestDatagramsSendLag(t *testing.T) {
	const lag = 300 * time.Microsecond
	s := sim.New(sim.Config{Seed: 11, DefaultLink: sim.LinkConfig{Delay: time.Millisecond}})
	pr := probes(s, 2, 1, 0, false)
	s.Start()
	pr(1).dgramTo = s.Addr(2)
	s.SetSendLag(1, lag)
	s.Run(time.Second)
	xmt := func(d core.Datagram) time.Time { return wire.NTPTime(binary.BigEndian.Uint64(d.Data[40:48])).Time() }
	got := pr(2).dgrams
	if len(got) < 95 {
		t.Fatalf("node 2 got %d datagrams", len(got))
	}
	for _, d := range got {
		if d.Time.Sub(xmt(d)) != time.Millisecond+lag {
			t.Fatalf("datagram stamped %v received %v: want the 1 ms link plus the %v lag", xmt(d), d.Time, lag)
		}
	}
	reports := 0
	for _, d := range pr(1).dgrams {
		if !d.Local {
			continue
		}
		reports++
		if d.Time.Sub(xmt(d)) != lag {
			t.Fatalf("datagram stamped %v reported sent at %v: want %v later", xmt(d), d.Time, lag)
		}
	}
	if reports < len(got) {
		t.Errorf("%d departures reported for %d datagrams received", reports, len(got))
	}
}

// alarm asks for Tick every period of its own clock (core.Scheduler) and
// at once when a frame arrives.
type alarm struct {
	probe
	period time.Duration
	next   time.Time
}

func (a *alarm) Tick(now time.Time) {
	a.probe.Tick(now)
	a.next = now.Add(a.period)
}

func (a *alarm) Step(m core.Message) error {
	a.next = m.Time
	return a.probe.Step(m)
}

func (a *alarm) Deadline() time.Time { return a.next }

func TestSchedulerTicksAtDeadlines(t *testing.T) {
	const period = 137 * time.Millisecond
	s := sim.New(sim.Config{Seed: 9})
	s.AddNode(1, netip.AddrPort{}, func(env core.Env) core.Core {
		return &alarm{probe: *newProbe(1, env.State, 0), period: period}
	}, clock.SimConfig{Offset: time.Second, DriftPPM: 250})
	s.AddNode(2, netip.AddrPort{}, func(env core.Env) core.Core { return newProbe(2, env.State, 0) }, clock.SimConfig{})
	const span = 10 * time.Second
	s.Run(span)
	a := s.Core(1).(*alarm)
	// The first tick comes at the driver's phase (within one 10 ms
	// TickInterval), then one per period of the node's own clock.
	want := float64(span-10*time.Millisecond) * (1 + 250e-6) / float64(period)
	if got := float64(len(a.ticks)); math.Abs(got-want) > 1.5 {
		t.Errorf("%v ticks in %v, want %.1f", got, span, want)
	}
	for i := 1; i < len(a.ticks); i++ {
		if d := a.ticks[i].Sub(a.ticks[i-1]) - period; d.Abs() > 1 {
			t.Fatalf("tick %d: local interval off by %v", i, d)
		}
	}
	if c := s.Counters(1); c.ClockAnomalies != 0 || s.Node(1).Status().StaleDeadlines != 0 {
		t.Errorf("%d clock anomalies, %d stale deadlines", c.ClockAnomalies, s.Node(1).Status().StaleDeadlines)
	}

	// A frame makes it ask for a tick at once: the tick comes at the
	// frame's arrival, not a period later.
	before := len(a.ticks)
	if err := s.Do(2, func(c core.Core) { c.(*probe).to, c.(*probe).every = 1, 1 }); err != nil {
		t.Fatal(err)
	}
	s.Run(50 * time.Millisecond)
	if len(a.got) == 0 {
		t.Fatal("no frame from node 2")
	}
	at := a.got[0].at
	found := false
	for _, tick := range a.ticks[before:] {
		if d := tick.Sub(at); d >= 0 && d <= time.Microsecond {
			found = true // at once: the next nanosecond
		}
	}
	if !found {
		t.Errorf("no tick at the frame's arrival %v: %v", at, a.ticks[before:])
	}
}
