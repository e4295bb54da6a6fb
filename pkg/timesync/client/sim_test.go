package client_test

import (
	"encoding/binary"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/pkg/clock"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/timesync/client"
	"github.com/synclab/synclab/pkg/timesync/ntp"
	"github.com/synclab/synclab/pkg/wire"
)

// testServer is a minimal NTP server core for the simulations: it answers
// every mode-3 request with ntp.ServerReply as a stratum-1 server, stamping
// with its node's clock (a falseticker is a server whose clock is off). The
// real server core lives in pkg/timesync/server; this one keeps the client's
// tests independent of it.
type testServer struct {
	out []core.Datagram
	// edit, when set, changes each answer before it is sent (d is the
	// request).
	edit func(d core.Datagram, rep *wire.NTPPacket)
	// quiet, when set, drops every request that comes less than quiet
	// after the last one answered (by the server's clock): a rate limit
	// that drops rather than kisses, answering only a multi-sample
	// poll's first request.
	quiet    time.Duration
	answered time.Time
	// leak, with quiet, answers that share of the requests it would
	// drop, at random (chronyd's ratelimit leak), drawing on rng.
	leak float64
	rng  *rand.Rand
}

func (s *testServer) Step(core.Message) error { return core.ErrUnexpectedKind }
func (s *testServer) Tick(time.Time)          {}
func (s *testServer) Status() any             { return nil }

func (s *testServer) StepDatagram(d core.Datagram) error {
	if d.Local {
		return nil
	}
	if s.quiet > 0 {
		if !s.answered.IsZero() && d.Time.Sub(s.answered) < s.quiet && (s.leak == 0 || s.rng.Float64() >= s.leak) {
			return nil
		}
		s.answered = d.Time
	}
	_, rep, err := stratum1Reply(d)
	if err != nil {
		return err
	}
	if s.edit != nil {
		s.edit(d, &rep)
	}
	b, err := rep.AppendBinary(nil)
	if err != nil {
		return err
	}
	s.out = append(s.out, core.Datagram{Addr: d.Addr, Data: b, NTPStamp: true})
	return nil
}

// stratum1Reply decodes the request d and builds a stratum-1 server's
// answer to it, received at d.Time.
func stratum1Reply(d core.Datagram) (req, rep wire.NTPPacket, err error) {
	if err := req.UnmarshalBinary(d.Data); err != nil {
		return req, rep, err
	}
	rep, err = ntp.ServerReply(&req, d.Time, ntp.System{
		Stratum: 1, Precision: -20, ReferenceID: wire.RefIDFromText("GPS"), Reference: d.Time,
	})
	return req, rep, err
}

func (s *testServer) Ready() core.Ready {
	rd := core.Ready{Datagrams: s.out}
	s.out = nil
	return rd
}

// addr is node id's NTP address in the simulations: distinct IPs, so that
// reference IDs (and loop detection) tell hosts apart.
func addr(id uint32) netip.AddrPort {
	return netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 0, 0, byte(id)}), 123)
}

func addServer(s *sim.Sim, id uint32, clk clock.SimConfig) {
	s.AddNode(id, addr(id), func(core.Env) core.Core { return &testServer{} }, clk)
}

// addClient adds a client node; cfg gets the node's Rand and, unless set,
// the simulation's tick interval. The core restores its persisted state.
func addClient(t testing.TB, s *sim.Sim, id uint32, cfg client.Config, clk clock.SimConfig) {
	s.AddNode(id, addr(id), func(env core.Env) core.Core {
		disk := env.State
		cfg := cfg
		cfg.Rand = s.NewRand()
		cfg.TickInterval = s.Config().TickInterval
		c, err := client.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if disk != nil {
			if err := c.Restore(disk); err != nil {
				t.Fatal(err)
			}
		}
		return c
	}, clk)
}

// oracle checks a client node against the ground truth after every
// simulated action: once synchronised, true time lies inside the reported
// error bound; the clock never reads less than it did before; the clock
// accepted every adjustment.
type oracle struct {
	t    *testing.T
	s    *sim.Sim
	id   uint32
	last time.Time
	// worst is the largest |true offset| seen since the last reset.
	worst  time.Duration
	checks int
}

