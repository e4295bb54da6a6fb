// Package sim is a deterministic discrete-event simulator for synclab
// clusters. It runs the same cores the daemons run, wrapped in the same
// internal/node framing layer (encode, transmit-time patch, MAC, decode,
// validation, replay window), over simulated links and drifting clocks, in
// virtual time.
//
// Everything is a function of one seed: there are no goroutines, no sleeps,
// no time.Now. Actions (ticks, packet arrivals) sit in a queue ordered by
// virtual time and then by the order they were scheduled, so the same seed
// gives the same event log and the same message trace, byte for byte
// (Digest), on every machine.
//
// # Model
//
//   - Each node has its own clock.Sim, driven by the simulator's virtual
//     true time, with the offset and drift of its clock.SimConfig. It ticks
//     every Config.TickInterval of its own clock (a clock 100 ppm fast ticks
//     100 ppm more often in true time), applies its core's clock
//     adjustments, and stamps arrivals with clk.FromKernel(true arrival).
//     Its clock's error is known exactly: Clock(id).TrueOffset().
//   - Each directed link has a LinkConfig: delay, jitter (which reorders
//     datagrams), loss, duplication. Partition, Isolate and Cut break links
//     until Heal. Stream frames (Message.Stream, TCP) keep their order and are
//     lost only when their connection resets: a crash at either end or a cut.
//     A multicast frame is one copy per other node, each through its link.
//   - Crash stops a node (its Output.State, the "disk", survives); Restart
//     rebuilds its core from the disk under the next incarnation; Pause and
//     Resume model a stopped process (SIGSTOP) that wakes up with stale state.
//
// # Walk-through: testing a core
//
// A later core's test (bully election, say; its API here is illustrative)
// builds a cluster, lets it run, breaks it, and checks an oracle over many
// seeds:
//
//	func TestBullyElects(t *testing.T) {
//		sim.Seeds(t, 200, func(t *testing.T, seed int64) {
//			s := sim.New(sim.Config{Seed: seed,
//				DefaultLink: sim.LinkConfig{Delay: 200 * time.Microsecond, Jitter: time.Millisecond, Loss: 0.05}})
//			ids := []uint32{1, 2, 3, 4, 5}
//			for _, id := range ids {
//				s.AddNode(id, netip.AddrPort{}, func(disk []byte) core.Core {
//					c, err := bully.New(bully.Config{ID: id, Members: ids, Rand: s.NewRand()}, disk)
//					if err != nil {
//						t.Fatal(err)
//					}
//					return c
//				}, clock.SimConfig{Offset: time.Duration(id) * time.Millisecond, DriftPPM: 20 * float64(id)})
//			}
//			leader := func() bool { return s.Core(1).(*bully.Core).Leader() == 5 }
//			if !s.RunUntil(leader, 5*time.Second) {
//				t.Fatalf("no leader after 5s\n%s", s.Log())
//			}
//			s.ResetCounts()
//			s.Crash(5)
//			s.RunUntil(func() bool { return s.Core(1).(*bully.Core).Leader() == 4 }, 5*time.Second)
//			if n := s.Sent(wire.KindCoordinator); n != 3 { // N-2 COORDINATOR messages
//				t.Errorf("%d coordinator messages", n)
//			}
//			for _, e := range s.EventsNamed("leader_elected") { /* at most one per term */ }
//		})
//	}
//
// Operator actions go through Do, which drains the core's output like a
// tick: s.Do(2, func(c core.Core) { c.(*mutex.Core).Lock() }).
//
// s.Log() renders the event log (the cores' events and the simulator's own:
// sim.crash, sim.partition...) for failure messages and golden files;
// Trace() and Digest() are the message trace. testdata/ holds a golden
// scenario, regenerated with -rewrite when a change is intended.
//
// A failing seed prints "replay: go test ./pkg/... -run '^TestName$'
// -sim.seed=S" (the package comes first: go test stops reading packages at
// a flag it does not know); -sim.seeds=N runs more seeds. The flags are registered by this
// package when it is initialised, so any test binary importing sim has them.
package sim
