package wire

import (
	"encoding"
	"strings"
)

// The registry: every message kind, declared once. A kind's line names it
// (the stable label of logs, counters and traces), points at its payload's
// codec (the hand-written AppendBinary/UnmarshalBinary at fixed offsets of
// the payload type) and says which class of traffic it is. What the rest
// of synclab knows about kinds is read from here: Known and String (the
// node's decoder and its counters), Info (the trace decoder, the fuzz
// generators of internal/testkit/corefuzz, the benchmarks' message classes), and
// Registered (the docs' kind table, the tests that every kind has a codec,
// a fuzz target and trace fields).
//
// To add a kind: take the next free number of its family's block
// (Blocks), declare its constant with a comment saying what it carries,
// and add one line below, in its family's section. Nothing else lists
// kinds.

// Payload is a kind's payload: it encodes itself and decodes into itself
// (a pointer to the payload type).
type Payload interface {
	encoding.BinaryAppender
	encoding.BinaryUnmarshaler
}

// Class says what a kind's frames are to someone counting messages.
type Class uint8

const (
	// ClassMessage is a message of the algorithm as the course notes
	// count it (a request, a reply, a token, a vote...).
	ClassMessage Class = iota
	// ClassHeartbeat is steady-state traffic, sent periodically whatever
	// the operations do (heartbeats, lease renewals, the node's
	// configuration announcements): not the price of an entry or an
	// election.
	ClassHeartbeat
	// ClassAck is the reliability layer's acknowledgement of a message
	// (a hop, a token, a stream record): sent, but not among the
	// messages the notes count, which assume reliable links.
	ClassAck
)

var classNames = [...]string{ClassMessage: "message", ClassHeartbeat: "heartbeat", ClassAck: "ack"}

// String returns the class's name: "message", "heartbeat" or "ack".
func (c Class) String() string {
	if int(c) < len(classNames) {
		return classNames[c]
	}
	return "class(" + itoa(int(c)) + ")"
}

// KindInfo is a kind's declaration.
type KindInfo struct {
	Kind Kind
	// Name is the kind's stable label for logs, counters and traces
	// (snake_case, unique).
	Name string
	// New returns a zero payload of the kind, whose AppendBinary and
	// UnmarshalBinary are the kind's codec.
	New func() Payload
	// Class is what its frames are to someone counting messages.
	Class Class
	// Carries is how many of the notes' messages one frame carries when
	// more than one (Lamport's requeue: a release and a request); 0
	// means one.
	Carries int
}

// Messages is how many of the notes' messages one frame of the kind
// carries: Carries, or 1.
func (i KindInfo) Messages() int { return max(i.Carries, 1) }

// Block is a range of kind numbers allotted to one family of algorithms.
type Block struct {
	First, Last Kind
	Family      string
}

// Blocks allots kind numbers, one block per family, so that algorithms
// built side by side never take the same number: a family appends its
// kinds inside its block, from the block's first free number. 76 of 255
// numbers are taken (2026-12); the blocks leave every family room for
// several more algorithms, and 230-254 are kept back unallotted, which is
// why the kind stays one byte. 255 is never allotted: a later version
// that runs out can make it an escape to a wider kind without a new
// frame version.
var Blocks = []Block{
	{1, 19, "first kinds: the node's heartbeat and epoch refusal, bully, Cristian, Berkeley, the token ring (17-19 free: the token ring)"},
	{20, 29, "mutex: central coordinator"},
	{30, 39, "mutex: Ricart-Agrawala, Lamport's distributed mutex"},
	{40, 49, "mutex: Maekawa, majority quorum"},
	{50, 69, "elections: the ring elections"},
	{70, 89, "elections: majority, eventual leader, Yo-Yo"},
	{90, 119, "orderd: reliable, causal and total order multicast, the replicated state machine"},
	{120, 129, "the node's own (configuration agreement, cluster view)"},
	{130, 159, "mutex: the next algorithms"},
	{160, 189, "elections: the next algorithms"},
	{190, 209, "time synchronisation: the next algorithms"},
	{210, 229, "orderd and the node: the next kinds"},
}

// BlockOf returns the block k's number is in, and whether there is one.
func BlockOf(k Kind) (Block, bool) {
	for _, b := range Blocks {
		if k >= b.First && k <= b.Last {
			return b, true
		}
	}
	return Block{}, false
}