func (o *oracle) check() bool {
	o.t.Helper()
	if !o.s.Up(o.id) {
		return false
	}
	clk := o.s.Clock(o.id)
	now := clk.Now()
	if now.Before(o.last) {
		o.t.Fatalf("node %d's clock went backwards by %v at +%v", o.id, o.last.Sub(now), o.s.Elapsed())
	}
	o.last = now
	if n := o.s.Counters(o.id).AdjustErrors; n > 0 {
		o.t.Fatalf("node %d: %d adjustments refused: %v", o.id, n, o.s.Counters(o.id).LastAdjustError)
	}
	c := o.s.Core(o.id).(*client.Client)
	if lo, hi := c.Bound(now); !lo.IsZero() {
		truth := o.s.Now()
		if truth.Before(lo) || truth.After(hi) {
			o.t.Fatalf("node %d at +%v: true offset %v outside the bound [%v, %v]",
				o.id, o.s.Elapsed(), clk.TrueOffset(), now.Sub(hi), now.Sub(lo))
		}
		o.checks++
	}
	o.checkServed(c, now)
	o.worst = max(o.worst, clk.TrueOffset().Abs())
	return false
}

// checkServed: what the client would serve downstream (System(now), what
// timedcore hands server.SetSystem) bounds its true error. A downstream
// client takes root delay / 2 + root dispersion (RFC 5905's root distance)
// as this host's error and builds its own bound on it. A local reference
// (LOCL) is the administrator's word, not a measurement: not checked.
func (o *oracle) checkServed(c *client.Client, now time.Time) {
	o.t.Helper()
	sys := c.System(now)
	if sys.Leap == wire.LeapNotInSync || sys.Stratum == 0 || sys.Stratum >= wire.StratumUnsynchronized ||
		sys.ReferenceID == wire.RefIDFromText("LOCL") {
		return
	}
	served := sys.RootDelay/2 + sys.RootDispersion
	if off := o.s.Clock(o.id).TrueOffset(); off.Abs() > served {
		lo, hi := c.Bound(now)
		o.t.Fatalf("node %d at +%v: true offset %v beyond the served root distance %v (root delay %v, root dispersion %v, stratum %d, %v after the update it was made at); own bound [%v, %v]",
			o.id, o.s.Elapsed(), off, served, sys.RootDelay, sys.RootDispersion, sys.Stratum, now.Sub(sys.Reference), now.Sub(hi), now.Sub(lo))
	}
}

// run advances the simulation by d, checking the oracles after every action.
func run(s *sim.Sim, d time.Duration, os ...*oracle) {
	s.RunUntil(func() bool {
		for _, o := range os {
			o.check()
		}
		return false
	}, d)
}

// runUntilWithin runs until node id's |true offset| is below lim (checking
// the oracles), for at most d, and returns the time it took or -1.
func runUntilWithin(s *sim.Sim, id uint32, lim, d time.Duration, os ...*oracle) time.Duration {
	start := s.Elapsed()
	ok := s.RunUntil(func() bool {
		for _, o := range os {
			o.check()
		}
		return s.Clock(id).TrueOffset().Abs() < lim
	}, d)
	if !ok {
		return -1
	}
	return s.Elapsed() - start
}

// startClock draws the client's clock: an offset up to ±100 ms (at least
// 50 ms) and a drift up to ±50 ppm.
func startClock(rng *rand.Rand) clock.SimConfig {
	off := time.Duration(50+rng.IntN(51)) * time.Millisecond
	if rng.IntN(2) == 0 {
		off = -off
	}
	return clock.SimConfig{Offset: off, DriftPPM: rng.Float64()*100 - 50}
}

// flagPollSamples runs the simulations built on testConfig with that many
// requests a poll (the oracle tests at --poll-samples N); 0 keeps the
// default.
var flagPollSamples = flag.Int("client.poll-samples", 0, "Config.PollSamples of the simulated clients built on testConfig (0: the default)")

func testConfig(servers ...uint32) client.Config {
	cfg := client.DefaultLANConfig()
	cfg.PollSamples = *flagPollSamples
	for _, id := range servers {
		cfg.Servers = append(cfg.Servers, addr(id))
	}
	return cfg
}

const clientID = 1

