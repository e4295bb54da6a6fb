// Package mutextest runs any mutual-exclusion algorithm (a mutex.Factory)
// on the simulator (internal/sim) with a client on every member and checks
// it against the oracle every algorithm answers to:
//
//   - exclusion: an exclusive grant never overlaps another grant of its
//     lock in real time, and shared grants overlap only each other (a
//     grant lasts from its outcome to its release, or to the end of its
//     lease on its member's drifting clock, as renewed; a crashed or lost
//     holder is not shortened: its program may not know yet);
//   - fences, what a resource that keeps the highest fence it has seen
//     and refuses a lower one needs: a grant's fence is above that of
//     every grant of the lock that ended before it began (equal allowed
//     between two readers), readers whose grants overlap share their
//     fence, and no fence is granted twice to an exclusive holder;
//   - liveness: once the faults stop, every waiting request is granted;
//   - causal order, for an algorithm whose grants follow it
//     (mutex.Causal, its Vector working: tokenask): half the clients'
//     requests carry in Request.After the vector of a program message
//     just received from another member's client, and a request is
//     granted only after every request its stamp names, but where the
//     algorithm says it gives way (Config.CausalSkipEvent, no sooner than
//     Config.CausalSkipAfter after the named request was asked) or the
//     named request's member was faulted before the dependent's grant; a named
//     request that ends without a grant is judged as granted then
//     (causal.go);
//   - no grant or renewal is reported with its lease over: at the instant
//     the member reports it (its loop drains the outcomes after a Ready),
//     on its own clock, the lease has time left. A core that judged the
//     lease by the receive stamps of frames its loop read late would fail
//     it (Harsh).
//
// The hosts are Calm by default (clocks within 100 ppm, loops on time);
// Config.Hosts = Harsh draws clocks up to 495 ppm and loops 5-20 ms late
// (sim.SetLate): frames wait in the kernel, stamped on arrival, and a
// member paused with frames there reads them, when it resumes, with
// stamps from before its pause; HarshBuffered keeps a paused member's
// datagrams in its kernel, and HarshInterleaved reads them with the
// resumed member's first tick before, after or amid them
// (sim.ResumeDrawn). Config.DiskFaults makes every member's
// state writes fail with that probability through the fault rounds
// (sim.SetDiskFaults: the driver withholds the frames of a Ready whose
// promise it could not write), healthy again for the quiet end.
//
// Config.Builds says which members run configuration agreement
// (sim.SetAgreement, configured as mutexd configures it): every member, so
// that the cores see core.Message.Checked on the frames of each member
// incarnation whose announcement came (what central's cut of a
// re-announced hold to its own --lease trusts), or none, older builds
// whose frames are all unchecked; by default the seed picks (even: every
// member, odd: none). The members share Config.Options, so their
// announcements match, unless Config.LeasesApart: then the members that
// run no agreement (BuildsOlder, the older members of BuildsMixed) draw
// their --lease (Options.Lease or twice it), as real older builds may run
// another, and a coordinator must keep an unchecked member's longer
// re-announced hold whole (central's TestOracleLeasesApart and
// TestMixedBuilds fail when it cuts it); the run then has no loss and no
// fault on a member holding a long lease (a longer lease nobody
// re-announces is past what central promises). Without it no
// re-announced hold is longer than any member's --lease, and no oracle
// run reaches the cut. BuildsMixed, asked for, runs some of each: the
// agreeing members refuse an older build's incarnation for three announce
// intervals from the first frame they hear of it, sending it none of
// their cores' frames meanwhile (a cut both ways), then admit it
// unchecked; its first phase lasts that window longer (the two sides
// cannot agree on a coordinator before). Each frame of an older build
// that an agreeing member refuses is a fault window for the causal oracle
// on both members (a one-way cut); a refusal between agreeing members
// (a start, a restart's incarnation not yet announced) opens none.
//
// Clients ask for locks, hold them up to 20 ms or for several leases
// (renewing), and now and then hang (neither renew nor release) so the
// lease must end them. Between phases the faults the algorithm claims to
// survive (its Guarantees.Survives) are injected: crashes and restarts of
// the holder or another member, pauses longer than the lease, a member
// partitioned alone, links that drop a burst (and, with Loss, lossy links
// throughout). Config.ShortCuts adds, through the fault rounds, short
// one-way cuts of a link to the Target (20-400 ms, one every 300 ms on
// average), which lose stream frames (a member's syncs and requests, the
// coordinator's grants: only a cut resets a simulated stream) and are no
// fault: the causal oracle excuses nothing across them (shortcuts.go).
// A request the algorithm gives up waiting (Config.CausalRefused: central's
// refusal, as it leaves the coordinator) ends then for the causal oracle,
// not when its member reports it lost, a lost frame later; with
// Config.LeasesApart too, the first phase lasts the longest --lease more
// (a cut may bring a new coordinator, which holds back its own --lease).
// The outcomes are read after each Ready at the instant the core produced
// them, as mutexd's loop does.
//
// Use it from an algorithm's tests:
//
//	sim.Seeds(t, 20, func(t *testing.T, seed int64) {
//		c := mutextest.Run(t, seed, mutextest.Config{Factory: central.Factory})
//		t.Log(c)
//	})
//
// and MessagesPerEntry for the cost of one uncontended entry at N members,
// to set beside core.Cost.
//
// Tests only: it imports internal/sim (whose flags a binary would show).
//
// It is internal to pkg/mutex, beside the family's shared layer: its API
// names the simulator (internal/sim), which no other module can import,
// so it serves this module's algorithms' tests only.
package mutextest
