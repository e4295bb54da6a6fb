package wire

// Kind identifies the message a synclab frame carries.
//
// ONLY APPEND TO THIS LIST. A kind's number is on the wire: renumbering or
// reusing one makes old and new nodes misread each other.
//
// A kind is declared once: its constant here (or beside its payload, like
// orderd's), and its line in the registry (registry.go), which gives its
// name, its payload's codec and its class; everything else (Known, String,
// trace decoding, fuzz generators, the benchmarks' message classes, the
// docs' kind tables) is derived from that line. Its number is taken from
// its family's block (Blocks).
type Kind uint8

const (
	// KindInvalid is never sent; a frame carrying it fails to decode.
	KindInvalid Kind = 0
	// KindHeartbeat announces that the sender is alive (payload: Heartbeat).
	KindHeartbeat Kind = 1
	// KindElection starts a bully election at every higher-ranked member
	// (payload: Election).
	KindElection Kind = 2
	// KindAnswer is a higher-ranked member's reply to an election: it takes
	// over the election (payload: Answer).
	KindAnswer Kind = 3
	// KindCoordinator announces the winner of an election (payload: Coordinator).
	KindCoordinator Kind = 4
	// KindLeaderHeartbeat is the leader's periodic proof of life
	// (payload: LeaderHeartbeat).
	KindLeaderHeartbeat Kind = 5
	// KindTimeRequest asks a timed server for its time, Cristian's algorithm
	// (payload: TimeRequest).
	KindTimeRequest Kind = 6
	// KindTimeReply answers a TimeRequest with the server's time
	// (payload: TimeReply).
	KindTimeReply Kind = 7
	// KindClockPoll is a Berkeley master's request for every worker's
	// clock reading (payload: ClockPoll).
	KindClockPoll Kind = 8
	// KindClockReading is a worker's answer to a ClockPoll
	// (payload: ClockReading).
	KindClockReading Kind = 9
	// KindClockAdjust tells one worker the correction to apply to its clock
	// (payload: ClockAdjust).
	KindClockAdjust Kind = 10
	// KindClockAdjustAck acknowledges a ClockAdjust (payload: ClockAdjustAck).
	KindClockAdjustAck Kind = 11
	// KindToken carries a lock's token from a ring member to its successor
	// (payload: Token).
	KindToken Kind = 12
	// KindTokenAck acknowledges a Token to its sender (payload: TokenAck).
	KindTokenAck Kind = 13
	// KindRingProbe asks ring members what they know of a lock's token,
	// when it may have been lost (payload: RingProbe).
	KindRingProbe Kind = 14
	// KindRingProbeReply answers a RingProbe (payload: RingProbeReply).
	KindRingProbeReply Kind = 15
	// KindEpochRefused tells a member that its frames of an epoch are
	// refused here (this node accepted that epoch before it restarted, so
	// they might be recordings): the member moves to a new series. Node to
	// node; cores never see it (payload: EpochRefused).
	KindEpochRefused Kind = 16

	// Kinds 20-29: the central coordinator (pkg/mutex/central; payloads in
	// central.go). Members send theirs on the TCP link, in order.

	// KindCentralRequest asks the coordinator for a lock (CentralRequest).
	KindCentralRequest Kind = 20
	// KindCentralGrant grants a request (CentralGrant).
	KindCentralGrant Kind = 21
	// KindCentralRelease gives a lock back or withdraws a request
	// (CentralRelease).
	KindCentralRelease Kind = 22
	// KindCentralRenew asks the coordinator to extend a lease (CentralRenew).
	KindCentralRenew Kind = 23
	// KindCentralRenewed confirms a renewal (CentralGrant).
	KindCentralRenewed Kind = 24
	// KindCentralRefuse refuses a request or a renewal (CentralRefuse).
	KindCentralRefuse Kind = 25
	// KindCentralBeat is the coordinator's periodic call for syncs
	// (CentralBeat).
	KindCentralBeat Kind = 26
	// KindCentralSync is a member's whole view of its requests, sent to the
	// coordinator of its term in answer to a beat and on joining a term: its
	// support, and the re-announcement a new coordinator rebuilds its
	// queue from (CentralSync).
	KindCentralSync Kind = 27

	// 30-39: Ricart-Agrawala and Lamport's distributed mutex
	// (pkg/mutex/permission; payloads in permission.go).

	// KindRARequest asks one member for permission to enter a lock's
	// critical section, Ricart-Agrawala (payload: PermRequest).
	KindRARequest Kind = 30
	// KindRAReply is a member's permission, sent at once or deferred to
	// the end of its own critical section (payload: PermReply).
	KindRAReply Kind = 31
	// KindLamportRequest puts the sender's request into the receiver's
	// queue, Lamport's distributed mutex (payload: PermRequest).
	KindLamportRequest Kind = 32
	// KindLamportAck acknowledges a KindLamportRequest with a later
	// timestamp (payload: PermReply).
	KindLamportAck Kind = 33
	// KindLamportRelease takes the sender's request out of the receiver's
	// queue (payload: PermRequest, the request released).
	KindLamportRelease Kind = 34
	// KindPermHeartbeat is a member's heartbeat, saying whether it may
	// still hold or ask for any lock (payload: PermHeartbeat).
	KindPermHeartbeat Kind = 35
	// KindLamportRequeue carries two messages of Lamport's distributed
	// mutex made in one turn of the sender's loop: the release of its
	// request for a lock and its next request for it, which moves it from
	// its place in the receiver's queue to a new one (payload:
	// PermRequeue).
	KindLamportRequeue Kind = 36
	// KindPermRelay carries a frame of these algorithms from one member
	// to another through a third, when the link between the two is
	// broken (payload: PermRelay).
	KindPermRelay Kind = 37
	// KindPermProbe asks a member how long it has not heard another
	// (payload: PermProbe): the sender has not heard that one for its
	// timeout, and gives it up only if a majority has not either.
	KindPermProbe Kind = 38
	// KindPermProbeReply answers a KindPermProbe (payload:
	// PermProbeReply).
	KindPermProbeReply Kind = 39

	// 160: bully's probe (pkg/elect/bully), the first of the elections'
	// next block.

	// KindLeaderProbe asks the leader for a heartbeat now: a follower
	// that missed the expected one sends it until its leader timeout
	// (bully.Config.Probe). The leader answers with a LeaderHeartbeat to
	// the sender alone (payload: LeaderProbe).
	KindLeaderProbe Kind = 160
	// KindLeaderWatch is a follower's word to its leader, over the TCP
	// link to it, when it adopts it and every bully.Config.Watch after:
	// it keeps that link open, so that the leader's death closes it at
	// once (a port hint, bully.Config.HintProbe). The leader counts it and
	// sends nothing back (payload: LeaderWatch). A node that does not
	// know the kind (an older build) drops it as unknown_kind and runs as
	// before; the link stays open all the same.
	KindLeaderWatch Kind = 161

	// 150-155: the distributed bakery (pkg/mutex/permission, Bakery;
	// payloads in permission.go), taken from the end of the block of the
	// next mutex algorithms. Each member serves its own num and choosing
	// of every lock; the others read them by request and reply, three
	// reads per entry.

	// KindBakeryDoorway reads the receiver's ticket for a lock: the
	// sender is choosing its own (payload: PermRequest, Stamp the read's
	// own Lamport time).
	KindBakeryDoorway Kind = 150
	// KindBakeryNumber answers a KindBakeryDoorway with the sender's
	// ticket, in Want (payload: PermReply).
	KindBakeryNumber Kind = 151
	// KindBakeryChoosing asks whether the receiver is choosing a ticket
	// for a lock (payload: PermRequest, Stamp the sender's ticket).
	KindBakeryChoosing Kind = 152
	// KindBakeryChosen answers a KindBakeryChoosing once the sender is
	// not choosing (payload: PermReply).
	KindBakeryChosen Kind = 153
	// KindBakeryTicket reads the receiver's ticket against the sender's:
	// answered once the receiver holds no ticket before it (payload:
	// PermRequest, Stamp the sender's ticket).
	KindBakeryTicket Kind = 154
	// KindBakeryTicketReply answers a KindBakeryTicket: the receiver's
	// ticket is 0 or after the sender's, its leave to enter (payload:
	// PermReply).
	KindBakeryTicketReply Kind = 155

	// 70-89: the majority election (pkg/elect/majority), the eventual
	// leader (pkg/elect/omega), Yo-Yo (pkg/elect/yoyo).

	// KindVoteRequest asks every member for its vote in the frame's term
	// (payload: LeaseRequest).
	KindVoteRequest Kind = 70
	// KindVote answers a vote request (payload: LeaseReply).
	KindVote Kind = 71
	// KindLeaseRenew is the leader asking its voters to renew its lease
	// (payload: LeaseRequest).
	KindLeaseRenew Kind = 72
	// KindLeaseGrant answers a renewal (payload: LeaseReply).
	KindLeaseGrant Kind = 73
	// KindLeaseRelease frees the voters bound to the sender
	// (payload: LeaseRelease).
	KindLeaseRelease Kind = 74
	// KindOmegaHeartbeat is the eventual leader's heartbeat; the term is
	// the sender's incarnation (payload: OmegaHeartbeat).
	KindOmegaHeartbeat Kind = 75
	// KindYoYoHello is Yo-Yo's first phase: the sender's ID to its
	// neighbours (payload: YoYoHello).
	KindYoYoHello Kind = 76
	// KindYoYoDown is Yo-Yo's YO- phase (payload: YoYoDown).
	KindYoYoDown Kind = 77
	// KindYoYoUp is Yo-Yo's -YO phase (payload: YoYoUp).
	KindYoYoUp Kind = 78
	// KindYoYoLeader floods Yo-Yo's leader and its heartbeat
	// (payload: YoYoLeader).
	KindYoYoLeader Kind = 79

	// Kind numbers are allotted in blocks, one per algorithm family:
	// Blocks, below, is the one list of them.

	// 50-69 elections: the ring elections (pkg/elect/ring).

	// KindRingElection is one hop of a ring election's message to the
	// next live member (payload: RingElection).
	KindRingElection Kind = 50
	// KindRingCoordinator is one hop of the announcement of a term's
	// leader around the ring (payload: RingCoordinator).
	KindRingCoordinator Kind = 51
	// KindRingAck acknowledges one hop to its sender (payload: RingAck).
	KindRingAck Kind = 52
	// KindRingHeartbeat is the ring-elected leader's proof of life
	// (payload: RingHeartbeat).
	KindRingHeartbeat Kind = 53

	// KindMaekawa is a Maekawa voting frame (pkg/mutex/maekawa): request,
	// locked, failed, inquire, relinquish, release, and the fence's commit
	// and the lease's renewal (payload: Vote).
	KindMaekawa Kind = 40
	// KindQuorumLock is a majority-quorum lock frame (pkg/mutex/maekawa, majority):
	// the same operations, with deny instead of queueing (payload: Vote).
	KindQuorumLock Kind = 41

	// 130-159: mutex, the next algorithms.

	// KindTokenAskRequest asks the token-asking coordinator for the token
	// of a lock, stamped with the member's vector clock (TokenAskRequest).
	// 140-141: 130-139 are left to the distributed bakery, built beside it.
	KindTokenAskRequest Kind = 140
	// KindTokenAskSync is a token-asking member's whole view of its
	// requests, with the vector of each waiting one (TokenAskSync).
	KindTokenAskSync Kind = 141

	// 120-129: the node's own messages (internal/node), beside
	// KindEpochRefused; cores never see them.

	// KindConfig announces what the sender's configuration says must be
	// the same on every member, part by part, and the fingerprint of its
	// key (payload: ConfigAnnounce): configuration agreement. A node
	// that does not know the kind (an older build) drops it as
	// unknown_kind and runs as before.
	KindConfig Kind = 120
	// KindStatusQuery asks a member for its row of the whole lab's table,
	// `X status --cluster` (payload: StatusQuery, padded so that no answer
	// is twice its size). A node answers only members, at most a few a
	// second each; one that does not know the kind (an older build) drops
	// it as unknown_kind, and its row says it did not answer.
	KindStatusQuery Kind = 121
	// KindStatusReport answers a KindStatusQuery (payload: StatusReport).
	KindStatusReport Kind = 122
	// KindTraceQuery asks a member for the next piece of its trace
	// window, turning the window on (the live page, `X web`, draws every
	// member; payload: TraceQuery, padded so that no answer is twice its
	// size). A node answers only members (only signed queries when keys
	// are set), at a bounded pace each; one that does not know the kind
	// (an older build) drops it as unknown_kind, and the page shows it as
	// not answering traces.
	KindTraceQuery Kind = 123
	// KindTraceChunk answers a KindTraceQuery (payload: TraceChunk).
	KindTraceChunk Kind = 124
	// KindConfigRefresh says, in a few bytes, that the sender is up with
	// the configuration whose full announcement (KindConfig) the receiver
	// holds: what a quiet cluster sends at rest in its place (payload:
	// ConfigRefresh). Sent only to members that sent one themselves, and
	// once per incarnation of a member to find out: a node that does not
	// know the kind (an older build) drops it as unknown_kind and goes on
	// receiving full announcements.
	KindConfigRefresh Kind = 125
	// KindConfigTimings tells a member the sender's own heartbeat and
	// leader timeout (payload: ConfigTimings), which need not agree but
	// must fit each other's: the receiver warns of a member whose
	// heartbeats come further apart than it waits for a leader. Sent with
	// the announcements and refreshes; to a member that never sent one,
	// twice per pair of incarnations, then backing off to one every 5
	// minutes (so that a pair whose first ones were all lost both ways
	// still learns): a node that does not know the kind (an older build)
	// drops each as unknown_kind, a counter and a debug line, and runs as
	// before.
	KindConfigTimings Kind = 126

	// 210-229: orderd's and the node's next kinds.

	// KindHeartbeatProbe asks a member for a heartbeat now, to the member
	// alone: the sender missed the one it expected (liveness.Config.Probe)
	// and asks until the member's suspicion timeout. It says that its
	// sender lives, as a heartbeat does (payload: Heartbeat, the
	// sender's). The member answers with a KindHeartbeat to the sender
	// alone. A node that does not know the kind (an older build) drops it
	// as unknown_kind; an older build never probes.
	KindHeartbeatProbe Kind = 210
)

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b [20]byte
	i := len(b)
	neg := n < 0
	if neg {
		n = -n
	}
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	if neg {
		i--
		b[i] = '-'
	}
	return string(b[i:])
}