// TestSimConverges: a client 50-100 ms and up to ±50 ppm off, against 1 to
// 5 true servers over lossy links with jitter and asymmetric delay, is
// within 1 ms of true time in 10 s and within 100 µs after two minutes,
// with the truth inside its error bound all along and no backward step.
func TestSimConverges(t *testing.T) {
	sim.Seeds(t, 30, func(t *testing.T, seed int64) {
		rng := rand.New(rand.NewPCG(uint64(seed), 1))
		s := sim.New(sim.Config{Seed: seed})
		nsrv := 1 + rng.IntN(5)
		var ids []uint32
		for i := range nsrv {
			id := uint32(2 + i)
			ids = append(ids, id)
			addServer(s, id, clock.SimConfig{})
			// Out and back differ: 100-200 µs one way, 150-300 µs the
			// other, up to 100 µs of queueing, 5% loss.
			out := time.Duration(100+rng.IntN(100)) * time.Microsecond
			s.SetLink(clientID, id, sim.LinkConfig{Delay: out, Jitter: 50 * time.Microsecond, Loss: 0.05, Duplicate: 0.02})
			s.SetLink(id, clientID, sim.LinkConfig{Delay: out * 3 / 2, Jitter: 100 * time.Microsecond, Loss: 0.05, Duplicate: 0.02})
		}
		clk := startClock(rng)
		addClient(t, s, clientID, testConfig(ids...), clk)
		o := &oracle{t: t, s: s, id: clientID}

		took := runUntilWithin(s, clientID, time.Millisecond, 10*time.Second, o)
		if took < 0 {
			t.Fatalf("%d servers, clock %v %+.1f ppm: |offset| %v after 10 s\n%s", nsrv, clk.Offset, clk.DriftPPM,
				s.Clock(clientID).TrueOffset(), report(s))
		}
		run(s, 2*time.Minute-s.Elapsed(), o)
		o.worst = 0
		run(s, 30*time.Second, o)
		if o.worst > 100*time.Microsecond {
			t.Fatalf("%d servers: |offset| up to %v in the third half-minute after convergence\n%s", nsrv, o.worst, report(s))
		}
		st := s.Core(clientID).(*client.Client).Report()
		if !st.Synchronized || st.Stratum != 2 || st.ErrorBoundNS <= 0 {
			t.Fatalf("status after convergence: synchronized %v stratum %d bound %d ns", st.Synchronized, st.Stratum, st.ErrorBoundNS)
		}
		t.Logf("%d servers, clock %v %+.1f ppm: 1 ms after %v; then |offset| <= %v, bound ±%v, freq %.2f (true %.2f)",
			nsrv, clk.Offset, clk.DriftPPM, took, o.worst, time.Duration(st.ErrorBoundNS), st.FrequencyPPM, -clk.DriftPPM)
	})
}

// TestSimRoughNetwork: 2 ms of queueing jitter and 20% loss each way. The
// client still gets within 1 ms, and its bound holds the truth throughout.
func TestSimRoughNetwork(t *testing.T) {
	sim.Seeds(t, 30, func(t *testing.T, seed int64) {
		rng := rand.New(rand.NewPCG(uint64(seed), 6))
		s := sim.New(sim.Config{Seed: seed,
			DefaultLink: sim.LinkConfig{Delay: 200 * time.Microsecond, Jitter: 2 * time.Millisecond, Loss: 0.2, Duplicate: 0.05}})
		nsrv := 1 + rng.IntN(4)
		var ids []uint32
		for i := range nsrv {
			ids = append(ids, uint32(2+i))
			addServer(s, uint32(2+i), clock.SimConfig{})
		}
		addClient(t, s, clientID, testConfig(ids...), startClock(rng))
		o := &oracle{t: t, s: s, id: clientID}
		if took := runUntilWithin(s, clientID, time.Millisecond, 15*time.Second, o); took < 0 {
			t.Fatalf("not within 1 ms after 15 s\n%s", report(s))
		}
		run(s, time.Minute, o)
		o.worst = 0
		run(s, time.Minute, o)
		if o.worst > time.Millisecond {
			t.Fatalf("|offset| up to %v\n%s", o.worst, report(s))
		}
	})
}

// TestSimMakestep: with StepThreshold set, a clock 50-100 ms behind is
// stepped forward once at the first update; a clock ahead is slewed (never
// a backward step), and in both cases the truth stays inside the bound.
func TestSimMakestep(t *testing.T) {
	sim.Seeds(t, 20, func(t *testing.T, seed int64) {
		rng := rand.New(rand.NewPCG(uint64(seed), 7))
		s := sim.New(sim.Config{Seed: seed})
		addServer(s, 2, clock.SimConfig{})
		cfg := testConfig(2)
		cfg.StepThreshold = 10 * time.Millisecond
		clk := startClock(rng)
		addClient(t, s, clientID, cfg, clk)
		o := &oracle{t: t, s: s, id: clientID}
		if took := runUntilWithin(s, clientID, time.Millisecond, 10*time.Second, o); took < 0 {
			t.Fatalf("not within 1 ms after 10 s\n%s", report(s))
		}
		run(s, 30*time.Second, o)
		steps := len(s.EventsNamed(client.EventStepped))
		switch {
		case clk.Offset < 0 && steps != 1:
			t.Fatalf("clock %v behind: %d steps", -clk.Offset, steps)
		case clk.Offset > 0 && steps != 0:
			t.Fatalf("clock %v ahead: %d steps", clk.Offset, steps)
		}
		if off := s.Clock(clientID).TrueOffset().Abs(); off > 100*time.Microsecond {
			t.Fatalf("|offset| %v after 30 s\n%s", off, report(s))
		}
	})
}

