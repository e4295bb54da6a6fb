// Package node puts a sans-IO core inside everything that lies between it and
// bytes on a wire: framing, sequence numbers, Lamport stamping, the
// transmit-time patch, authentication, validation and the counting of every
// frame dropped and why.
//
// A Node is itself sans-IO. The daemon loop feeds it packets from real
// sockets and real time; the simulator feeds it packets from virtual links and
// virtual time. Both therefore run exactly the same decode -> validate -> Step
// and Ready -> encode path, so what is checked in simulation over many seeds is
// what runs on lab machines.
//
// Receiving:
//
//	n.Receive(node.Inbound{From: addr, Data: b, Time: clk.FromKernel(stamp)})
//
// decodes the frame (wire.Frame.UnmarshalBinary: structure only), rejects
// senders outside the member list and frames that do not come from their
// sender's address (a datagram from the member's address and port: members
// send from the socket they listen on, multicast included; a stream frame
// from the member's IP), admits it (wire.Validator.Admit: cluster,
// misdirection, MAC), checks its sequence number and Lamport stamp (below),
// merges the Lamport time and steps the core. Every failure is counted under
// a short stable reason and returned, never panics, and changes nothing: a
// refused frame moves no window and no clock.
//
// Sending: n.Ready() turns the core's messages into encoded frames (one per
// destination, or one multicast frame for a broadcast when the cluster uses a
// group), each with the next sequence number of this incarnation. The bytes
// are finished by n.Finalize right before they are written: the transmit
// timestamp is patched into the header and the frame is sealed, so the MAC
// covers the time actually sent. A stream frame is finalized by its link's
// writer, on its own goroutine, after the loop has moved on: while tracing,
// the driver records its send when it queues it (n.StreamQueued), so that
// a trace lists a node's events in the order of their vector times.
//
// # Sequence numbers and replays
//
// A sequence number is incarnation (24 bits) | series (8) | counter (32)
// (wire.Seq; the top 32 bits are the sender's epoch). The driver persists the
// incarnation and raises it at every start, so a restarted node's frames are
// always newer than anything it sent before. The series moves while the node
// runs, when a peer asks (below) or the counter runs out; after 255 series
// the node raises its incarnation, saved first (Config.Save).
//
// The receiver keeps, per member, a window of the sequence numbers accepted
// in the member's current epoch (wire.SeqWindow, 1024 wide). What it may do
// with it depends on who can make frames:
//
//   - With keys, only key holders can. An outsider can only play back
//     frames it recorded, so the window is strict: a duplicate, a number
//     below the window or of an older epoch is refused. Across the
//     receiver's restarts too: before it accepts the first frame of a new
//     epoch of a member, the node saves that epoch (Config.Save, an fsync
//     in the daemon; rare: once per member per restart or series). After a
//     restart every frame of a saved epoch is refused ("pre_restart"),
//     recordings included, and the node tells the member so
//     (KindEpochRefused, authenticated, at most one per epoch per 200 ms);
//     the member moves to a new series, which the receiver has never seen,
//     and is heard again one round trip later. A refusal that names an
//     older epoch than the member's current one (a recording of it) moves
//     nothing. So that no member's first frame after the restart is lost
//     to the refusal (for bully, an ELECTION or an ANSWER; for everyone,
//     the answers to the start's configuration requests), a restarted
//     node tells every member whose epoch it saved at its first Tick,
//     before their frames come (restart notices, Stats.RestartNotices; at
//     most restartNotices of them per member, refusalInterval apart, until
//     it hears the member in a newer epoch). Only a frame already on its
//     way is refused. The cost: an fsync per new epoch.
//   - Without keys (--insecure) anyone can make any frame, and no window
//     can tell a recording from the member. The window then only drops
//     exact duplicates: a frame below it, or of an older epoch, restarts it
//     there ("resynced" in status), and a newer epoch is taken at any
//     counter. A forger's numbers can never lock the real member out, and
//     replays are not refused: that is what running without a key gives
//     away. Nothing being refused as of an epoch, a node without keys
//     sends no KindEpochRefused and refuses any it receives
//     ("unkeyed_refusal", said at WARN): anyone could send one, and each
//     moved the node to a new series, every 255 to a new incarnation
//     written to disk, until the incarnations ran out.
//
// In both modes a value no genuine member can have reached is refused and
// counted, never recorded ("implausible_seq"): a counter more than
// SeqBurst + SeqRate*dt ahead of the last accepted (dt since it), an
// incarnation more than IncarnationSlack above the highest known. The issue
// that motivated this: one frame "from 3" with sequence 0xffffffffffffff00
// made node 2 refuse node 3's real frames for ever. A member holding the
// key can still forge plausible numbers for another member, and with them
// move that member's window ahead (so its real frames are refused until it
// catches up): with one shared key a member can impersonate any other
// outright, which is worse; per-member keys would be the remedy.
//
// # Lamport stamps
//
// A frame's Lamport stamp is merged into the node's clock before its core
// sees it, so it is checked first: a stamp above the clock is believed
// only up to what some member can have reached since it was last heard,
// its last stamp plus LamportRate per second since then plus a burst that
// jumps spend (LamportBurst; lamport.go says why an honest cluster never
// meets the bound). A stamp beyond is refused ("lamport_ahead"), never
// merged, counted per member in status (PeerSeq.StampsRefused) and said at
// WARN by the daemon. Since no frame raises the bound, a forger can move
// a clock by LamportRate a second, no more; the members that judge the
// pushed node's frames allow the same, so it is never refused for having
// been pushed, and when the forger stops nothing remains to refuse.
//
// What a restart keeps (Durable.Stamps, saved when the clock comes near
// the floor and at most once a minute while stamps change): a floor above
// every stamp the node sent, which its clock resumes from (so a member's
// stamps only grow across its restarts, which pkg/epoch's Life relies on),
// and each member's last stamp and when it was heard, from which it is
// judged after the restart. A node started with nothing saved has no
// reference: it takes the first frame's stamp as it is, and judges every
// later one from it. That first frame is the one a forger without a key
// can still make count (documented as a limit of --insecure).
//
// Logical time is the node's. Every logical send gets one Lamport stamp,
// carried by every frame of its fan-out (a broadcast over unicast is N-1
// frames with one stamp, as one multicast frame has); a core that needs
// the stamp of its own send takes it from the clock it was built with
// (core.Env.Lamport) and sets core.Message.Lamport, which the node then
// uses as is (a stamp ahead of the clock, only a core's bug, is replaced
// and counted in Stats.OwnStampsAhead), or asks for the send's report
// (core.Message.Report), which carries it. Vector timestamps are carried
// only while the node keeps a vector clock (Config.Vectors, a core that
// implements core.VectorUser, or SetVectors while running, as tracing
// does): a flag and a block after the payload, covered by the MAC
// (pkg/wire); the receiver refuses a vector with more entries than
// members, an entry of a non-member, or one more than MaxLamportAhead
// ahead of what it knows ("bad_vector"), and sets core.Message.Vector.
//
// # Configuration agreement
//
// With Config.Agreement set (every daemon with other members sets it; the
// simulator does not), a node announces what must be the same on every
// member (KindConfig, wire.ConfigAnnounce): the service, the cluster name,
// the member list with addresses, the algorithm and the parameters that
// must agree (the daemon's choice: electd's priorities, Yo-Yo's topology
// and the majority election's lease; mutexd's lease; orderd's total order;
// timed's Berkeley mode; every daemon's multicast group), a digest of
// them, and the fingerprint of the key it signs with (wire.KeyFingerprint:
// readable without the key, revealing nothing of it). Per-host timings are
// not in it: a heartbeat or timeout that differs must not split a
// cluster; an algorithm or a lease that differs must.
//
// Announcements are periodic, to every member by unicast: every
// Agreement.Interval (1 s) at the start and while anything is unsettled
// (this node stepped back, a member differs or speaks with an incarnation
// it has not announced), spacing out by doubling to
// Agreement.QuietInterval (8 s) while every member heard agrees; a member
// that announces a configuration other than its last is asked for its own
// at once (a forgery in its name is undone a round trip later). They name
// their parts so that a difference can be said ("member 3's member list
// lacks member 2"); a compact digest in every frame would say only that
// something differs, and cost every frame 16 bytes.
//
// At rest the full announcement says nothing new: the members hold it, and
// a configuration changes only with a restart (no daemon reloads one),
// which is a new incarnation, announced at once. What the rounds still say
// is that the member is up with it, and that needs N-1 frames per member
// per spacing: at 64 members and 8 s, 504 frames a second for the cluster
// (issue 34). So a member that agrees, and is known to take them, is sent
// a refresh instead (KindConfigRefresh, wire.ConfigRefresh: the digest,
// the key's fingerprint and the sender's spacing, 28 bytes) every
// RefreshSpacing: QuietInterval, or (N-1) x Agreement.RefreshPace (1 s)
// when that is longer, so that a member at rest sends about one frame a
// second whatever N (a cluster of up to 9 members sends what it did).
// They are spread over the spacing, not sent by the round that finds them
// due: each member has its slot, spacing / (N-1) apart, and a refresh goes
// at the member's slot, at most a spacing after the last frame to it
// (the node's deadline: a driver ticking at NextTick comes then); in any
// slot every node refreshes another member, each node a fraction of the
// slot after the one before it in the member list, so that nodes started
// together are not in phase (before, a node's 63 refreshes at 64 members
// fell due in one round, and members stayed in phase). A
// refresh matching the announcement held of the sender's incarnation
// counts as hearing it; any other is believed in nothing: the receiver
// asks the sender for its announcement (at most one request per 200 ms),
// never counts it as differing. A member that refreshes counts as agreeing
// for three of the spacings it said (believed up to twice the receiver's
// own), and is said unreachable only then (189 s at 64 members, not 30 s:
// the price of O(1) chatter; the algorithms' own failure detectors see a
// dead leader first). Who takes refreshes is learnt from the members: a
// node sends each member that agrees one refresh per incarnation of it
// (with a full announcement) and refreshes only the members that sent it
// one; an older build drops that one as unknown_kind, sends none, and is
// announced to in full every QuietInterval as before. That one refresh
// may be lost: its sender then sends the member nothing until its slot
// (up to a spacing), where the member, not knowing it refreshes, held it
// a QuietInterval window and warned it "not heard" (a lost first refresh
// at 64 members: 11-46 s taken as not agreeing). So a member that agrees
// and is 3 Intervals from lapsing is asked for its announcement, once an
// Interval (at most evidenceAsks times a silence): a live member answers,
// which counts as hearing it (TestFirstRefreshLost,
// TestStartLossNotHeard); a dead one lapses as before. What a forger
// without a key gains: a refresh with the member's digest keeps a member
// that fell silent counted for up to 6 RefreshSpacings (it could forge
// full announcements before); one with another digest costs the member a
// request and an answer, at most one per 200 ms. Anything that unsettles a
// node (a member that differs, an unknown incarnation, a step back) brings
// full announcements at the Interval to the members concerned, and to
// every member while the node itself starts or stands back, and once when
// it ceases to (a refresh carries no flag).
//
// Per-host timings must still fit each other: a leader whose heartbeats
// come further apart than a follower waits for one is given up, and
// elected again, over and over (electd's bully with --probe 0: 47 leader
// changes in 20 s, every line at INFO). With Agreement.Heartbeat and
// LeaderTimeout set (electd, orderd, timed's Berkeley mode), a node sends
// its own (KindConfigTimings, wire.ConfigTimings, 20 bytes) after the
// next announcement or refresh to a member once when the member's own
// came as news (the first of its run, or changed: then, one of them
// forged, the node asks the member for its own), and after its asks;
// besides, twice per pair of incarnations at once, then one more after
// 15 s, doubling to one every 5 minutes: an older build drops each as
// unknown_kind (a counter, a debug line), and two members of this build
// that lost every early tell both ways still learn each other's within
// 5 minutes of the loss's end. A member whose heartbeat is not below this
// node's leader timeout, or whose leader timeout is not above this node's
// heartbeat, is warned of once per change (notice "timing_mismatch",
// naming both flags and both values), its end said at INFO when it
// restarts with timings that fit ("timing_fits"), and named in status
// (AgreementStatus.TimingMismatch, MemberAgreement.Timing); nothing is
// refused, and nothing else depends on them. A member's timings count
// only for the incarnation it announced, and are forgotten with it (a
// restarted member is told again, and judged by its new run's) or an
// hour after the last (timingsKept: a member of this build tells its own
// at least every 5 minutes, and expired ones are asked for; the same
// mismatch heard again after that is not warned again). Without a key
// anyone can forge them: the forger gains a WARN line and a status line
// (until the member's answer to the ask its change causes; for a member
// that never sends its own, up to timingsKept), and at most two tells per
// forged frame, no more.
//
// The times agreement keeps (its next round, the last announcement, a
// member's last hearing, ...) are re-based on the clock when it steps back
// past them (agreement.steppedBack): a node stepped back by S used to send
// no announcement nor refresh for S.
//
// Announcements are bound to the sender's incarnation: a member that
// restarts may have another configuration, so its frames of a new incarnation are refused
// ("config_unverified") until it announced it (the node asks it at once,
// ConfigAnswer, and it answers at once); a member that is heard for
// 3 Intervals without ever announcing is an older build, followed
// unchecked, and said so ("unverified").
//
// A member whose announced configuration differs is not followed, voted
// for or counted: its frames are refused before the core sees them
// ("config_differs").
//
// A refusal is a cut both ways: while the node refuses a member's frames
// (config_unverified, config_differs: the last one of its that came was
// refused, and no announcement of that incarnation agreed since), it sends
// that member none of its core's frames either (a broadcast goes to the
// others one by one; counted as dropped, "withheld_<kind>"), only its own
// (announcements, asks, status), which are how a refusal ends. The cores
// argue their safety from cuts that are two-way (pkg/mutex/permission,
// "Links": a member that hears no majority takes itself for cut off before
// the others give it up); a refused member that still heard everyone
// counted a majority heard and granted a lock while the members refusing
// it gave it up on the silence they saw (Lamport's queue with an older
// build, two holders: TestAgreementRefusalTwoWay in internal/sim, the
// mixed-builds oracle in pkg/mutex/permission). A core's frame on a
// member's TCP link (core.Message.Stream: Maekawa's and the majority
// quorum's votes, the token ring's token and its acknowledgement,
// central's member frames, Yo-Yo's election messages, bully's
// LEADER_WATCH) that is refused or withheld so is lost with the
// connection still up: neither link closes, no core is told (no
// stream_closed hint). None needs to be: no core resends on a hint
// (only bully's election acts on stream_closed, in electd, central and
// orderd's sequencer: it probes its leader), each resends on a timer of
// its own (Maekawa's collecting request every AttemptTimeout, the token
// ring's token after AckTimeout, central's syncs every beat, Yo-Yo's round every Heartbeat
// as datagrams; a LEADER_WATCH only opens the link), so such a loss
// costs the refusal and that timer, as a broken link does
// (TestRefusedVotesResent and the mixed-builds oracles in
// pkg/mutex/maekawa, pkg/mutex/tokenring and pkg/elect/algorithms),
// except Maekawa's and the majority quorum's frames that no timer
// resends: a lost vote (locked) costs the requester its collectTimeout
// (TestLostLockedCostsCollect), a lost release, renewal, failed or
// inquire up to the vote's lease (a voter keeps a vote whose release was
// lost until it ends: TestLostReleaseCostsLease). Closing the
// connection would tell no core more, and would set bully's probes of a
// live leader going. Frames refused
// before that (another cluster's ID, a
// MAC that fails) from a member's address are evidence too: an
// announcement with another cluster's ID whose MAC verifies with this
// node's key is a member configured with another cluster name (or another
// service on that port); one whose MAC fails names its key's fingerprint,
// which tells a member with another key from forgeries in its name (the
// fingerprint of a key this node holds, or a member heard meanwhile with
// frames that authenticate). Only the key is believed of a frame that does
// not authenticate.
//
// A node counts the members it hears (a member that agrees: a frame
// accepted within 3 QuietIntervals; one that differs: a frame or evidence
// within 3 Intervals): those that agree, itself included, and
// those that differ. While as many differ as agree it steps back
// (StandingSteppedBack): the core is neither stepped, ticked nor drained,
// no frame of it leaves, and the driver restarts it from its saved state
// (ReplaceCore, under a new incarnation), so that nothing it believed
// survives; it runs again when the count turns. Two members that disagree
// are tied: both step back (safety first). At the start the node holds its
// core (StandingStarting) until every member has been heard, or a
// majority of the members agrees, or Agreement.StartGrace (500 ms) has
// passed, whatever the members heard so far say (the first answers may
// all come from the wrong member: a member configured right does not step
// back on them): a typo on one host then never leads, grants or
// sequences, even for an instant. A member that hears nobody is in no minority and runs
// (a partition is the algorithms' business, not agreement's).
//
// A member that restarted (a newer incarnation, with keys) is answered at
// once, even if its last run asked a moment ago: it holds its core until
// the answers come.
//
// What an attacker on the LAN can do with it: against a cluster with a
// key, only unauthenticated evidence, which counts for a member this node
// does not hear authentically; so it can make a node that hears fewer
// members agreeing than it sees "differing" addresses step back (a node
// already cut off from most of its cluster), never one that hears a
// majority, and it can never make a node lead or be counted. Against a
// cluster without a key (--insecure) it can announce anything in any
// member's name, and make any node step back (announcements "from" most
// of its members, of another configuration); but a member's latest
// announcement is its word, whatever its incarnation, so a forged one
// lasts until the member's next (Interval, 1 s): when the forger stops,
// the node runs again within a second. (An announcement forged with a
// higher incarnation used to be believed for good: the member's real
// ones were dropped as late, and its frames refused as config_differs.)
//
// The node never logs: what an operator must see is a Notice (Notices),
// which the driver writes rate-limited, and the view is in
// Status.Agreement.
//
// # The whole lab in one table
//
// `X status --cluster` asks every member for its row over the cluster's
// own protocol, on the member socket (no extra port), authenticated like
// every frame (cluster.go):
//
//	id, err := n.QueryCluster(now)   // KindStatusQuery to every other member, with the next Ready
//	...                              // answers (KindStatusReport) gather as frames arrive
//	n.ClusterNews()                  // queries that got an answer since the last call
//	n.ClusterQueryDone(id)           // every member asked has answered
//	answers := n.EndClusterQuery(id) // at the driver's deadline: what came
//
// A member answers a query with its StatusReport: what the node knows
// (its standing, incarnation, configuration fingerprint and key, the
// query's ID) and what the driver adds (Config.Report: its build, uptime,
// clock, and the daemon's own facts). The answer carries the query's
// transmit time back and the query's arrival on the member's clock; with
// the answer's own transmit time and arrival they are the four times of
// an NTP exchange, so the asker measures the member's clock against its
// own (ClusterAnswer.Offset, within ±Delay/2) with the kernel's receive
// stamps, whatever the member's daemon.
//
// Status frames are the node's own: they pass configuration agreement's
// refusals (a member whose configuration differs, or that stepped back,
// still answers, and its row says how it differs), but nothing before
// them: a query is taken only from a member, from its own address, with
// the cluster's ID and (with keys) a MAC that verifies and a sequence
// number not seen before. A member with another key or cluster name
// cannot take the query nor answer it: the driver shows what agreement's
// evidence says of it instead. Not an amplifier: a query is padded to
// wire.StatusQueryLen, so that no answer is twice its size; an answer goes
// to the member's listed address, never to where the query came from;
// each member is answered at most statusAnswerBurst (4) times at once,
// then once per statusAnswerEvery (250 ms), more is refused and counted
// ("status_limited"); and a node asks at that same pace, with at most
// MaxClusterQueries waiting, so that a row is never missing only because
// the member refused to answer so often. An answer that answers no query
// of this node to that member, or a second one, is refused
// ("status_unsolicited"). A node of an older build drops a query as
// unknown_kind: its row says it did not answer.
//
// # Every member's trace
//
// The live page (`X web`) draws every member's events. A node asks a
// member for the next piece of its trace window, one query per chunk
// (tracewin.go):
//
//	id, err := n.QueryTrace(now, member, wire.TraceQuery{Window: w, After: a, From: f})
//	...                              // the chunk (KindTraceChunk) comes as a frame
//	n.TraceNews()                    // queries answered since the last call
//	c, ok := n.TraceAnswer(id)       // the chunk: Window, Offset, End, Data
//	n.EndTraceQuery(id)
//
// The member's driver keeps the window (Config.TraceWindow: on at the
// first query, extended by each, off when nobody asks; the node only
// passes the query on and sends the chunk back). Trace frames are the
// node's own, checked like status frames: only from a member, from its own
// address, with (with keys) a MAC that verifies and a fresh sequence
// number. Not an amplifier: a query is padded to wire.TraceQueryLen (512)
// and a chunk is at most wire.MaxTraceChunkLen (992), so no answer is twice
// its query, and it goes to the member's listed address; each member is
// answered at most traceAnswerBurst (32) chunks at once, then one per
// traceAnswerEvery (10 ms), more refused and counted ("trace_limited"); a
// node asks each member at that pace, with at most MaxTraceQueries
// waiting. A query the driver cannot answer is refused
// ("trace_unavailable"), a chunk that answers no query of this node to
// that member, or a second one, too ("trace_unsolicited"). Trace frames
// are never themselves traced (each chunk sent would add an event to the
// window it pages through), and carry no vector timestamp (which grows with
// the member list, and would make a chunk more than twice its query). A node of an older build drops a query as
// unknown_kind: the page says the member is not answering traces.
package node
