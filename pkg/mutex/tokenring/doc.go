// Package tokenring is mutexd's mutual exclusion: a token ring per named
// lock (the course notes' token ring), as a sans-IO core.Core, built to keep
// its promise through crashes, message loss, pauses and restarts.
//
// # The ring
//
// The members, ordered by ID, form a ring. Each lock has a token; only the
// member holding it may grant the lock, to one of its local requests at a
// time, and every grant carries a fence number and a lease. Requests at a
// member are served in arrival order; when other members wait, a member
// serves one request per visit of the token and passes it on, so a waiting
// member is bypassed at most N-1 times once its want is known where the
// token is. A want is a datagram: when every waiting member's want is
// lost on its way to the holder, the holder, knowing of nobody waiting,
// serves its own client again and again until a waiter's locate reaches
// it (a waiter locates every loss timeout), and passes the token on after
// its current grant (TestSimLossyMemberBypassUnheardWants).
//
// The ring does not spin. A member with a request and no token broadcasts a
// want (RingProbe, want); the token remembers who wants it (the member
// holding it adds itself, and every member it passes adds the wants it
// heard since the token was sent to it: a want whose datagram to the next
// holder was lost reaches it that way, TestSimTokenCarriesWants) and moves
// from member to successor until nobody wants it, then stays where it is.
// A waiting member without the token looks for it every loss timeout
// (RingProbe, locate), and the holder takes its want again; a member
// without the token forgets a want more than two loss timeouts old, and,
// when the token comes, a want the token says was served, or an
// unnumbered one (a locate's) heard before the token could have left its
// sender. A numbered want the token has not served stands: the sender may
// have missed it (a lossy link).
//
// The wants recorded from prepares and locates carry no number (a
// prepare's Generation is its proposal; a locate is sent unnumbered on
// purpose, below), and the age rule alone could keep one the token had
// served: a want heard less than an acknowledgement timeout before the
// token came stands. That carried a fresh ring's token round the ring to
// its first holder, served (a member that promised the holder's prepare
// got the token milliseconds later: N-1 passes more). So a prepare's want
// names the generation proposed, and a token of that generation drops it
// whatever its age: only the proposer made that token, and it served
// itself before passing it on. A locate's cannot do the same harm twice:
// it is recorded only where the token is or has just been (or, by a
// member that makes a new token, taken into it: below), the token
// drops it once older than an acknowledgement timeout, and the member
// locates only after waiting a loss timeout, so at most one pass to a
// member served meanwhile, when the token came back round within that
// timeout. Numbering it would cost more than that pass: a Served number
// forged ahead of a member's clock would drop every locate of that member
// too, and the locate is what makes such a forgery cost one loss timeout,
// not an hour (TestForgedServedNumbers). Nor can either skip a member
// that still waits: a dropped want of a member that waits is in the
// token's wants, or is found again by the member's next locate.
// Wants are numbered as Suzuki-Kasami's requests are: each member numbers
// its wants in increasing order (its clock's milliseconds, or one more),
// and the token carries, per member, the number of its last want served,
// which only that member sets (when it grants, or passes the token on with
// nothing waiting); a member drops an overheard want the token says was
// served, however recent. So the lock moves to the next member in one pass,
// not a rotation, even when the entries follow each other within
// milliseconds. An idle ring sends only two
// heartbeats per member per second (watch.go: each member watches its
// neighbours); an uncontended acquire at the member that last held the
// lock costs no message at all, anywhere else at most one rotation.
//
// A token moves on the members' TCP link to the successor, which
// acknowledges it. A successor that is down (silent for DeadAfter), that
// missed a heartbeat (a watched neighbour silent for a heartbeat and a
// half: missedBeat), or that failed to acknowledge is skipped; a skipped
// member rejoins as soon as it is heard again.
//
// # Generations, and why two holders cannot happen
//
// A token carries a generation, owned like a bully term (round<<32 | the
// ID of the member that created it). Each member remembers, durably, the
// highest generation it has promised or seen for each lock, and refuses
// any token, check or proposal below it. A new generation is always of a
// new round: fences number grants within a round. The safety argument has three
// parts.
//
// Creating a token. A member that suspects the token lost first asks
// everyone whether it is there (RingProbe, locate): if anyone holds it, or
// has just sent it, nothing happens. Otherwise it proposes a new generation
// above every one it knows (RingProbe, prepare); a member that holds no
// token and promised nothing newer promises, durably, to refuse everything
// older, and answers. With a majority of promises the proposer creates the
// token. Any two majorities meet, so every new generation is above every
// generation that was ever created, and its round is above theirs.
//
// Granting. The member holding the token grants or renews a lease only
// after a majority answered a check of its generation (RingProbe, check)
// sent at most ConfirmWindow earlier (and at most MaxLease/2: confirmFor):
// none of them had promised anything newer. A lease is at most MaxLease, and it ends within MaxLease of the
// sending of the check it was granted or renewed on: one granted on a
// check d old is counted from d earlier when it asks for more than
// MaxLease-d (the default lease, MaxLease, is shorter by the check's age:
// under a millisecond when the grant waited for its check, at most the
// window when it came on a recent one).
//
// Waiting. A new token does not grant during its Hold: MaxLease, padded
// for clock rate differences and message delay, from the moment its
// majority of promises was complete. Any check that an old token's member
// passed met a member of the new majority before that member promised
// (afterwards the check fails), so it was sent before the promise, and
// every lease granted on it ends within MaxLease of its sending: before
// the new token's first grant. When every member promised (none could hold
// an old token) the Hold is zero.
//
// The same argument gives a shorter wait: each promiser says how long a
// lease may still run on the last check it answered before it promised
// (MaxLease from that answer, padded), and the token waits for the longest
// of these when that is sooner than the Hold, each counted from when its
// answer came (not from the end of the prepare, which waits for the silent
// members' answers: a dead one's a locate's span). A check an old holder
// passed met one of the promisers, before its last answer, and the check
// was sent before that answer: every lease on it ends within MaxLease of
// the answer. It met one of every majority of the promisers, so the token
// waits only for the majority whose bounds end first: a promiser that
// answered the holder's last check late (its loop was late; it counts
// from its answer) does not hold the token back. A promiser that did not
// say (an older build) counts as the whole Hold, a bound for every check
// a majority passed: each met the first majority of promises before it
// was complete. A member that restarted, or that has no entry for the lock,
// counts its answers as of its start (or the last answer it gave about a
// lock it had no entry for). A holder cut off from the majority, or
// paused, or killed, is so replaced within a lease of its last renewal
// (about 3.03 s with the defaults, counted from the renewal's check) rather
// than of the new majority.
//
// So a regenerated token cannot coexist with the old holder's lease: the
// old lease ends at most MaxLease (on the old holder's clock) after a
// check that some promiser answered before promising, and the new token's
// first grant comes at least MaxLease (on the promiser's and then the
// proposer's clock, each padded for MaxDriftPPM, plus HoldMargin) after
// that answer. Counting the lease from the check, not from the grant, is
// what lets the wait leave out the confirm window (it waited ConfirmWindow
// + MaxLease before: 250 ms more after a holder's SIGKILL).
// TestSimGrantOnAnOldCheckEndsWithIt has a grant on a check nearly a
// window old overlap the next holder's when counted from the grant.
//
// A promise confirms nothing: no token grants on its promises alone, and
// its first grant waits for a check even when every member promised (the
// Hold is then zero: one round trip). The promise is a Paxos phase-1
// answer, and like one it commits nothing; were it a confirmation a lease
// could be granted on, every member that promised a prepare which then
// failed (two that crossed) would have to report it to the next proposer,
// and the next token would wait a whole Hold for leases nobody granted.
//
// Two generations of one round are never both made: a member promises
// only a round above every generation it knows (or the same prepare
// again). And a waiting member whose locate found no token does not
// propose when a rival's prepare may have run meanwhile (it promised one,
// or an answer named a newer generation): that rival's token would be
// doomed at its first check, and the lock would wait a second Hold. A
// prepare that finds an old token but has its majority makes its token
// anyway: the old one cannot pass a check any more, and the Hold covers
// what it granted.
//
// So at most one lease of a lock is valid at any real instant, whatever the
// network does (loss, delay, duplication, reordering), provided the
// members' clocks run at rates within MaxDriftPPM of each other. This
// holds across partitions too: the side without a majority can neither
// create a token nor pass a check, so a holder cut off from the majority
// cannot renew, and its lease runs out before the majority's token grants.
// What a partition costs is availability: the minority waits.
//
// Fences are round<<40 | a count of grants within the generation: they grow
// strictly with every grant, across generations (rounds only grow), and
// need no disk write per grant. A resource that refuses writes with a
// fence lower than one it has seen is safe even against a client that
// keeps running after its lease (a paused process, a lost connection).
//
// Leases are a duration on the granting member's clock; the client (mutexd
// lock) counts its own from before its request, so it gives up first.
//
// # Loss and repair
//
//	holder crashed, token dropped:   a waiting member's want goes unanswered
//	                                 for LossTimeout -> locate -> prepare ->
//	                                 new generation, Hold, grants resume;
//	                                 the dead holder, silent by then for
//	                                 two heartbeats or more, is passed by
//	successor dead, pass unacked:    the sender waits AckTimeout, sends the
//	                                 token again and locates; at the next
//	                                 AckTimeout, if nothing was heard from
//	                                 the successor since the pass, it is
//	                                 skipped (the locate decides the rest)
//	successor slow (lossy link):     heard, so waited for (up to DeadAfter):
//	                                 TCP is still resending the token, and a
//	                                 new one would doom it
//	holder paused past its lease:    its lease ran out on its own clock; the
//	                                 others regenerate and wait out the Hold;
//	                                 when it wakes, its checks fail and its
//	                                 token is refused everywhere
//
// A locate decides that the token is lost only when a majority answered,
// nobody has the token or passed it a moment ago, no member (this one
// included) confirmed a check within a third of a lease (a live holder
// whose answers were lost), no rival may be proposing, and the maker of
// the newest generation either answered or cannot still be waiting out
// its Hold with it: a new token checks nothing during its Hold, so the
// sign of a live holder is missing by design, and the locator looks again
// while that Hold (counted from when this member heard of the generation)
// outlasts its next look and a locate and a prepare after it. A
// promiser that waits sends the proposer its want. A maker that answers
// "no token" while the newest generation it knows is its own is taken for
// one that did not answer: its prepare may still run (for many probe
// timeouts on a busy host), and it may have made the token since. Members
// that lost the token together look for it together, and two prepares
// that cross are both refused (each member promises one generation a
// round): both back off and look again, which costs the lock a second or
// so (before promises stopped counting as confirmations, a whole Hold).
// So a member that heard a locate from a lower ID while its own ran leaves
// the proposing to it, and waits until that one's prepare has had time to
// arrive (then it has promised it, and backs off as from any rival). So
// on a lossy link the token is rarely made anew, and a waiting member is
// bypassed at most N-1 times between regenerations (a new token knows
// only who waited for the old one as its maker heard it), once its want is
// known where the token is (above).
//
// A new token carries the wants its maker knows: the wants it heard, a
// promiser's that waits (sent with its promise), and the members it heard
// look for the token, all as recent as a want may be (two loss timeouts),
// members of the ring only, never the maker. A locate is a want too: a
// member locates only while it waits, or while a token it passed is
// unacknowledged (that one is passed the token once, and passes it on).
// Without the locates, a waiter whose want datagrams to the maker were
// lost waited for its next locate, a loss timeout, while the maker served
// its own client again (TestSimRepairedTokenCarriesWants). One forged in
// a member's name costs a pass, as a forged want does.
//
// # A busy host
//
// On a loaded host every loop runs late, and the wall-clock waits above
// overshoot: a member's locate and prepare take many probe timeouts, and
// a loop that gets the CPU back runs its timer before its socket's reader
// (the Go scheduler runs expired timers first), so it decides on timeouts
// with the answers unread. So a Tick that comes late, or that ends a probe
// or starts a prepare after the loop had not run for a while, is put off
// for a millisecond (counter ticks_late) so that the frames waiting for it
// count first; and the waits for another member's next step (the deferral
// to a lower locator's prepare, the window in which a promise just made
// marks a rival) grow by how late the loops ran lately: this member's own
// Ticks, and the delays of the answers to its probes (lateness). A lab
// trial at load 13 took 8.13 s to recover with prepares crossed at both
// askers; the simulator's busy host (sim.SetLate) reproduces it
// (TestSimMakerKilledOnABusyHost).
//
// # A loop that reads late
//
// A grant or renewal is made at a reading of the clock (a Tick, or a
// client's call), never on a frame's receive stamp. The frame that
// completes one (the token's arrival on a recent check, a check's last
// answer, a vouch) is stepped with the stamp of its arrival, and a loop
// that read it late (the daemon stopped with the frame in its kernel, a
// host that did not run it) would report, judged on that stamp, a grant
// whose lease, counted from its check, had ended by the member's clock:
// a client told it holds a lock with no time left, about MaxLease less
// the check's age late (2.75 s at the defaults). So a grant or renewal
// that a Step finds due waits for the next reading (Deadline asks for a
// Tick at once; the daemon makes it in the same pass), where every
// condition is judged again: the check must still be within the confirm
// window, and the lease counts from the reading (grantFrom). A check too
// old by then is made again, the token staying here with its fence
// unused: the ring loses nothing by it, and its safety never rested on
// the late grant (a new token made meanwhile has made the old token's
// check fail, and the new one waits out every lease the old one could
// give, whoever reports it). The grant whose lease, counted on the stamp,
// had ended by the reading is counted (grants_late) and said
// (mutex.EventGrantLate, WARN at most once a minute). A renewal is judged
// at the stamp of the frame that completed its check, not at the reading:
// one whose answers came before the old lease's end is made on a check
// still within the window at the reading, the renewed lease running past
// it (the token never left; grantFrom caps it as ever). Else, if the old
// lease is over by the reading, it is refused, counted (renewals_late)
// and said (mutex.EventRenewalLate, sharing the WARN limit, with its
// cause: the answers came in time and the loop read them late, or they
// came after the old lease's end, naming the member whose answer
// completed the check), and the lease, ended, is lost; while the old
// lease runs, the renewal is checked again, as one asked at the reading.
// Every renewal lost with its lease is said so, exactly once, at the
// reading that ends the lease (or the client's call that finds it over):
// one whose answers came after the old lease's end with the check still
// fresh at the reading (answers_late: before, it was lost as lock_lost
// expired alone), and one whose check had no majority of answers by then
// (answers_late, naming the members still silent; likewise unsaid
// before) (TestRenewalLateSaysWhy). A grant read a little late, its lease
// not over, is checked again silently, as any grant on an old check.
//
// # Frames that lie
//
// A member gone wrong, or anyone on the LAN of a cluster run without a key,
// can put any value in a frame; the ring believes none at face value:
//
//   - Generations are owned epochs (pkg/epoch): a frame may move this
//     member's knowledge at most GenerationBurst rounds ahead at once, and
//     then only at the ring's own pace of regenerations, shared by the
//     whole table; the last GenerationBurst rounds of the 24-bit space are
//     never used. One prepare can no longer promise a lock into the last
//     round, where no generation is left to create.
//   - In a cluster without a key (Config.TrustSenders false), a token is
//     used, to grant or to pass on, only once the member it came from
//     vouches for it (vouching.go): a copy of a live token forged in that
//     member's name cannot grant its fence a second time. With a key the
//     MAC already keeps outsiders from forging one, and handoffs skip the
//     round trip. A token's
//     fence must be of its generation's round, its hold at most a whole
//     Hold; wants name members only. A served want number for another
//     member more than an hour ahead of this member's clock is refused
//     (counted), one for this member beyond its last want is replaced by
//     its own: a forged number costs the member it names at most a loss
//     timeout, once (its locate is a want that no number drops).
//   - The lock table cannot be filled by another member (table.go): only a
//     request, a token or a prepare makes an entry, each member's frames at
//     most their share, and idle entries are reclaimed, their promises kept
//     in a floor that is persisted with them.
//
// Promises stay pending until the driver confirms them on disk
// (core.Durable): a member whose state directory is full or read-only
// sends nothing that depends on what it could not write, and hands its
// clients no outcome of a Ready whose promise is not on disk
// (mutexcount.Hold: a ring of one sends nothing, so only its grants, on a
// generation a crash would forget, could leave).
//
// # Use
//
// The ring is a mutex.Algorithm: drive it like any core (Step, and Tick
// when Deadline says so: a heartbeat, a timeout, a lease's end, a Hold),
// and call Acquire, Renew and Release on the driver's goroutine. Their
// answers are typed outcomes (mutex.Granted with fence, lease and the
// token's generation as Epoch; mutex.Renewed; mutex.Lost with a reason;
// mutex.Released), drained with Outcomes after the Ready of the call or of
// a later Step or Tick; each is also an event (lock_granted, lock_renewed,
// lock_lost, lock_released) for logs and hooks. The requests themselves
// are kept by a mutex.Table; locate, prepare, check and vouch are
// pkg/quorum probes counted with a majority Tally. Report is mutex.Status
// with the ring's Detail (majority, floor, generation credit) and a
// LockDetail per lock (where the token is, its generation, the wants).
// Ready.State is the lock table's promised generations; persist it before
// sending. Factory builds a ring from a driver's core.Env and mutex.Options.
//
// Failure detection is pkg/liveness's Detector with DeadAfter as its
// timeout, started at the core's first Tick or Step (every member is
// presumed alive until then, and for DeadAfter after); any frame from a
// member is its sign of life. Only the members a member watches (its
// neighbours, and beyond one that is down: watch.go) get its heartbeats
// and can be taken for down; the others are presumed up until a token
// passed to one is not acknowledged. After a stall of this member's own loop the
// Detector gives the others half of DeadAfter more before taking them for
// down (its frames may be waiting unread). Skipping a successor that did
// not acknowledge a token is the ring's own, on top of it.
package tokenring