// TestSimFalseticker: among 3 to 5 servers one is a second off; the client
// calls it a falseticker, never follows it, and converges on the others.
func TestSimFalseticker(t *testing.T) {
	sim.Seeds(t, 30, func(t *testing.T, seed int64) {
		rng := rand.New(rand.NewPCG(uint64(seed), 2))
		s := sim.New(sim.Config{Seed: seed,
			DefaultLink: sim.LinkConfig{Delay: 100 * time.Microsecond, Jitter: 100 * time.Microsecond, Loss: 0.02}})
		nsrv := 3 + rng.IntN(3)
		bad := uint32(2 + rng.IntN(nsrv))
		var ids []uint32
		for i := range nsrv {
			id := uint32(2 + i)
			ids = append(ids, id)
			var clk clock.SimConfig
			if id == bad {
				clk.Offset = time.Second
				if rng.IntN(2) == 0 {
					clk.Offset = -time.Second
				}
			}
			addServer(s, id, clk)
		}
		addClient(t, s, clientID, testConfig(ids...), startClock(rng))
		o := &oracle{t: t, s: s, id: clientID}
		if took := runUntilWithin(s, clientID, time.Millisecond, 10*time.Second, o); took < 0 {
			t.Fatalf("not within 1 ms after 10 s\n%s", report(s))
		}
		run(s, 30*time.Second, o)
		if o.worst > 150*time.Millisecond {
			t.Fatalf("the falseticker pulled the clock: |offset| up to %v", o.worst)
		}
		st := s.Core(clientID).(*client.Client).Report()
		for _, src := range st.Sources {
			if src.Address == addr(bad).String() {
				if src.Verdict != "falseticker" {
					t.Fatalf("the server a second off is %q (%s)\n%s", src.Verdict, src.Why, report(s))
				}
			} else if src.Verdict != "sys_peer" && src.Verdict != "combined" && src.Verdict != "outlier" {
				t.Fatalf("truechimer %s is %q (%s)\n%s", src.Address, src.Verdict, src.Why, report(s))
			}
		}
		if off := s.Clock(clientID).TrueOffset().Abs(); off > 200*time.Microsecond {
			t.Fatalf("|offset| %v after 40 s", off)
		}
		if len(s.EventsNamed(client.EventFalseticker)) == 0 {
			t.Fatal("no falseticker event")
		}
	})
}

// TestSimServerRestart: the only server crashes for 30 s and comes back; the
// client's bound widens but stays truthful, the source is reported
// unreachable, and once it answers again the client is back within 100 µs.
func TestSimServerRestart(t *testing.T) {
	sim.Seeds(t, 30, func(t *testing.T, seed int64) {
		rng := rand.New(rand.NewPCG(uint64(seed), 3))
		s := sim.New(sim.Config{Seed: seed})
		addServer(s, 2, clock.SimConfig{})
		addClient(t, s, clientID, testConfig(2), startClock(rng))
		o := &oracle{t: t, s: s, id: clientID}
		run(s, time.Minute, o)
		s.Crash(2)
		run(s, 30*time.Second, o)
		if len(s.EventsNamed(client.EventUnreachable)) == 0 {
			// 30 s is more than 8 polls at up to 2^2 s after a minute;
			// at longer polls the register may still hold a bit.
			st := s.Core(clientID).(*client.Client).Report()
			if st.Sources[0].Poll <= 2 {
				t.Fatalf("server down 30 s at poll %d, never reported unreachable", st.Sources[0].Poll)
			}
		}
		s.Restart(2)
		run(s, time.Minute, o)
		o.worst = 0
		run(s, 30*time.Second, o)
		if o.worst > 100*time.Microsecond {
			t.Fatalf("|offset| up to %v after the server came back\n%s", o.worst, report(s))
		}
		if st := s.Core(clientID).(*client.Client).Report(); st.Sources[0].Reach == "0" || !st.Synchronized {
			t.Fatalf("after restart: reach %s synchronized %v", st.Sources[0].Reach, st.Synchronized)
		}
	})
}

// addPeers adds nodes 1 and 2 as symmetric peers of each other with cfg:
// node 1 on clock clk, node 2 on a true clock that it serves as a local
// reference of stratum 8.
func addPeers(t *testing.T, s *sim.Sim, cfg client.Config, clk clock.SimConfig) {
	peerCfg := func(self, other uint32, local uint8) client.Config {
		c := cfg
		c.Peers = []netip.AddrPort{addr(other)}
		c.LocalStratum = local
		c.Address = addr(self).Addr()
		return c
	}
	addClient(t, s, 1, peerCfg(1, 2, 0), clk)
	addClient(t, s, 2, peerCfg(2, 1, 8), clock.SimConfig{})
}