// newPayload is the New of a kind whose payload is a T.
func newPayload[T any, P interface {
	*T
	Payload
}]() Payload {
	return P(new(T))
}

// registry is every kind, by family block, in number order within each.
var registry = []KindInfo{
	// 1-19 first kinds.
	{Kind: KindHeartbeat, Name: "heartbeat", New: newPayload[Heartbeat], Class: ClassHeartbeat},
	{Kind: KindElection, Name: "election", New: newPayload[Election]},
	{Kind: KindAnswer, Name: "answer", New: newPayload[Answer]},
	{Kind: KindCoordinator, Name: "coordinator", New: newPayload[Coordinator]},
	{Kind: KindLeaderHeartbeat, Name: "leader_heartbeat", New: newPayload[LeaderHeartbeat], Class: ClassHeartbeat},
	{Kind: KindTimeRequest, Name: "time_request", New: newPayload[TimeRequest]},
	{Kind: KindTimeReply, Name: "time_reply", New: newPayload[TimeReply]},
	{Kind: KindClockPoll, Name: "clock_poll", New: newPayload[ClockPoll]},
	{Kind: KindClockReading, Name: "clock_reading", New: newPayload[ClockReading]},
	{Kind: KindClockAdjust, Name: "clock_adjust", New: newPayload[ClockAdjust]},
	{Kind: KindClockAdjustAck, Name: "clock_adjust_ack", New: newPayload[ClockAdjustAck]},
	{Kind: KindToken, Name: "token", New: newPayload[Token]},
	{Kind: KindTokenAck, Name: "token_ack", New: newPayload[TokenAck], Class: ClassAck},
	{Kind: KindRingProbe, Name: "ring_probe", New: newPayload[RingProbe]},
	{Kind: KindRingProbeReply, Name: "ring_probe_reply", New: newPayload[RingProbeReply]},
	{Kind: KindEpochRefused, Name: "epoch_refused", New: newPayload[EpochRefused]},

	// 20-29 mutex: central coordinator.
	{Kind: KindCentralRequest, Name: "central_request", New: newPayload[CentralRequest]},
	{Kind: KindCentralGrant, Name: "central_grant", New: newPayload[CentralGrant]},
	{Kind: KindCentralRelease, Name: "central_release", New: newPayload[CentralRelease]},
	{Kind: KindCentralRenew, Name: "central_renew", New: newPayload[CentralRenew]},
	{Kind: KindCentralRenewed, Name: "central_renewed", New: newPayload[CentralGrant]},
	{Kind: KindCentralRefuse, Name: "central_refuse", New: newPayload[CentralRefuse]},
	{Kind: KindCentralBeat, Name: "central_beat", New: newPayload[CentralBeat]},
	{Kind: KindCentralSync, Name: "central_sync", New: newPayload[CentralSync]},

	// 30-39 mutex: Ricart-Agrawala, Lamport.
	{Kind: KindRARequest, Name: "ra_request", New: newPayload[PermRequest]},
	{Kind: KindRAReply, Name: "ra_reply", New: newPayload[PermReply]},
	{Kind: KindLamportRequest, Name: "lamport_request", New: newPayload[PermRequest]},
	{Kind: KindLamportAck, Name: "lamport_ack", New: newPayload[PermReply]},
	{Kind: KindLamportRelease, Name: "lamport_release", New: newPayload[PermRequest]},
	{Kind: KindPermHeartbeat, Name: "perm_heartbeat", New: newPayload[PermHeartbeat], Class: ClassHeartbeat},
	{Kind: KindLamportRequeue, Name: "lamport_requeue", New: newPayload[PermRequeue], Carries: 2},
	{Kind: KindPermRelay, Name: "perm_relay", New: newPayload[PermRelay]},
	{Kind: KindPermProbe, Name: "perm_probe", New: newPayload[PermProbe]},
	{Kind: KindPermProbeReply, Name: "perm_probe_reply", New: newPayload[PermProbeReply]},

	// 40-49 mutex: Maekawa, majority quorum.
	{Kind: KindMaekawa, Name: "maekawa", New: newPayload[Vote]},
	{Kind: KindQuorumLock, Name: "quorum_lock", New: newPayload[Vote]},

	// 130-159 mutex: the next algorithms (140-141 the token-asking
	// central token, 150-155 the distributed bakery).
	{Kind: KindTokenAskRequest, Name: "tokenask_request", New: newPayload[TokenAskRequest]},
	{Kind: KindTokenAskSync, Name: "tokenask_sync", New: newPayload[TokenAskSync]},
	{Kind: KindBakeryDoorway, Name: "bakery_doorway", New: newPayload[PermRequest]},
	{Kind: KindBakeryNumber, Name: "bakery_number", New: newPayload[PermReply]},
	{Kind: KindBakeryChoosing, Name: "bakery_choosing", New: newPayload[PermRequest]},
	{Kind: KindBakeryChosen, Name: "bakery_chosen", New: newPayload[PermReply]},
	{Kind: KindBakeryTicket, Name: "bakery_ticket", New: newPayload[PermRequest]},
	{Kind: KindBakeryTicketReply, Name: "bakery_ticket_reply", New: newPayload[PermReply]},

	// 50-69 elections: rings.
	{Kind: KindRingElection, Name: "ring_election", New: newPayload[RingElection]},
	{Kind: KindRingCoordinator, Name: "ring_coordinator", New: newPayload[RingCoordinator]},
	{Kind: KindRingAck, Name: "ring_ack", New: newPayload[RingAck], Class: ClassAck},
	{Kind: KindRingHeartbeat, Name: "ring_heartbeat", New: newPayload[RingHeartbeat], Class: ClassHeartbeat},

	// 70-89 elections: majority, eventual leader, Yo-Yo.
	{Kind: KindVoteRequest, Name: "vote_request", New: newPayload[LeaseRequest]},
	{Kind: KindVote, Name: "vote", New: newPayload[LeaseReply]},
	{Kind: KindLeaseRenew, Name: "lease_renew", New: newPayload[LeaseRequest], Class: ClassHeartbeat},
	{Kind: KindLeaseGrant, Name: "lease_grant", New: newPayload[LeaseReply], Class: ClassHeartbeat},
	{Kind: KindLeaseRelease, Name: "lease_release", New: newPayload[LeaseRelease]},
	{Kind: KindOmegaHeartbeat, Name: "omega_heartbeat", New: newPayload[OmegaHeartbeat], Class: ClassHeartbeat},
	{Kind: KindYoYoHello, Name: "yoyo_hello", New: newPayload[YoYoHello]},
	{Kind: KindYoYoDown, Name: "yoyo_down", New: newPayload[YoYoDown]},
	{Kind: KindYoYoUp, Name: "yoyo_up", New: newPayload[YoYoUp]},
	{Kind: KindYoYoLeader, Name: "yoyo_leader", New: newPayload[YoYoLeader], Class: ClassHeartbeat},

	// 160-189 elections: the next kinds (160 bully's leader probe, 161
	// its follower's watch).
	{Kind: KindLeaderProbe, Name: "leader_probe", New: newPayload[LeaderProbe], Class: ClassHeartbeat},
	{Kind: KindLeaderWatch, Name: "leader_watch", New: newPayload[LeaderWatch], Class: ClassHeartbeat},

	// 90-119 orderd.
	{Kind: KindOrderRecord, Name: "order_record", New: newPayload[OrderRecord]},
	{Kind: KindOrderStreamAck, Name: "order_stream_ack", New: newPayload[OrderStreamAck], Class: ClassAck},
	{Kind: KindOrderSubmit, Name: "order_submit", New: newPayload[OrderSubmit]},
	{Kind: KindOrderAppend, Name: "order_append", New: newPayload[OrderEntries]},
	{Kind: KindOrderAppendAck, Name: "order_append_ack", New: newPayload[OrderAppendAck], Class: ClassAck},
	{Kind: KindOrderRecover, Name: "order_recover", New: newPayload[OrderRecover]},
	{Kind: KindOrderRecoverReply, Name: "order_recover_reply", New: newPayload[OrderRecoverReply]},
	{Kind: KindOrderFetch, Name: "order_fetch", New: newPayload[OrderFetch]},
	{Kind: KindOrderFetchReply, Name: "order_fetch_reply", New: newPayload[OrderEntries]},
	{Kind: KindOrderSnapshot, Name: "order_snapshot", New: newPayload[OrderSnapshot]},
	{Kind: KindOrderHolding, Name: "order_holding", New: newPayload[OrderHolding]},
	{Kind: KindOrderRelay, Name: "order_relay", New: newPayload[OrderRelay]},

	// 120-129 the node's own.
	{Kind: KindConfig, Name: "config", New: newPayload[ConfigAnnounce], Class: ClassHeartbeat},
	{Kind: KindStatusQuery, Name: "status_query", New: newPayload[StatusQuery]},
	{Kind: KindStatusReport, Name: "status_report", New: newPayload[StatusReport]},
	{Kind: KindTraceQuery, Name: "trace_query", New: newPayload[TraceQuery]},
	{Kind: KindTraceChunk, Name: "trace_chunk", New: newPayload[TraceChunk]},
	{Kind: KindConfigRefresh, Name: "config_refresh", New: newPayload[ConfigRefresh], Class: ClassHeartbeat},
	{Kind: KindConfigTimings, Name: "config_timings", New: newPayload[ConfigTimings], Class: ClassHeartbeat},

	// 210-229 orderd and the node: the next kinds.
	{Kind: KindHeartbeatProbe, Name: "heartbeat_probe", New: newPayload[Heartbeat], Class: ClassHeartbeat},
}

