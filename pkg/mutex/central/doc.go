// Package central is mutexd's central coordinator (the course notes' centralized
// algorithm): one elected member keeps a FIFO queue per lock and grants it,
// exclusive or shared, as a sans-IO core built to keep its promise through
// crashes of the coordinator and of members, pauses, partitions and loss.
//
// # The notes' algorithm
//
//	member                 coordinator
//	  | -- request -------------> |   lock free: grant at once;
//	  | <------------- grant ---- |   held: queue the request (FIFO)
//	  |   ... critical section ...|
//	  | -- release -------------> |   grant the head of the queue
//
// Three messages per entry (none at the coordinator itself), and two
// between one holder's release and the next one's grant. A lock is
// exclusive or shared (the notes' shared locks): the leading run of shared requests is
// granted together; a waiting exclusive request stops later shared ones
// from joining (no writer starvation), and the queue is FIFO otherwise.
//
// # Readers share one fence
//
// A fenced resource keeps the highest fence it has seen and refuses a
// lower one (mutex's doc). So readers that hold a lock together carry the
// same fence: the first reader granted while the lock is free or held
// exclusive takes a new fence, and every reader granted while some reader
// of this term still holds it takes that one. Were each reader given its
// own, the resource would refuse the lower of two readers once the other
// had used it; and since a batch's grants leave together but arrive a link
// apart, a reader with the higher fence can use the resource and release
// before a lower fence of its batch even arrives
// (TestReadersGrantedTogetherShareAFence delays one grant by 100 ms and
// fails with a fence per reader). The rule the simulator's oracle checks
// (pkg/mutex/internal/mutextest) is what such a resource needs: a grant's fence is
// above that of every grant of the lock that ended before it began, equal
// allowed only between two readers; readers whose grants overlap share
// their fence; no writer's fence is given twice. A writer's fence is above
// every reader's before it, so a reader that outlived its lease (a pause)
// is refused once the writer has used the resource; a reader's fence is
// above every writer's before it, for the same reason. The alternative, a
// fence per reader with the next reader or writer held back until every
// grant of the batch is acknowledged, costs a round trip per batch and
// still leaves two readers' fences apart. Readers re-announced from an
// older term (a takeover) are not joined: their fence is of that term,
// below any this coordinator can give; new readers wait until they end.
//
// # The coordinator is elected
//
// The coordinator is the leader of an election (any elect.Elector:
// Config.Election; by default bully with a heartbeat every BeatInterval and
// a leader timeout of DeadAfter: Config.BullyConfig), run inside this
// core like Berkeley's master election (its frames are stepped into it, its
// state kept inside this core's). A member follows the leader of the
// newest term it knows, and only it: grants, renewals, refusals and beats
// from anyone else, or of another term, are refused and counted. The
// default election is sticky (bully.Config.Sticky): a member that starts
// or comes back follows a sitting coordinator even if it outranks it,
// since every change of coordinator costs a wait (below). Plain bully had
// a coordinator SIGKILLed and restarted by systemd two seconds later
// take the coordination back from its successor, and wait a lease from
// its own start: 6-7 s without a grant. So the coordinator is whoever
// claimed first when nobody led (at a cluster's start, often not the
// highest ID), and stays until it fails.
//
// # Leases, counted from before the grant
//
// Every grant carries a lease. A member counts it from when it sent the
// frame the grant echoes (a stamp of its own: its request, or its latest
// sync), never from the grant's arrival; the coordinator counts it from its
// own sending, padded by the clocks' drift bound. A grant slow on the wire
// can only shorten the lease at the member, so it always ends first there.
// Renewals go through the member to the coordinator (CentralRenew, answered
// with the renewal's own stamp echoed). The member's client (mutexd lock)
// counts its lease from before its request and renewals, so it gives up
// (and kills its command) before the member's lease ends, and the member's
// before the coordinator's.
//
// # Support: no two coordinators grant at once
//
// Bully alone can elect two leaders (each side of a partition elects
// one). So the coordinator grants and renews only on a majority's support:
// every BeatInterval (1 s by default, the election's heartbeat too) it
// sends a beat; each member that follows it answers with a sync echoing
// the beat, and has backed it from then on (Core.backedAt: its last
// answer). A member answers only the coordinator it follows, and follows
// only the newest term it knows. The coordinator's support time S is the
// sending of the newest beat a majority (itself included, at every
// instant) answered. It grants or renews only while S is at most
// ConfirmWindow old (5/4 of a beat; older, it calls for support at once
// and grants on the answers), and cuts every lease so that it ends, as
// the member counts it, within MaxLease + LeaseSlack (half a beat) of S: a
// lease asked for l, for a member whose echoed frame arrived at h, is
// min(l, S + MaxLease + LeaseSlack - h); the member counts it from before
// h. So
//
//	(L) every lease a coordinator grants or renews ends by S + MaxLease +
//	    LeaseSlack (on any clock, with the drift padding), for an S that a
//	    majority backed: each of its members answered a beat sent at S or
//	    later, after it was sent (the coordinator backs itself throughout).
//
// The price is up to ConfirmWindow - LeaseSlack (3/4 of a beat) of a lease
// (granted 2.25-3 s of a 3 s one), which the client sees in lease_left_ms
// and renews before (mutexd lock renews at a third of what is left). Only
// a grant pays it, to keep an entry at three messages and one round trip;
// a renewal that would be cut is parked instead, a beat called at once,
// and answered uncut when a majority answered it (cut only if the answers
// take an eighth of a beat), so a holder keeps its whole lease and its
// renewals take the periodic beats' place. Nothing else flows while idle:
// the beat, its answers and the election's heartbeat, one each a second
// per member.
//
// # Takeover: the queue, the fences, and the wait
//
// A member that starts following a new coordinator sends it a sync at
// once: every request it has, waiting ones and held ones (with the grant's
// fence and the lease left), and how long ago it last backed a
// coordinator (its support age: its last answer to a beat, the end of its
// own last term as coordinator, or its start, whichever is latest). That
// is the re-announcement the new coordinator rebuilds its queue from:
// waiting requests are queued in the order they arrive, held grants of
// older terms are installed as holders until their lease ends. Syncs keep
// coming, one per beat, and reconcile the queue continuously: a lost
// request is queued; a grant the sync shows as not arrived is made anew
// with a newer fence (the member refuses a grant whose echo predates a
// sync that listed the request as waiting, so the older one can never
// arrive after the newer one, or after a later grant of the lock, ended);
// a lost release is noticed (a request up to the member's last one that it
// no longer lists is gone).
//
// Fences are derived from the coordinator's term: round<<40 | rank<<32 |
// count, where round is the term's round, rank the term owner's index
// among the (sorted) member IDs, and count numbers the grants within the
// term from 1. Terms are owned epochs ordered by (round, owner), and rank
// orders owners exactly as their IDs do, so every fence of a term is above
// every fence of any older term, on every member, with no disk write per
// grant and no need to learn the old coordinator's last fence (which died
// with it). A member coordinates a term in one run only: it persists the
// last term it coordinated before granting in it, and never coordinates it
// again after a restart (its count is lost; the election claims a newer
// term at every start anyway). If the election wavers within a run and
// makes it lead the same term again, it resumes numbering where it stopped,
// and waits as a new coordinator does (it backed itself until it
// stopped). Why not "the highest fence re-announced, plus one"? A grant
// whose holder crashed before re-announcing it would be forgotten, and its
// fence given twice.
//
// The new coordinator must not grant while a lease an older coordinator
// granted may still run. Once a majority of the members (itself included)
// has joined its term, it takes B, the latest instant at which a member of
// that majority backed an older coordinator (the instant each one's sync
// reported, shrunk for the clocks' rates; its own backedAt), and grants
// nothing before B + MaxLease + LeaseSlack (padded by 2 x MaxDriftPPM,
// plus HoldMargin): Hold is that wait's longest, from the moment the
// majority joined. Once a majority of the other members has joined, the
// majority-th earliest of their instants will do as well (it is the
// latest of some majority of the others, which meets every majority that
// backed an older coordinator in a member other than this one: such a
// majority holds at most a majority less one of the others), and the
// earlier of the two is taken: a coordinator that restarted (its own
// backedAt is its start) is not held a lease from its restart. A member's
// instant is what it backed before it joined the term, in every sync of
// the term (not its answers to this coordinator's beats since): a first
// sync lost (a restarted coordinator refuses its peers' frames of
// pre-restart epochs until they move to a new series) does not move it
// to the coordinator's next beat (4.5 s after its start, where 2.5-3.5 s
// is the rule). Why that is enough. Take any lease an older coordinator
// O granted or renewed, on support S: by (L) it ends by S + MaxLease +
// LeaseSlack. The majority M_O whose answers made S and the new majority
// M share a member X (two majorities of the same members intersect). X
// answered a beat O sent at S or later, after receiving it, while it still
// followed O; it joined the new term later, and a member never answers the
// beat of a term older than the newest it knows, so it answered nothing
// of O's after joining, and its backedAt when it sent its joining sync is
// after S. The new coordinator reads that instant as no earlier than it
// was (the sync was sent before it arrived; the age is shrunk for drift),
// so B >= S and the lease ended by B + MaxLease + LeaseSlack, before the
// first grant. A member that restarted cannot remember what it answered:
// its backedAt is its start, after anything its old run answered. If X is
// O itself (it counts its own support at every instant it coordinated),
// its backedAt is when it stopped coordinating (or its start, after a
// crash): after S too. This covers every older term, not only the last: X
// answers one coordinator at a time, and backedAt is its last answer to
// any. A majority is required to grant at all, so a coordinator cut off in
// a minority stops granting and renewing within ConfirmWindow, and its
// holders' leases run out within MaxLease + LeaseSlack of its last
// support.
//
// So a coordinator SIGKILLed is replaced by bully within DeadAfter (2.5
// beats, the election's leader timeout) and the new one grants MaxLease +
// LeaseSlack after the last beat the members answered: within a lease and
// half a beat of the crash (2.5-3.5 s with the defaults, 3 s on
// average), whatever the election took, where counting from the election
// added it and a confirm window to every takeover.
//
// The election learns of a SIGKILLed coordinator sooner than its timeout
// when the driver hands the core hints (Core.Hint, core.Hint): the dead
// daemon's kernel closes its sockets at once, and every member's TCP link
// to it says so a link delay later. The election (bully with
// Config.HintProbe) then probes the coordinator bully.HintProbes times,
// HintProbe apart, and elects a successor if none is answered: 200 ms
// after the crash with the defaults, instead of DeadAfter after its last
// heartbeat. A hint is no evidence (anyone can forge a TCP reset): a
// live coordinator answers the first probe and nothing follows, and a
// hint shortens no wait for leases (TestCoordinatorCrashHint,
// TestForgedHintLiveCoordinator).
//
// The wait is skipped when every member joined the term and none started
// less than a lease ago: then every old lease was re-announced and is in
// the queue as a holder (a member refuses grants of older terms once it
// joined), and nobody can hold one it could not re-announce. After the
// wait, a re-announced grant of an older term is ignored (it has ended).
//
// That skip counts on every member re-announcing every lease its clients
// may still hold, so a member drops a grant on a coordinator's word only
// when that coordinator knows what it holds: a renewal is refused
// (CentralRefuse, not held: the member reports the lock lost and lists it
// no more) only by a coordinator that has read the member's sync of its
// term. Without the sync, the renewal of a grant it does not know is left
// unanswered (renewals_before_sync) and a beat is called, which the
// member answers with a sync; the member asks again a quarter beat
// later. The sync can be missing while a later frame arrives: the driver
// withholds the messages of a Ready whose promise it could not write (a
// full or failing disk; the election's new term is such a promise), and
// the next Ready, written, carries the renewal alone (or a broken link
// lost the sync). Refused then, the member dropped a lease that its
// client, told of the loss only later, still used until the lease's end;
// the next coordinator heard every member re-announce, skipped its wait,
// and granted the lock inside that lease (TestOracleDiskFaults, seed 53:
// 200 ms after the takeover, 320 ms before the lease ended). Once the
// sync is read, the coordinator knows every lease the member holds: it
// follows this term only, and takes no older term's grant from now on.
// So a re-announced hold is taken even over the queue's limits (its
// member's share filled by its own waiting requests, or the queue by the
// new coordinator's client: two holders in a review,
// TestReannouncedHoldOverQueueLimit), and so is one whose lease is longer
// than this coordinator's MaxLease (members configured apart: mutexd's
// configuration agreement refuses that, but a --lease changed one host
// at a time runs so): it is kept until its lease ends as the member
// counts it (its left, padded), whatever this coordinator's maximum, and
// renewed for at most that maximum, which the member takes as a cut
// lease. Dropped (sync_bad_lease), the lock counted as free, another
// member was granted it inside the lease and the holder's renewal was
// refused (TestReannouncedHoldLongerLease). The coordinator says so at
// WARN (EventLeaseAboveMax, once per member and term), for what it
// cannot cover: a lease that long nobody re-announces (its member cut
// off), which its Hold, counted with its own MaxLease, does not wait
// out. A waiting request re-announced with a lease above MaxLease is
// refused, as the request itself is.
//
// No longer than any member's --lease, though (Config.MaxPeerLease): a
// member asks at most its own, so a longer one was granted to nobody.
// One forged sync (without a key) re-announcing a hold for an hour, the
// most a lease may be, held its lock for that hour
// (TestForgedHoldHourLease). It is kept for MaxPeerLease only, and said
// at WARN (EventLeaseAboveCluster, naming the member and the missing
// key). mutexd leaves MaxPeerLease zero: its own --lease then bounds the
// holds of a member whose configuration agreement compared and matched
// (the node marks its frames, core.Message.Checked; agreement refuses,
// by name, every frame of a member whose --lease differs), and nobody
// else's. A member admitted unchecked (an older build, which announces
// no configuration) may run a longer --lease: cut to this one's, its
// real hold ended early and its lock was granted inside it (two holders,
// TestUncheckedLongerLease), so its hold is kept whole, up to
// mutex.MaxLeaseLimit, and said at WARN (EventLeaseAboveMax). A cluster
// whose members run with different leases and no agreement sets the
// longest, which then bounds every member, and keeps the mismatch's hold
// whole (TestReannouncedHoldLongerLease).
//
// Holds re-announced over the limits are capped per member, every
// incarnation's entries together, at its share and one sync's entries:
// a real member lists at most one sync's holds per incarnation, which
// changes only at a restart. Without a key, a forger naming a new
// incarnation in each sync added a sync's holds each time (a new
// incarnation drops only the older one's waiting requests: the grants
// of a restarted member's old run still run with its clients): 20,480
// locks from 40 syncs (TestForgedHoldsCapped). Over the cap a hold is
// not kept, and not dropped either: a cap that refused it (reverted
// once) let a forger's syncs that came first fill the member's count;
// the real member's hold was left out, the lock counted free, the Hold
// skipped (every member but the dead coordinator had joined, its own
// clients quiet), and the lock granted inside the real lease (two
// holders, TestForgedHoldsBeforeRealHold). Two holders
// outrank memory, so a hold not kept stops every grant instead: no lock
// is granted before it would end (its lease, at most the member's bound
// above) nor before the Hold has run whole (it is skipped no more in
// this term). Whichever of the over-cap holds was real then ends before
// its lock is granted again: every lease an older coordinator granted
// ends within the Hold (above), and a longer one, up to the bound,
// within the stop. (That is all the cap protects: without a key a forger
// speaking as a member can still cause two holders, see Frames that
// lie.) Its member's renewal of it is left
// unanswered while the Hold runs, not refused: the lease runs to its
// end, as every older term's lease does in a Hold, and nobody else holds
// the lock meanwhile. The table then holds at most MaxQueue / 2 plus one
// sync's entries per other member, and a forger costs the cluster its
// grants for one lease after the Hold, no more (up to
// mutex.MaxLeaseLimit in the name of a member admitted unchecked); the
// coordinator says so at WARN (EventHoldsOverCap: the member, the key,
// and until when it grants nothing, said again if a later hold moves
// that), its status says GRANTING NOTHING until then, and its beats
// count the stop in the hold they announce, so that the followers'
// status says the coordinator grants nothing until then instead of
// "granting" (a beat does not say why: the coordinator's status and log
// do).
//
// A member whose frames are withheld so (its own state writes failing)
// says it, not the link, when a renewal goes unanswered
// (EventRenewalUnanswered): the core learns of each failed write from
// Advance.
//
// Nor may it renew a grant of an older term while it waits (its own
// client's, re-announced to itself, or a member's): the older coordinator
// may still be supported (its majority's answers are up to ConfirmWindow
// old), and the holder's link to it may be all that broke. It then gives
// the lock away when the lease ends by its own count, knowing nothing of
// the renewal. That is what a holder cut off from its coordinator alone
// did: its election, no longer hearing the leader, claimed a term that the
// others joined, and its member renewed its own client's lease at once;
// the older coordinator granted its own client 0.5 s later (the lab
// bench's link-cut row; TestHolderCoordinatorLinkCut). Such a renewal is
// held until the wait ends (renewals_held), when the older coordinator
// can grant no more, and the lease runs on as it was meanwhile.
//
// # Failures
//
//	coordinator crashes:        the election picks another member; every
//	                            member re-sends what it waits for and
//	                            holds; the wait (a lease from the last
//	                            beat answered); grants resume with fences
//	                            of the new term
//	member crashes holding:     its lease ends at the coordinator, which
//	                            then grants the next in the queue; its
//	                            waiting requests are dropped after
//	                            DeadAfter without a sync
//	member restarts:            a new incarnation (persisted, raised at
//	                            every start): the coordinator drops the
//	                            old run's waiting requests at its first
//	                            frame, and keeps the old run's grants until
//	                            their leases end
//	coordinator paused:         its supports go stale: it neither grants
//	                            nor renews; the others elect a new one
//	                            (which waits out a lease from their last
//	                            answer to it); when it wakes it follows
//	                            the newer term
//	partition:                  the side with a majority goes on after the
//	                            wait; the other grants nothing
//	loss, duplication:          member frames travel on the TCP link in
//	                            order; every sync repairs what was lost
//
// A lease is the protection while everything works; the fence is the
// protection when a holder does not know it lost its lock (a pause longer
// than its lease): the resource must refuse a fence below one it has seen.
//
// # Frames that lie
//
// Every field is read as an attacker would write it. Grants must come from
// the coordinator followed, in its term, for this member's incarnation,
// with a fence of that term, the lease that was asked, and an echo of a
// stamp this member really sent; renewals must name the grant's fence.
// A sync cannot install a holder with a fence of the current term it was
// not granted, nor a lease longer than its member may hold (MaxPeerLease,
// or this member's --lease for a member checked by agreement: kept for
// that long) or with more left than the longer of its length and
// MaxLease, nor more holds than the member's cap (every grant waits
// instead, above), nor more waiting requests than the member's share of
// the queue (MaxQueue/2 split among the other members); absurd counts are
// refused by the decoder before anything is allocated.
// Everything refused is counted ("rejected_REASON", "sync_*"), never a
// panic.
//
// What a member may say of its own locks, though, a forger may say in its
// name without a key, and that can make two holders: a forged release
// (naming the grant's fence, which anyone on the LAN reads off the
// grant) frees a lock its holder's client still holds; to a new
// coordinator, a
// forged sync naming the member's real incarnation and listing nothing
// drops its real re-announced hold (sync_gone), and one saying the dead
// coordinator's clients held nothing (CentralSyncPrevQuiet), arriving
// before the member's own, makes the coordinator skip its Hold and take
// the real hold, when it comes, as late (TestForgedEmptySyncDropsRealHold,
// TestForgedQuietSyncBeforeRealHold: known gaps, run with
// SYNCLAB_KNOWN_GAPS=1). Only a key (every frame authenticated) makes a
// lock exclusive against a forger.
//
// # The token-asking variant
//
// Config.Variant TokenAsk (TokenAskFactory, mutexd --algorithm tokenask)
// is the notes' centralised token: the same coordinator, election,
// fences, leases, support, takeover and failure handling, with one more
// rule. Each request is stamped with a vector (clock.Vector): per member,
// incarnation<<32 | seq of the latest of its requests the request depends
// on, the requester's own entry being the request itself
// (Request.After brings the others: the vector of a program message the
// client received). The coordinator grants a waiting request only when
// every other member's entry is at most V, read off its queue (tokenask.go):
// the request of that member up to which it waits for none. So grants
// follow the causal order of the requests, across locks, and a request
// that reaches the coordinator before one it follows waits for it.
// Requests and syncs carry the stamps (KindTokenAskRequest,
// KindTokenAskSync), so a new coordinator rebuilds V from the members'
// re-announcements. A predecessor never heard of holds the dependent
// request until its member's word or its silence: a sync of the member
// answering a beat sent after the dependent was queued names every
// request the member made before it (made before the stamp naming it was
// handed out), so one it does not name was never made (a vector passed by
// hand; or a sync forged in its name, keyless, which can drop its
// requests too: Frames that lie): skipped at once, counted, reported at
// WARN. Without that word,
// it holds the dependent until its member has been silent for 2 x
// DeadAfter since its last frame or the dependent's queueing, if later
// (its later frames queue behind the predecessor on its stream, so one
// merely delayed keeps it silent: the transport delivers no frame after a
// later one of the same member (with an IP of its own), across its
// reconnects too, and one held
// up on a connection its member gave up is lost, not late), and 4 x DeadAfter from the queueing at
// most however often the member is heard (its beats lost one way, frames
// forged in its name); then skipped, reported: lost with its member's
// crash, or on its way over a link down that long. It used to be skipped
// DeadAfter after the queueing, however recently its member was heard:
// a request retransmitted 400 ms (DeadAfter 250 ms) was overtaken while
// its member was up (TestDelayedPredecessorWaitedFor,
// TestUnknownPredecessorBound). A dependent that has waited a beat
// interval for the word has the coordinator ask for it (a beat on the
// member's stream, beats_called_word; the periodic beats are datagrams).
// One the coordinator dropped for its member's silence (DeadAfter without a frame)
// still holds V back for DeadAfter more (2 x DeadAfter of silence, and
// the tick's lag), or until the member's next sync queues it again (two
// beats lost on a lossy link let its dependents overtake it, silently:
// the generic oracle's causal check, TestTokenAskSilentPredecessor);
// then it is skipped and reported too. A grant never confirmed (below) lapses after as long a silence, 2 x
// DeadAfter of its member's silence since the grant or its last frame, if later (any frame restarts it): refused where it
// landed, it is a waiting request the member's next sync has made anew.
// It lapsed after DeadAfter, and 300 ms of lost syncs (100 ms beats) had
// a refused grant made anew after its dependent, said as a crash
// (TestSilentPredecessorOneRule). No lease bounds that wait: a member
// keeps a refused request as long as its client waits, so any bound short
// of its word is liveness's, not a proof of order; the WARN says what
// the coordinator knows (its last frame of the member, when it granted or
// dropped the request), and status repeats the latest. Nor does its
// lease's end at the coordinator: a grant never confirmed whose lease ends
// there holds its dependents as before, until the member's next sync
// (which lists the request waiting, and has it queued again, if the
// member refused the grant) or that silence. Counted served at the
// lease's end, a refused grant's dependents went first, and nothing was
// said (the oracle under short one-way cuts: TestOracle/tokenask+shortcuts
// seed 32, 570 ms; TestMixedBuilds/tokenask/harsh seed 14, 4.4 s, a grant
// of a coordinator its member no longer followed;
// TestExpiredGrantHoldsDependents). At the lease's end the coordinator
// asks that member's word once more, on its stream (beats_called_expired),
// if the grant holds a request back: the periodic beats, datagrams, asked
// alone, a beat interval later on average and one more per beat lost,
// and an honest member's refused grant was overtaken, said, when they
// came after 2 x DeadAfter of its silence (TestExpiredGrantAsked, 30
// seeds, the cut healed at the lease's end: dependents granted 5 ms after
// it at the median, 54 ms before and 6 seeds overtaken; 30% of the beats
// lost, 5 ms, 82 ms before and 13 overtaken; 1 and 2 seeds still a beat
// interval or two, a periodic beat's sync crossing the grant made anew).
// Its member heard without a sync, its dependents are granted without it
// 4 x DeadAfter after the lease's end (TestExpiredGrantBound). Before the lease's end, a grant never
// confirmed whose member is heard holds its dependents for the lease,
// however long (up to an hour), with no bound of its own: while the lease
// runs the member may hold it, and the coordinator gives it nobody else;
// a member heard gives its word a round trip after the beat behind the
// grant (confirmSoon), so only frames in its name without its syncs (a
// forger, which a key rules out) keep the word away, and a bound shorter
// than the lease would add to honest runs a way to overtake a member up
// and heard whose word is merely slow. Its silence lets go of it sooner
// (TestUnconfirmedGrantOfSilentMember; TestUnconfirmedGrantHeldToLeaseEnd
// keeps the rest).
// A grant is served, for V, once its member has shown it took it (a
// sync listing it held with its fence, a renewal of it; its release
// ends it), not when it leaves: a grant can be refused where it lands,
// when a sync of its member crossed it (the member answered a beat
// before the grant arrived, listing the request waiting, and refuses a
// grant echoing an older stamp than that sync), and it is then made
// anew a sync later. Counted served when it left, a request naming it,
// granted with it, held first (TestOracleHarsh/tokenask, seeds 37 and
// 56, and 175 and 193 on the way: 42-52 ms; TestDependentWaitsForTakenGrant). A waiting request
// held back only by such a grant has the coordinator ask the grant's
// member at once: a beat on its stream, behind the grant (a datagram
// could overtake it), which the member answers with a sync (once per
// request, beats_called_confirm; the periodic beats do the rest). That
// is a round trip and two messages more for a request whose predecessor
// of another member was granted just before it. A member that reads a
// grant and a beat in one pass answers the beat at the clock's reading,
// once the grant is taken or refused there, so that its sync says which
// (sent at once, it listed the request waiting and voided the grant:
// seed 37, TestGrantReadWithBeat). And a member hands out no vector
// (Vector, mutexd vector) while its incarnation is not on disk: a crash
// then has the next run raise the same incarnation and make requests
// with the same stamps, and a stamp naming one of them named another
// request too; three requests once waited for each other for ever
// (TestFailingDiskFence/tokenask/3, seed 26; TestVectorWaitsForIncarnation).
// The simulator's oracle checks the order with the members' streams
// losing frames too (mutextest.Config.ShortCuts: short one-way cuts, no
// fault to excuse an overtaking), so that lost syncs and grants run the
// rules above, and excuses a skip said only 2 x DeadAfter or more after
// its predecessor was asked (TestOracleShortCuts; a rule that skipped at
// once, saying so, passed it before: TestOracleCatchesEarlySkip), also
// with members of --lease apart (TestOracleLeasesApart and
// TestMixedBuilds, tokenask+shortcuts), where a request refused for its
// lease ends, for the oracle, when the refusal leaves the coordinator.
//
// # Use
//
// The core is a mutex.Algorithm: drive it like any core (Step, Tick at
// Deadline, Ready, Advance) and call Acquire, Renew and Release on the
// driver's goroutine; answers are typed outcomes (mutex.Granted with the
// term as Epoch, Renewed, Lost, Released), also reported as events. Ready.State
// holds the incarnation, the last term coordinated and the election's
// state: persist it before sending (the first Ready carries the raised
// incarnation as a promise); the outcomes of a Ready whose promise is not
// on disk are handed over only once it is (mutexcount.Hold; the
// coordinator's election already claims only a term on disk). Factory builds it from a driver's Env and
// mutex.Options (--lease, and --heartbeat for the beat and the election's
// heartbeat, at most a third of the lease).
//
// A won term whose write fails: the election's claim may need no write
// (the reservation on disk covers it) while the term coordinated is one
// (lastLed, a promise): if that write fails, every frame of the member is
// withheld and the others elect without it. Meanwhile the member reports
// no coordination (Detail.Coordinates false, Detail.Unsaved the term,
// status "COORDINATING TERM X WAITS FOR ITS STATE WRITE") and says so
// once per term at WARN (EventCoordinatingUnsaved), until a write succeeds.
package central