// TestSimSymmetricPeers: two timed hosts list each other as symmetric
// peers; node 2's clock is true and it serves it as a local reference of
// stratum 8 (chrony's "local stratum 8"). Node 1 converges on it; node 2
// never follows node 1 (stratum 9 is worse than its own 8), so its clock
// stays true.
func TestSimSymmetricPeers(t *testing.T) {
	sim.Seeds(t, 30, func(t *testing.T, seed int64) {
		rng := rand.New(rand.NewPCG(uint64(seed), 4))
		s := sim.New(sim.Config{Seed: seed,
			DefaultLink: sim.LinkConfig{Delay: 120 * time.Microsecond, Jitter: 60 * time.Microsecond, Loss: 0.03}})
		addPeers(t, s, client.DefaultLANConfig(), startClock(rng))
		o1 := &oracle{t: t, s: s, id: 1}
		o2 := &oracle{t: t, s: s, id: 2}
		if took := runUntilWithin(s, 1, time.Millisecond, 10*time.Second, o1, o2); took < 0 {
			t.Fatalf("peer not within 1 ms after 10 s\n%s", report(s))
		}
		run(s, 2*time.Minute, o1, o2)
		o1.worst = 0
		run(s, 30*time.Second, o1, o2)
		if o1.worst > 100*time.Microsecond {
			t.Fatalf("|offset| of node 1 up to %v\n%s", o1.worst, report(s))
		}
		if o2.worst != 0 {
			t.Fatalf("the reference peer moved: |offset| up to %v", o2.worst)
		}
		st1 := s.Core(1).(*client.Client).Report()
		st2 := s.Core(2).(*client.Client).Report()
		if st1.Stratum != 9 || st1.SysPeer != addr(2).String() {
			t.Fatalf("node 1: stratum %d sys peer %q", st1.Stratum, st1.SysPeer)
		}
		if st2.Synchronized || !st2.LocalReference || st2.Stratum != 8 || st2.Sources[0].Verdict != "bad_stratum" {
			t.Fatalf("node 2: synchronized %v local %v stratum %d verdict on node 1 %q (%s)",
				st2.Synchronized, st2.LocalReference, st2.Stratum, st2.Sources[0].Verdict, st2.Sources[0].Why)
		}
		if st1.Sources[0].Accepted == 0 || st2.Sources[0].Accepted == 0 {
			t.Fatalf("samples from each other: %d and %d", st1.Sources[0].Accepted, st2.Sources[0].Accepted)
		}
	})
}

// TestSimSymmetricStartOrder: two peers, node 2 a true local reference of
// stratum 8, node 1 off by up to 100 ms, started apart by a little (300
// ms, the start order that defeated timed against chronyd every time), by
// more than a burst, and the other way round. Node 1 converges within
// 10 s of both running and keeps the truth inside its bound, and each
// gets samples from the other's packets at its own poll.
func TestSimSymmetricStartOrder(t *testing.T) {
	for _, lead := range []time.Duration{300 * time.Millisecond, -300 * time.Millisecond, 5 * time.Second, -5 * time.Second} {
		t.Run(fmt.Sprintf("node1-first-by-%v", lead), func(t *testing.T) {
			sim.Seeds(t, 20, func(t *testing.T, seed int64) {
				rng := rand.New(rand.NewPCG(uint64(seed), 5))
				s := sim.New(sim.Config{Seed: seed,
					DefaultLink: sim.LinkConfig{Delay: 120 * time.Microsecond, Jitter: 60 * time.Microsecond, Loss: 0.02}})
				cfg := client.DefaultLANConfig()
				cfg.MinPoll, cfg.MaxPoll, cfg.PollRangeSet = 0, 0, true
				addPeers(t, s, cfg, startClock(rng))
				late := uint32(2)
				if lead < 0 {
					late = 1
				}
				s.Crash(late)
				run(s, lead.Abs())
				s.Restart(late)
				o1 := &oracle{t: t, s: s, id: 1}
				if took := runUntilWithin(s, 1, time.Millisecond, 10*time.Second, o1); took < 0 {
					t.Fatalf("node 1 not within 1 ms of its peer 10 s after both started\n%s", report(s))
				}
				before := []client.Status{s.Core(1).(*client.Client).Report(), s.Core(2).(*client.Client).Report()}
				run(s, 30*time.Second, o1)
				st1 := s.Core(1).(*client.Client).Report()
				st2 := s.Core(2).(*client.Client).Report()
				if st1.SysPeer != addr(2).String() {
					t.Fatalf("node 1: sys peer %q\n%s", st1.SysPeer, report(s))
				}
				// Once both run, packets cross now and then (both
				// ends poll every second, with a little jitter), and
				// 2% are lost; most packets must still give a sample.
				for i, st := range []client.Status{st1, st2} {
					got := st.Sources[0].Accepted - before[i].Sources[0].Accepted
					sent := st.Counters["requests"] - before[i].Counters["requests"]
					if 4*got < 3*sent {
						t.Fatalf("node %d: %d samples from the peer's answers to %d packets in 30 s\n%s", i+1, got, sent, report(s))
					}
				}
			})
		})
	}
}