// byKind indexes registry by number; nil where no kind is registered.
var byKind = func() (t [256]*KindInfo) {
	names := map[string]bool{}
	for i := range registry {
		r := &registry[i]
		switch {
		case r.Kind == KindInvalid:
			panic("wire: kind 0 is KindInvalid and never registered")
		case t[r.Kind] != nil:
			panic("wire: kind " + itoa(int(r.Kind)) + " registered twice: " + t[r.Kind].Name + " and " + r.Name)
		case r.Name == "" || names[r.Name] || strings.Trim(r.Name, "abcdefghijklmnopqrstuvwxyz0123456789_") != "":
			panic("wire: kind " + itoa(int(r.Kind)) + ": name " + r.Name + " empty, taken or not snake_case")
		case r.New == nil:
			panic("wire: kind " + r.Name + " has no payload")
		}
		if _, ok := BlockOf(r.Kind); !ok {
			panic("wire: kind " + r.Name + " is outside every block")
		}
		names[r.Name] = true
		t[r.Kind] = r
	}
	return t
}()

// Info returns k's declaration, and false for a kind this version does
// not know.
func Info(k Kind) (KindInfo, bool) {
	if r := byKind[k]; r != nil {
		return *r, true
	}
	return KindInfo{}, false
}

// Registered returns every kind's declaration, in number order.
func Registered() []KindInfo {
	out := make([]KindInfo, 0, len(registry))
	for _, r := range byKind {
		if r != nil {
			out = append(out, *r)
		}
	}
	return out
}

