package node

import (
	"maps"

	"github.com/synclab/synclab/pkg/wire"
)

// Stats counts frames by kind and drops by reason. Reasons are short stable
// labels (wire.Reason, plus "unknown_member", "wrong_source",
// "implausible_seq", "pre_restart", "lamport_ahead", "bad_vector", "unsaved",
// "rejected_<kind>", "bad_destination", "unsent_<kind>", "datagram_rejected",
// "withheld_<kind>" (a core's frame not sent to a member whose frames
// configuration agreement refuses),
// configuration agreement's, and the status queries' "status_limited",
// "status_unsolicited", "status_report_trimmed", "unsent_status_report")
// so that status and metrics can show them as they are.
type Stats struct {
	FramesIn     map[string]uint64 `json:"frames_in"`  // accepted frames by kind
	FramesOut    map[string]uint64 `json:"frames_out"` // frames encoded for sending by kind
	Dropped      map[string]uint64 `json:"dropped"`    // refused input by reason
	DatagramsIn  uint64            `json:"datagrams_in"`
	DatagramsOut uint64            `json:"datagrams_out"`
	// Resynced counts frames taken below a sender's window without keys,
	// where the window restarted (see Node.Receive): a forger's numbers
	// or a sender that lost its state.
	Resynced uint64 `json:"resynced"`
	// Series counts the times this node moved to a new series because a
	// peer restarted (or its counter ran out).
	NewSeries uint64 `json:"new_series"`
	// StaleDeadlines counts the times the core's deadline, read right
	// after a Tick, was not after that tick (see NextTick): a bug in the
	// core, which the driver survives by ticking it StaleRetry later.
	StaleDeadlines uint64 `json:"stale_deadlines,omitempty"`
	// OwnStampsAhead counts Lamport stamps a core set on its message
	// (core.Message.Lamport) ahead of the node's clock: not taken from it,
	// a bug in the core; the node stamped the message itself.
	OwnStampsAhead uint64 `json:"own_stamps_ahead,omitempty"`
	// RestartNotices counts the KindEpochRefused this node sent, after a
	// restart with keys, to members whose epochs it saved, before their
	// frames came (see announceRestart).
	RestartNotices uint64 `json:"restart_notices,omitempty"`
	// Hints counts the transport's hints about members by cause
	// (Node.Hint; core.HintCause's names).
	Hints map[string]uint64 `json:"hints,omitempty"`
}

func newStats() Stats {
	return Stats{
		FramesIn:  map[string]uint64{},
		FramesOut: map[string]uint64{},
		Dropped:   map[string]uint64{},
	}
}

func (s *Stats) in(k wire.Kind)     { s.FramesIn[k.String()]++ }
func (s *Stats) out(k wire.Kind)    { s.FramesOut[k.String()]++ }
func (s *Stats) drop(reason string) { s.Dropped[reason]++ }
func (s *Stats) clone() Stats {
	c := *s
	c.FramesIn = maps.Clone(s.FramesIn)
	c.FramesOut = maps.Clone(s.FramesOut)
	c.Dropped = maps.Clone(s.Dropped)
	c.Hints = maps.Clone(s.Hints)
	return c
}

// TotalDropped is the number of refused inputs of every reason.
func (s Stats) TotalDropped() uint64 {
	var t uint64
	for _, v := range s.Dropped {
		t += v
	}
	return t
}