// TestSimPeerLoop: node 2 follows server 3 and peers with node 1, which
// follows node 2. Node 1's packets then name node 2 as its reference: with
// Address set, node 2 sees the timing loop and never uses node 1.
func TestSimPeerLoop(t *testing.T) {
	sim.Seeds(t, 10, func(t *testing.T, seed int64) {
		rng := rand.New(rand.NewPCG(uint64(seed), 8))
		s := sim.New(sim.Config{Seed: seed})
		addServer(s, 3, clock.SimConfig{})
		cfg1 := client.DefaultLANConfig()
		cfg1.Peers, cfg1.Address = []netip.AddrPort{addr(2)}, addr(1).Addr()
		cfg2 := testConfig(3)
		cfg2.Peers, cfg2.Address = []netip.AddrPort{addr(1)}, addr(2).Addr()
		addClient(t, s, 1, cfg1, startClock(rng))
		addClient(t, s, 2, cfg2, startClock(rng))
		o1, o2 := &oracle{t: t, s: s, id: 1}, &oracle{t: t, s: s, id: 2}
		run(s, time.Minute, o1, o2)
		st1 := s.Core(1).(*client.Client).Report()
		st2 := s.Core(2).(*client.Client).Report()
		if st1.Stratum != 3 || st2.Stratum != 2 || st2.SysPeer != addr(3).String() {
			t.Fatalf("strata %d and %d, node 2 follows %q\n%s", st1.Stratum, st2.Stratum, st2.SysPeer, report(s))
		}
		for _, src := range st2.Sources {
			if src.Address == addr(1).String() && src.Verdict != "loop" {
				t.Fatalf("node 2 calls node 1 %q (%s)\n%s", src.Verdict, src.Why, report(s))
			}
		}
		// Accuracy is TestSimConverges' business; node 1 is two hops
		// from the reference and a minute old: a loose sanity bound.
		for id, clk := range map[uint32]time.Duration{1: s.Clock(1).TrueOffset(), 2: s.Clock(2).TrueOffset()} {
			if clk.Abs() > 500*time.Microsecond {
				t.Fatalf("node %d |offset| %v\n%s", id, clk, report(s))
			}
		}
	})
}

// TestSimRestartRestoresFrequency: the client persists its frequency; a
// restarted client (same host clock, a new process) starts from it, so the
// clock keeps its rate right through the restart.
func TestSimRestartRestoresFrequency(t *testing.T) {
	sim.Seeds(t, 10, func(t *testing.T, seed int64) {
		rng := rand.New(rand.NewPCG(uint64(seed), 5))
		s := sim.New(sim.Config{Seed: seed})
		addServer(s, 2, clock.SimConfig{})
		clk := startClock(rng)
		clk.DriftPPM = 30 + 20*rng.Float64()
		addClient(t, s, clientID, testConfig(2), clk)
		o := &oracle{t: t, s: s, id: clientID}
		run(s, 2*time.Minute, o)
		disk := s.Disk(clientID)
		if disk == nil {
			t.Fatal("no state persisted after 2 minutes")
		}
		saved := math.Float64frombits(binary.BigEndian.Uint64(disk[1:])) // version byte, then ppm
		if saved+clk.DriftPPM > 2 || saved+clk.DriftPPM < -2 {
			t.Fatalf("persisted frequency %.3f ppm for a drift of %+.3f ppm", saved, clk.DriftPPM)
		}
		s.Restart(clientID)
		if got := s.Core(clientID).(*client.Client).Frequency(); got != saved {
			t.Fatalf("restored frequency %.3f ppm, persisted %.3f ppm", got, saved)
		}
		// The new process's first update sets the clock's frequency to
		// the restored value, so the clock does not drift off while the
		// new filters fill: it stays near true time through the restart.
		o.worst = 0
		run(s, 10*time.Second, o)
		if o.worst > 300*time.Microsecond {
			t.Fatalf("|offset| up to %v in the 10 s after the restart\n%s", o.worst, report(s))
		}
		t.Logf("drift %+.3f ppm, persisted %.3f, |offset| <= %v after restart, residual %.3f ppm",
			clk.DriftPPM, saved, o.worst, s.Clock(clientID).TrueFrequency())
		o.last = time.Time{}
		run(s, 30*time.Second, o)
		if off := s.Clock(clientID).TrueOffset().Abs(); off > 100*time.Microsecond {
			t.Fatalf("|offset| %v 30 s after the restart", off)
		}
	})
}