// KindNamed returns the kind whose name is name, and whether there is one.
func KindNamed(name string) (Kind, bool) {
	for _, r := range byKind {
		if r != nil && r.Name == name {
			return r.Kind, true
		}
	}
	return KindInvalid, false
}

// Known reports whether k is a kind this version understands: a frame of
// any other kind fails to decode (DecodeUnknownKind) and cannot be encoded.
func (k Kind) Known() bool { return byKind[k] != nil }

// Kinds returns every known kind, in number order.
func Kinds() []Kind {
	var out []Kind
	for _, r := range byKind {
		if r != nil {
			out = append(out, r.Kind)
		}
	}
	return out
}

// Class returns k's class (ClassMessage for an unknown kind).
func (k Kind) Class() Class {
	if r := byKind[k]; r != nil {
		return r.Class
	}
	return ClassMessage
}

// Messages is how many of the notes' messages one frame of kind k
// carries (KindInfo.Messages; 1 for an unknown kind).
func (k Kind) Messages() int {
	if r := byKind[k]; r != nil {
		return r.Messages()
	}
	return 1
}

// String returns the kind's name, a stable label for logs and counters
// ("heartbeat", "election", ...), "invalid" for KindInvalid, or "kind(N)"
// for an unknown kind.
func (k Kind) String() string {
	if r := byKind[k]; r != nil {
		return r.Name
	}
	if k == KindInvalid {
		return "invalid"
	}
	return "kind(" + itoa(int(k)) + ")"
}
