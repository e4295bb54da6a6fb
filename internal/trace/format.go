package trace

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/synclab/synclab/pkg/clock"
)

// Version is the format version this package writes and reads.
const Version = 1

// Event types (Event.Ev).
const (
	EvSend      = "send"
	EvRecv      = "recv"
	EvLocal     = "local"
	EvDrop      = "drop"
	EvTruncated = "truncated" // the writer's last line: Dropped events were not written
)

// Clock names (Header.Clock): which clock the events' T come from.
const (
	ClockSystem = "system" // the host's system clock
	ClockSim    = "sim"    // a daemon's simulated clock (--clock sim)
	ClockTrue   = "true"   // the simulator's ground-truth time
)

// Header is a trace's first line.
type Header struct {
	Version int       `json:"synclab_trace"`
	Daemon  string    `json:"daemon"`
	ID      uint32    `json:"id"`
	Host    string    `json:"host"`
	Cluster string    `json:"cluster"`
	Members []uint32  `json:"members"`
	Clock   string    `json:"clock"`
	Started time.Time `json:"started"`
}

// Event is every following line. Which fields are set depends on Ev (see
// the format): Kind, Frame, From, To, Term and Fields for send and recv;
// Name, Msg and Args for local; Reason (and what was decoded) for drop;
// Dropped for truncated.
type Event struct {
	T       time.Time `json:"t"`
	Lamport uint64    `json:"lamport,omitempty"`
	VC      VC        `json:"vc,omitempty"`
	// MaxError is the host clock's maximum error (its error bound, as
	// the kernel or a simulated clock keeps it) when the event was
	// recorded, in nanoseconds, while the clock was synchronised (0: no
	// bound claimed). TrueOffset is a simulated clock's exact error
	// (reading minus true time, ns; nil: unknown): the ground truth a run
	// with --clock sim carries. Both are written by daemons (Log.SetClock).
	MaxError   int64  `json:"max_error_ns,omitempty"`
	TrueOffset *int64 `json:"true_offset_ns,omitempty"`
	Ev         string `json:"ev"`

	Kind   string         `json:"kind,omitempty"`
	Frame  string         `json:"frame,omitempty"`
	From   uint32         `json:"from,omitempty"`
	To     uint32         `json:"to"`
	Term   uint64         `json:"term,omitempty"`
	Fields map[string]any `json:"fields,omitempty"`
	// Peer is the other end of a datagram exchanged with a host that is
	// not a member (an NTP server or client, a `timed query`): its
	// address; From (a receive) or To (a send) is 0 then.
	Peer string `json:"peer,omitempty"`

	Name string         `json:"name,omitempty"`
	Msg  string         `json:"msg,omitempty"`
	Args map[string]any `json:"args,omitempty"`

	Reason  string `json:"reason,omitempty"`
	Dropped uint64 `json:"dropped,omitempty"`

	// Line is the event's line number in the file it was read from (the
	// header is line 1; 0: not read from a file). It is not written.
	Line int `json:"-"`
}

// FrameID is the `frame` of a frame sent by sender with sequence number
// seq: unique per frame, the same on its send and every receive.
func FrameID(sender uint32, seq uint64) string {
	return strconv.FormatUint(uint64(sender), 10) + ":" + strconv.FormatUint(seq, 10)
}

// VC is a vector timestamp as a trace holds it: member ID to counter, zero
// entries omitted. It marshals as the format's object with string keys.
type VC map[uint32]uint64

// VCOf converts a clock.Vector.
func VCOf(v clock.Vector) VC {
	if v.Len() == 0 {
		return nil
	}
	vc := make(VC, v.Len())
	for _, id := range v.IDs() {
		vc[id] = v.Get(id)
	}
	return vc
}

// Vector converts back to a clock.Vector.
func (vc VC) Vector() clock.Vector {
	var v clock.Vector
	for id, n := range vc {
		v.Set(id, n)
	}
	return v
}

// MarshalJSON writes the entries in ascending ID order (encoding/json sorts
// map keys as strings, "10" before "2"), so a trace reads naturally.
func (vc VC) MarshalJSON() ([]byte, error) {
	v := vc.Vector()
	b := []byte{'{'}
	for i, id := range v.IDs() {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = strconv.AppendUint(b, uint64(id), 10)
		b = append(b, '"', ':')
		b = strconv.AppendUint(b, v.Get(id), 10)
	}
	return append(b, '}'), nil
}

// UnmarshalJSON reads the object, refusing keys that are not member IDs.
func (vc *VC) UnmarshalJSON(b []byte) error {
	var m map[string]uint64
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	*vc = make(VC, len(m))
	for k, n := range m {
		id, err := strconv.ParseUint(k, 10, 32)
		if err != nil || id == 0 {
			return fmt.Errorf("vector entry %q: not a member ID", k)
		}
		if n != 0 {
			(*vc)[uint32(id)] = n
		}
	}
	return nil
}

// String formats the vector as the notes do: (3,4,0) over members.
func (vc VC) String(members []uint32) string {
	parts := make([]string, len(members))
	for i, id := range members {
		parts[i] = strconv.FormatUint(vc[id], 10)
	}
	return "(" + strings.Join(parts, ",") + ")"
}