// report renders the client's status for a failure message.
func report(s *sim.Sim) string {
	var out string
	for _, id := range s.IDs() {
		c, ok := s.Core(id).(*client.Client)
		if !ok {
			continue
		}
		st := c.Report()
		out += fmt.Sprintf("node %d: true offset %v, sync %v, stratum %d, offset %v, freq %.3f (err %.3f), bound ±%v, selection %q, counters %v\n",
			id, s.Clock(id).TrueOffset(), st.Synchronized, st.Stratum, time.Duration(st.OffsetNS), st.FrequencyPPM,
			st.FrequencyErrorPPM, time.Duration(st.ErrorBoundNS), st.Selection, st.Counters)
		for _, src := range st.Sources {
			out += fmt.Sprintf("  %s %s st %d reach %s poll %d off %v delay %v jit %v λ %v n=%d: %s (%s) %s\n",
				src.Address, src.Mode, src.Stratum, src.Reach, src.Poll, time.Duration(src.OffsetNS), time.Duration(src.DelayNS),
				time.Duration(src.JitterNS), time.Duration(src.RootDistanceNS), src.Samples, src.Verdict, src.Why, src.LastError)
		}
	}
	return out
}

// TestSimPollSamplesStepOnce: a client 50-100 ms behind with three servers
// over links of 1-20 ms one way, --poll-samples 8 and --makestep 10ms: it
// steps once. A poll's held sample (its least delayed answer, given to the
// filter when the poll ends) could span a step made on another server's
// update meanwhile; given to the filter with the offset of the scale
// before, it stepped the clock a second time, past true time (a review:
// seed 54, +68.0 ms then +42.4 ms, the clock 42 ms ahead). A held sample
// sent before the step is dropped, as an answer that comes after it is.
func TestSimPollSamplesStepOnce(t *testing.T) {
	sim.Seeds(t, 20, func(t *testing.T, seed int64) {
		rng := rand.New(rand.NewPCG(uint64(seed), 54))
		s := sim.New(sim.Config{Seed: seed})
		ids := []uint32{2, 3, 4}
		for _, id := range ids {
			addServer(s, id, clock.SimConfig{})
			d := time.Duration(1+rng.IntN(20)) * time.Millisecond
			s.SetLinkBoth(clientID, id, sim.LinkConfig{Delay: d, Jitter: d / 4})
		}
		cfg := testConfig(ids...)
		cfg.StepThreshold = 10 * time.Millisecond
		cfg.PollSamples = 8
		clk := clock.SimConfig{Offset: -time.Duration(50+rng.IntN(51)) * time.Millisecond}
		addClient(t, s, clientID, cfg, clk)
		o := &oracle{t: t, s: s, id: clientID}
		run(s, 60*time.Second, o)
		if steps := s.EventsNamed(client.EventStepped); len(steps) != 1 {
			t.Fatalf("clock %v behind: %d steps, want 1: %v\n%s", -clk.Offset, len(steps), steps, report(s))
		}
		// The step forgets the polls' held samples: a less delayed one
		// of the old scale kept the poll's later answers from the
		// filter, to be dropped at the poll's end (a review).
		if n := s.Core(clientID).(*client.Client).Report().Counters["poll_sample_across_step"]; n != 0 {
			t.Fatalf("%d polls' samples dropped at their end for a step they were held across\n%s", n, report(s))
		}
	})
}

