package wire

// Kind identifies the message a synclab frame carries.
//
// ONLY APPEND TO THIS LIST. A kind's number is on the wire: renumbering or
// reusing one makes old and new nodes misread each other.
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

	// Kinds 17-255 are allocated in blocks, one per algorithm family, so
	// that algorithms built side by side never take the same number. A
	// family appends its kinds inside its block (and names them in
	// kindNames), starting at the block's first number:
	//   17-19   token ring
	//   20-29   mutex: central coordinator
	//   30-39   mutex: Ricart-Agrawala, Lamport's distributed mutex
	//   40-49   mutex: Maekawa, majority quorum
	//   50-69   elections: the ring elections (naive, id-list,
	//           Chang-Roberts, Franklin, Fredrickson-Lynch)
	//   70-89   elections: Yo-Yo, the eventual leader, the majority election
	//   90-119  orderd: reliable, causal and total order multicast, the RSM
	//   120-255 free
)

// kindNames are the kinds' stable labels for logs and counters; a kind is
// Known exactly when it has a name here.
var kindNames = [...]string{
	KindInvalid:         "invalid",
	KindHeartbeat:       "heartbeat",
	KindElection:        "election",
	KindAnswer:          "answer",
	KindCoordinator:     "coordinator",
	KindLeaderHeartbeat: "leader_heartbeat",
	KindTimeRequest:     "time_request",
	KindTimeReply:       "time_reply",
	KindClockPoll:       "clock_poll",
	KindClockReading:    "clock_reading",
	KindClockAdjust:     "clock_adjust",
	KindClockAdjustAck:  "clock_adjust_ack",
	KindToken:           "token",
	KindTokenAck:        "token_ack",
	KindRingProbe:       "ring_probe",
	KindRingProbeReply:  "ring_probe_reply",
	KindEpochRefused:    "epoch_refused",
	// 17-19 token ring

	// 20-29 mutex: central coordinator

	// 30-39 mutex: Ricart-Agrawala, Lamport

	// 40-49 mutex: Maekawa, majority quorum

	// 50-69 elections: rings

	// 70-89 elections: Yo-Yo, eventual leader, majority

	// 90-119 orderd
	KindOrderRecord:       "order_record",
	KindOrderStreamAck:    "order_stream_ack",
	KindOrderSubmit:       "order_submit",
	KindOrderAppend:       "order_append",
	KindOrderAppendAck:    "order_append_ack",
	KindOrderRecover:      "order_recover",
	KindOrderRecoverReply: "order_recover_reply",
	KindOrderFetch:        "order_fetch",
	KindOrderFetchReply:   "order_fetch_reply",
	KindOrderSnapshot:     "order_snapshot",
}

// Known reports whether k is a kind this version understands: a frame of
// any other kind fails to decode (DecodeUnknownKind) and cannot be encoded.
func (k Kind) Known() bool {
	return k > KindInvalid && int(k) < len(kindNames) && kindNames[k] != ""
}

// Kinds returns every known kind, in number order.
func Kinds() []Kind {
	var out []Kind
	for k := range kindNames {
		if Kind(k).Known() {
			out = append(out, Kind(k))
		}
	}
	return out
}

// String returns the kind's name, a stable label for logs and counters
// ("heartbeat", "election", ...), or "kind(N)" for an unknown kind.
func (k Kind) String() string {
	if int(k) < len(kindNames) && kindNames[k] != "" {
		return kindNames[k]
	}
	return "kind(" + itoa(int(k)) + ")"
}

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
