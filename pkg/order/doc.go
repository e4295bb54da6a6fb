// Package order is ordered multicast to a static group, as sans-IO cores
// (see pkg/core): reliable FIFO, causal and total order, the two ways of
// the course notes' chapter on logical time, and the replicated state machine the
// notes say total order is for (pkg/order/rsm). cmd/orderd runs it.
//
// One Core does every order; each multicast names its own (Multicast).
// A message is delivered to its sender too, as the notes' multicast
// "including itself".
//
// # Reliable FIFO: the stream every order stands on
//
// Each member numbers the records it multicasts 1, 2, 3... and sends each
// to every other member (unicast fan-out, or one multicast frame). A
// receiver hands a member's records on in that order, exactly once,
// holding back those that arrive early (at most Window ahead: anything
// further is refused and counted, never buffered), and acknowledges
// cumulatively; the sender resends from the first unacknowledged record
// after Retry, backing off to 16 x Retry while a member stays silent, and
// refuses new multicasts (ErrBusy) once Window records wait for the
// slowest member. A FIFO message is delivered when its record is handed
// on.
//
// # The relay: agreement when a sender crashes
//
// The stream resends a record only from its sender, so a record that
// reached some members before its sender crashed for good (or was cut
// off from some members) would never reach the rest: the correct members
// would deliver different messages, and a causal message that depends on
// it would wait forever where it is missing. So, as the textbook's
// reliable multicast, a receiver keeps every record it hands on (its own
// log of the others' streams, persisted with the position it reached)
// until it knows every member holds it, and passes it on to the members
// that lack it when the sender does not settle it (relay.go).
//
// The relay costs nothing per multicast while nothing fails. A sender
// knows from the acknowledgements when every member holds its records,
// and says so to every member (an OrderHolding, N-1 frames) 3/4
// RelayAfter after the first record it has not yet said it of: once per
// quiet period, and at most once per 3/4 RelayAfter under steady traffic,
// not per multicast. A receiver that has kept a record not known to be everywhere
// for RelayAfter (3 s) asks every member that may lack it how far it
// holds that stream; a member answers with its own position, and
// whichever holds more relays the records the other lacks (OrderRelay,
// the sender's record as the sender encoded it, up to 16 per answer, each
// answer asking for the next), backing off from Retry to 16 x Retry until
// every member is known to hold everything the asker holds. A relayed
// record enters the sender's stream at the receiver exactly as the
// sender's own copy: same number, same window, handed on once, and the
// sender's own retransmission of it later is a duplicate; a restarted
// member knows from its disk what it handed on and kept. A sender's
// numbers are on disk before its records leave, so a restarted sender
// never reuses a number another member holds.
//
// Trust: the cluster key authenticates the frame's last hop, not the
// member whose stream a record belongs to, and every member holds the
// key. A member can therefore relay a record its origin never sent, just
// as it could forge a frame that names another member as its sender:
// orderd's members trust each other, and the key keeps every other host
// out. What a relay can do is bounded as the origin's own frames are: a
// relayed record beyond the origin's window is refused, a member's own
// stream is never taken from another member, a holding beyond what the
// origin can have sent is refused, and everything refused is counted.
//
// # Causal order
//
// A causal record carries its vector timestamp t(m), and the receiver
// applies the notes' conditions exactly:
//
//	t(m)[i] = V[i] + 1        and        t(m)[k] <= V[k] for k != i
//
// where V counts the causal messages delivered from each member (kept by
// this core, not the node's event vector clock, which ticks on every
// frame). A vector of the wrong width, an entry t(m)[i] that is not the
// sender's own count, or an entry beyond what member k can have sent
// (its stream's window) is refused and counted: nothing from the wire can
// make a message wait for a predecessor that cannot exist.
//
// # Total order by a sequencer
//
// The sequencer is elected with the election machinery (an elect.Elector,
// bully by default, composed as pkg/timesync/berkeley does). A sender
// hands its message to the sequencer (Submit, resent every Retry until
// it is delivered); the sequencer numbers it, keeps it in its log and
// sends it to every member; a member keeps it and acknowledges; once a
// majority holds a number the sequencer commits it, and members deliver
// committed numbers in order. Committing on a majority is what lets a
// new sequencer continue the sequence without gap or duplicate after the
// old one crashes: before it numbers anything it asks every member for
// its log and waits for a majority (each promises the new term, so the
// old sequencer can commit nothing more), adopts the most advanced log
// among them (highest term whose whole log it holds, then longest),
// fetching the entries it lacks, and goes on from its last number. Every
// committed number is held by a majority, and two majorities meet, so the
// adopted log holds all of them. Each sender's submissions are numbered
// once and in order (per-sender submission IDs, kept in the log), so
// a message resent to a new sequencer is not numbered twice.
//
// The sequencer's election claims only a term on its disk (bully's
// reservation), so a claim the reservation covers leads without a write;
// the recovery then writes the term its log promises (Log.Term) before
// any Recover leaves. While that write fails every frame of the member
// waits and the others follow another sequencer: status says so
// (SequencerStatus.Unsaved) until a write succeeds, and the recovery
// goes on from there.
//
// A submission is not written by its sender: it leaves at once, and the
// sender answers the send once the entry is committed, which is on a
// majority of disks (a stronger promise than the sender's own disk, and
// no fdatasync of the sender's on the path). A sender that crashes
// before that loses its waiting submissions with its memory, unanswered
// (those the sequencer numbered are delivered as any other). Its
// submission IDs are era<<32 | count, the era one more at every start and
// on disk before any submission of it leaves, so a restarted sender never
// reuses an ID it may have sent; the sequencer takes a sender's next ID
// of the same era, or the first of a newer era, and nothing else: no
// message is numbered twice, none after a later one of its sender, and
// one of the old era still in flight once the new era's first is
// numbered is refused as numbered already (it was never answered).
//
// The critical path of a multicast is four one-way message delays
// (sender -> sequencer -> members -> sequencer -> members) and one
// fdatasync, the members' entry (a member announces the delivery before
// its record of it is written: "Announced before written"), as Raft's:
// the sequencer's own write runs while its Append travels (the daemon's loop then takes the
// members' acks once that write is done), and a member acknowledges an
// Append that changes nothing in its log (the commit point alone) before
// its record of it is written. The commit point rides on the sequencer's next Append (as Raft's commit index on
// AppendEntries): under load a multicast costs the notes' 1 + (N-1)
// frames, plus the members' N-1 acknowledgements of the entry; an idle
// sequencer sends a new commit point alone at once (N-1 frames more), and
// one that waits while numbers are in flight goes alone after
// CommitDelay. A commit point sent alone is not acknowledged (the ack
// would tell the sequencer only what it sent): an isolated multicast costs
// 3(N-1)+1 frames (TestSimSequencerFramesPerMulticast counts them). A
// member that lost it holds entries past its commit point and, having
// heard no Append for a Heartbeat, asks (askCommit). The entries numbered
// from the frames the daemon took in one batch go in one Append per
// member.
//
// # Total order by Lamport stamps
//
// The notes' distributed algorithm: the message is queued everywhere by
// (Lamport stamp, sender), every member multicasts an ack (N acks of N-1
// frames: the notes' N^2), and a member delivers the head of its queue
// once every member acknowledged it and every other member has a later
// message or ack queued. The stream under it gives the reliable FIFO
// channels the algorithm assumes. It needs every member alive: one
// member down stops it, as the notes' algorithm.
//
// # Crashes
//
// Everything a member has promised is on disk before any frame that
// depends on it leaves (an acknowledgement, an entry's acknowledgement,
// a start's submission era): its stream and what it handed on, the causal and
// Lamport queues, the log and the state machine at the position it
// reflects. It is written as a snapshot now and then and, in between, as
// one record per step of what changed (record.go; core.Ready.Entries; the
// sequencer's deliveries' records ride on the next, lazy.go),
// which the daemon appends to its log with one fdatasync for a whole
// batch of frames. A member that restarts reads the snapshot and the
// records after it and is exactly where it was, but for the deliveries
// whose record waited (TestSimRecordsRestoreExactly checks it after every
// step that leaves nothing waiting; a record carries the log from the first
// entry changed since the last one, so the log is compacted only of
// entries already written): the others resend what it missed, and the
// sequencer sends it the log entries after its commit point. Numbering
// and committing are not promises (a majority holds what is committed):
// the sequencer's Appends leave while it writes, and it counts itself a
// holder once its write is confirmed.
//
// # Announced before written
//
// A member announces a delivery of the sequencer's total order (its
// EventDelivered, marked core.Event.BeforeSave, which the daemon reports
// before its fdatasync; the hooks run from it, and a send is answered on
// it) as soon as it learns the commit point, without waiting for its
// record of the delivery: the entry is committed, so it is on a majority
// of disks, and the record ("delivered up to number i", the commit point
// and the state machine's applied number) is written in the same batch.
// That takes the member's second fdatasync off the path: the critical
// path is the four one-way delays and the members' one write of the
// entry, before their acknowledgement.
//
// Nor is that record written on its own (lazy.go): a record that holds
// only the commit point and deliveries announced before it promises
// nothing, so it waits for the next write, the next entry's (on the path
// anyway), which carries it, and goes alone only after RecordDelay (50
// ms) with nothing written meanwhile, or before a delivery's index could
// leave indexSlack, or when the daemon stops cleanly (WriteDeferred).
// Under a stream of multicasts every member and the sequencer write once
// per multicast, not twice (5 writes per multicast at 5 members instead
// of 10), and no member's loop blocks on a delivery's fdatasync when the
// next Append arrives. A crash repeats the deliveries since the last
// write, as above: up to RecordDelay's worth.
//
// The price is at-least-once across a crash: a member that crashes
// between the announcement and the write restarts from the record before
// it, learns the commit point again (from the sequencer's next Append;
// in an idle cluster it asks, askCommit: an AppendAck whose match is its
// commit point, every Heartbeat until an Append of the term arrives) and
// delivers the entries after its record again, in the same order, each with the same number (Delivery.Seq,
// its place in the log), sender, submission ID and message, and the same
// state machine result: the machine is rebuilt from the log, and every
// replica ends identical. Only those are repeated: an announcement whose
// record was written is never made again. A consumer that must act once
// (an --on-deliver hook, a reader of `orderd log` across restarts)
// deduplicates a total-order delivery by its number. Delivery indexes
// never repeat: the repeat takes a new one. A restart continues at the
// last index written plus indexSlack (1024), and a delivery is announced
// before its record only while its index is within indexSlack of the
// last index confirmed written (else after the write, as every other
// delivery): no index announced before a crash is given to another
// message after it.
//
// FIFO, causal and Lamport deliveries are announced after their write,
// as before: their record is also what stops the stream handing the
// message on again (its acknowledgement depends on it), and nothing
// outside this member holds its place in the delivery order. After a
// failed write the daemon holds these announcements until a write
// succeeds (internal/daemon, for a core that appends), so a crash in
// between never announces them twice, nor gives their index away.
//
// A sender's FIFO, causal or Lamport multicast is a promise (Multicast
// changes the state with core.Durable's promise): its record and the
// sender's new number are in the Ready's write, and no frame of the
// record (nor anything else of that Ready) leaves before a write that
// holds it succeeds.
//
// # A send whose write failed: not sent, ever
//
// The daemon answers a send whose write failed, and the answer must say
// what the client can rely on: the client will send the message again
// if told it was not sent, and a message that is "not sent" but goes out
// later is then delivered twice. So when nothing of the failed write can
// be read back (it wrote nothing, failed before its rename, or was cut
// off again, durably), the daemon has the core take the message back
// (Core.Withdraw, withdraw.go) and answers 503 not_sent: it is delivered
// nowhere, by no later write and after no restart, and sending it again
// is safe. It is safe with every order: no member received the record
// (its frames were withheld), so its stream number is given to the next
// record (the Lamport acks numbered after it in the same batch are
// renumbered, their stamps unchanged); its own delivery, held by the
// daemon with the failed write, is dropped; a causal message's vector
// entry goes back, and the message is in no one's causal past; a Lamport
// message leaves the queue with its own ack, and no other member's ack
// can exist. The sequencer's total order is not written by its sender
// (it is answered once committed) and is untouched. A restart reads the
// last good write, which never held the message. Only a Lamport message
// in a group of one is delivered within its send (through the state
// machine): it is kept. When the write may have reached the disk (an
// fdatasync failed and the cut failed too) the message is kept, and
// answered 503 not_saved: it goes out with the next write that succeeds,
// or is lost with a crash first, so the client must look for it (orderd
// log) before sending again.
//
// Withdraw takes back what was made since the core's last Ready, which
// is the send's own turn only if the driver drained the core in that
// turn. The daemon answers "sent" only then: a send whose turn ended in
// a step back (configuration agreement holds the core, not drained) is
// answered not_sent once the core is rebuilt without it, never "sent"
// (internal/daemon, HeldError); answered "sent" with its Ready still to
// come, a failed write of that later Ready would have taken it back.
//
// A receiver's delivered-up-to mark is a promise too: the
// acknowledgement of a record it handed on leaves only after the mark is
// written, so a crash before makes the sender resend the record and the
// restart hands it on once. TestSimUnavailableSendNeverDelivered sends,
// fails the write, heals the disk, sends again and restarts the sender:
// one delivery everywhere; TestSimFIFOCausalDiskFaults runs every order
// under crashes with half the writes failing (1 to 5 members, sequencer
// and Lamport): a send taken back is delivered nowhere, and every other
// is delivered everywhere, once, in its sender's order.
//
// A FIFO or causal message that reached only some members before its
// sender crashed reaches the rest through the relay, whether or not the
// sender comes back; causal messages that depend on it wait for it
// about RelayAfter and a few round trips (more under loss, as the asking
// backs off). A member down for good is not removed from the group (the
// group is static): the others stop their own multicasts once Window
// records wait for it, as they do for a member down for a while.
//
// # Bounds
//
// Every buffer is bounded: records held back (Window per member), the
// records a sender keeps (Window, plus the Lamport acks it owes), the
// records kept for the relay (the last Window of each member's stream
// not known to be everywhere: a sender's stream runs at most Window past
// its slowest member, so an older one is held everywhere, unless Lamport
// acks pushed its sender past its window; the drops are counted,
// relay_kept_window), early
// Lamport acks, submissions (MaxSubmits), uncommitted numbers
// (MaxUncommitted), the log (KeepLog delivered entries, 256 by default; a
// member that lags further gets a snapshot of the state machine instead,
// one frame of at most wire.MaxOrderSnapshot bytes), and the delivery
// history (History).
//
// # Snapshots: only past the log, and never in silence
//
// The sequencer sends a member a snapshot only when the member itself
// said (its answer to the recovery, or an acknowledgement) that it holds
// nothing past the log's compacted part; a member that was merely silent
// (an acknowledgement lost, or its election not yet at the new term) is
// sent the entries again from what it last said it holds, and a snapshot
// goes again at most every Heartbeat, doubling up to 16 Heartbeats while
// the member does not take it. A sequencer whose own log starts at a
// snapshot's number (it caught up from one) fetches the KeepLog entries
// before that number from a member that committed them before it numbers
// anything, so that the members a few entries behind it get entries, not
// a snapshot. The unavoidable case, a member more than KeepLog entries
// behind, is reported: the numbers it does not deliver one by one come
// out as one Delivery whose Skipped names them (From, To, Via; Seq is
// To, no message), after an EventSnapshot marked Warn; the counters
// snapshots_installed and skipped_numbers and Status' LastSkip count
// them. Nothing else is ever passed over: per life, a member's total
// order is contiguous, number by number or skip by skip.
//
// A snapshot moves a member's commit point only by what a sequencer can
// have numbered since the member was last caught up (an Append within
// 2^16 of its commit point, its time saved with the log): 2^16 plus 2^20
// a second since. Anything further is refused (rejected_implausible):
// without a key anyone can send a snapshot in the sequencer's name, and
// one numbered far ahead stopped a member's deliveries for as long as the
// cluster took to number that far; 2^24 of them ended the number space.
//
// # Submissions forged in a member's name
//
// Submission eras are their member's own numbers, as incarnations are:
// without a key, one forged in a far era used to be numbered and kept,
// and every real submission of the member after it taken for numbered
// already, for good. A submission of an older era than its member's
// highest is taken when stamped after the frame that brought the higher
// one (eras_undone): the member's eras only rise with its Lamport stamps.
// An entry of this member's above its own last submission says nothing
// of its own submissions (forged_own_entries): they are not taken for
// delivered.
//
// # Acknowledgements forged in a member's name
//
// Without a key (Config.Unkeyed) an acknowledgement saying a member holds
// this member's stream further than it does, the record it lacks lost,
// would have the record trimmed and that member's stream stalled for
// good. So a record is kept until every member's acknowledgement of it
// has stood 8 x Retry (peerOut.Settled) while the member is asked how far
// it holds the stream (acks_probed); its own lower word, stamped after a
// rise, undoes the rise (acks_undone) and has the records resent. See
// stream.go, "Acknowledgements without a key"; with a key acknowledgements
// are trusted as they come.
package order