// TestSimPollSamplesSlowLink: --poll-samples 2 and 8 on links slower than
// a request's wait (a poll interval / 2N, at most 250 ms), against a
// server that answers every request and one that answers only a poll's
// first (it drops requests within 300 ms of its last answer; the last
// case lets 15% of them through at random, as chronyd's leak does). Each
// answer came after the next request left and was refused as bogus
// (answering a request no longer waited for): the client never
// synchronised behind the second server (a review, 40 ms round trip, N =
// 8), and paid N requests for one sample behind the first. Every answer to
// one of the poll's requests is taken now: the client synchronises within
// a minute, the truth inside its bound all along, and a server that
// answers one request of most polls is named once at WARN, with the flag,
// and in the status.
func TestSimPollSamplesSlowLink(t *testing.T) {
	for _, tc := range []struct {
		samples int
		oneWay  time.Duration
		quiet   time.Duration
		leak    float64
	}{
		{2, 150 * time.Millisecond, 0, 0},
		{8, 150 * time.Millisecond, 0, 0},
		{8, 20 * time.Millisecond, 0, 0},
		{2, 150 * time.Millisecond, 300 * time.Millisecond, 0},
		{8, 20 * time.Millisecond, 300 * time.Millisecond, 0},
		{8, 150 * time.Millisecond, 300 * time.Millisecond, 0},
		{8, 100 * time.Microsecond, 300 * time.Millisecond, 0},
		{2, 100 * time.Microsecond, 300 * time.Millisecond, 0.15},
	} {
		name := fmt.Sprintf("N=%d/one-way=%v/quiet=%v/leak=%v", tc.samples, tc.oneWay, tc.quiet, tc.leak)
		t.Run(name, func(t *testing.T) {
			sim.Seeds(t, 10, func(t *testing.T, seed int64) {
				rng := rand.New(rand.NewPCG(uint64(seed), 55))
				s := sim.New(sim.Config{Seed: seed})
				srvRng := rand.New(rand.NewPCG(uint64(seed), 56))
				s.AddNode(2, addr(2), func(core.Env) core.Core {
					return &testServer{quiet: tc.quiet, leak: tc.leak, rng: srvRng}
				}, clock.SimConfig{})
				s.SetLinkBoth(clientID, 2, sim.LinkConfig{Delay: tc.oneWay, Jitter: tc.oneWay / 10})
				cfg := testConfig(2)
				cfg.PollSamples = tc.samples
				clk := startClock(rng)
				addClient(t, s, clientID, cfg, clk)
				o := &oracle{t: t, s: s, id: clientID}
				// Half the round trip's jitter is the most an exchange's
				// offset can be off by.
				lim := time.Millisecond + tc.oneWay/10
				if took := runUntilWithin(s, clientID, lim, time.Minute, o); took < 0 {
					t.Fatalf("|offset| %v after a minute, want below %v\n%s", s.Clock(clientID).TrueOffset(), lim, report(s))
				}
				run(s, 30*time.Second, o)
				st := s.Core(clientID).(*client.Client).Report()
				if !st.Synchronized {
					t.Fatalf("not synchronised\n%s", report(s))
				}
				warns := s.EventsNamed(client.EventPollSamplesSingle)
				src := st.Sources[0]
				if tc.quiet == 0 {
					if len(warns) != 0 || src.PollSamplesWhy != "" {
						t.Fatalf("a server that answers every request: %v, status %q\n%s", warns, src.PollSamplesWhy, report(s))
					}
					// Every answer is taken, but one that comes after the
					// next poll began (as with N = 1: at 150 ms a way, the
					// start-up burst's 500 ms polls of 8 requests end
					// before the last one's answer).
					polls := st.Counters["requests"] / uint64(tc.samples)
					if n := st.Counters["rejected_bogus"]; n > polls || st.Counters["poll_samples_unused"] == 0 {
						t.Fatalf("%d answers refused as bogus in %d polls, %d unused\n%s", n, polls, st.Counters["poll_samples_unused"], report(s))
					}
					return
				}
				if again := s.EventsNamed(client.EventPollSamplesAnswered); len(again) != 0 {
					t.Fatalf("the report came and went: %v then %v\n%s", warns, again, report(s))
				}
				if len(warns) != 1 || !warns[0].Warn || !strings.Contains(warns[0].Msg, addr(2).String()) ||
					!strings.Contains(warns[0].Msg, fmt.Sprintf("--poll-samples %d", tc.samples)) {
					t.Fatalf("a server that answers a poll's first request only: events %v, want one WARN naming it and the flag\n%s", warns, report(s))
				}
				// The link loss the warning names has the opposite remedy
				// to a rate limit's: both are said.
				for _, remedy := range []string{"raise the server's rate limit", "keep --poll-samples", "find the loss on the path"} {
					if !strings.Contains(warns[0].Msg, remedy) {
						t.Fatalf("the warning does not say %q: %s", remedy, warns[0].Msg)
					}
				}
				if !strings.Contains(src.PollSamplesWhy, "--poll-samples") || src.PollSamplesAnswered < 1 || tc.leak == 0 && src.PollSamplesAnswered != 1 {
					t.Fatalf("status: answered %d a poll, %q\n%s", src.PollSamplesAnswered, src.PollSamplesWhy, report(s))
				}
			})
		})
	}
}
