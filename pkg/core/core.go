package core

import (
	"net/netip"
	"time"

	"github.com/synclab/synclab/pkg/clock"
	"github.com/synclab/synclab/pkg/wire"
)

// Broadcast as a Message's To sends it to every other member (one multicast
// frame where a group is configured, else one unicast frame per member).
const Broadcast uint32 = 0

// Message is a synclab frame between cluster members, as a core sees it.
type Message struct {
	From    uint32    // sender's member ID (set by the node on receive)
	To      uint32    // receiver's member ID, or Broadcast
	Kind    wire.Kind // what the payload is
	Term    uint64    // sender's term or epoch; the core's own rules apply
	Payload []byte    // the kind's encoding, from pkg/wire

	// Stream asks for the member's TCP link (ordered, retried while the
	// peer is reachable) instead of a UDP datagram. Ordered: a frame is
	// never delivered after one sent later on the link, across its
	// reconnects too, for members with an IP of their own (internal/
	// transport, Streams). Delivery is still at most once: a frame is
	// lost when a write times out or the link resets, and, with the link
	// up and no hint to either core, when the receiving node refuses it
	// or the sending node withholds it (configuration agreement,
	// internal/node): a core resends what it needs on a timer of its own.
	Stream bool
	// Report asks the driver to tell the core when this datagram frame
	// really left: right after the write it steps the core with the same
	// message marked Local. (Stream frames are not reported.)
	Report bool
	// Local marks that report, made by the driver, never a frame from the
	// network: Sent is the transmit time patched into the frame, Time when
	// it left (the kernel's transmit stamp where available, else Sent).
	Local bool

	// Lamport is the message's Lamport time: one per logical send, the
	// same in every frame of a broadcast's fan-out. On send, zero lets the
	// node take the stamp (Lamport.Send on the node's clock); a core that
	// needs its own stamp (to queue its own request with the time the
	// others see) takes it from Env.Lamport.Send and sets it here, and the
	// node uses it as is (one ahead of the node's clock, which only a
	// core's bug makes, is replaced by a fresh stamp and counted). On
	// receive, the sender's stamp, already merged into the node's clock.
	// In a Local report, the stamp the frame carried.
	Lamport uint64
	// Vector is the message's vector timestamp, when the node keeps vector
	// clocks (a core that implements VectorUser, or tracing): on receive,
	// the sender's (already merged into the node's clock); in a Local
	// report, the one the frame carried, so a core learns its own send's
	// by asking for the report (Report). Empty otherwise; the node sets
	// it, a core never does. Do not modify it: it may be shared.
	Vector clock.Vector

	// Set by the node on receive:
	Sent time.Time // sender's clock when the frame left (patched in just before the write); zero if unknown
	Time time.Time // local clock when the frame arrived (kernel receive stamp where available)
	// Checked: configuration agreement compared the sender's announced
	// configuration with this member's, and they match (every parameter
	// the service agrees on, a mutex's --lease among them). False without
	// agreement, and for a member admitted unchecked (a build that never
	// announces one): a core that trusts a bound of its own configuration
	// for what a member claims applies it only when this is set.
	Checked bool
}

// VectorUser is implemented by a core that needs vector timestamps
// (causal multicast): the node keeps a vector clock from the start and
// stamps every frame with it, as it does when tracing turns vectors on
// while running (node.SetVectors).
type VectorUser interface {
	UsesVectors() bool
}

// Datagram is foreign-protocol traffic (NTP) with any address, member or not.
type Datagram struct {
	Addr netip.AddrPort // peer (source on receive, destination on send)
	Data []byte         // the whole packet
	Time time.Time      // local clock at receipt (kernel stamp where available)

	// NTPStamp asks the sender to write the local transmit time into the
	// NTP transmit timestamp field (bytes 40-47) just before the write.
	NTPStamp bool
	// NTPSign, with NTPStamp, has the sender append an NTP MAC to Data
	// (the NTP packet) after it wrote the transmit time, so that a signed
	// reply carries the time it left, like an unsigned one.
	NTPSign *wire.NTPSigner

	// Frame says Data is a synclab frame as wire.Frame.AppendBinary encodes
	// it, unsealed, for a host that need not be a member (Cristian's
	// request and reply travel on timed's NTP socket): the driver patches
	// its transmit timestamp and seals it with the node's key just before
	// the write, exactly as it finishes member frames, and reports it back
	// like NTPStamp.
	Frame bool

	// Local marks a local report, never a packet from the network (as
	// Message.Local does): after writing a datagram with NTPStamp or
	// Frame, the driver steps the core with the bytes as written (Data)
	// and the transmit time it patched in (Time), so that a client knows
	// its exact T1.
	Local bool

	// TxStamp, on an answer (Answerer), asks the driver for the kernel's
	// transmit stamp of the write, reported with AnswerStamper.AnswerSent.
	TxStamp bool
}

// Event is something a core reports: a leader elected, a token acquired, a
// clock slewed. Args are slog-style alternating keys and values; the daemon
// logs the event, counts it by Name, and runs the hooks bound to Name.
type Event struct {
	Name string
	Msg  string
	Args []any
	// BeforeSave says that what the event reports does not depend on the
	// Ready's State or Entries being written: a driver may report it
	// before it writes (the daemon reports the Ready's leading run of
	// them before its fdatasync, so that events keep their order). A core
	// that marks one says what a crash between the report and the write
	// repeats (orderd's deliveries of the total order: its doc.go).
	BeforeSave bool
	// Warn says that the event needs the administrator's attention: a
	// fault the core works around but cannot repair (a broken link), or
	// something it promised less than usual for (orderd's numbers skipped
	// through a snapshot). The daemon logs it at WARN rather than INFO. A
	// core that marks one says it once per episode, not per frame.
	Warn bool
}

// Ready is everything a core wants done, drained by Ready().
type Ready struct {
	// State, when non-nil, is the core's durable state. The driver persists
	// it atomically before sending Messages, and then tells the core how
	// that went (Advancer).
	State []byte
	// Promise says that State holds something the Messages depend on (a
	// term, a promised generation): if it cannot be written, the driver
	// must send none of them. Without Promise nothing the Messages say
	// depends on the write, and a driver may send them before it writes
	// (the daemon does for a core that appends, see Entries). A core that uses Durable keeps handing State
	// over, marked so, with every Ready until a write succeeds; so a message
	// that depends on unsaved state can never leave.
	Promise bool
	// Entries, when State is nil, are records to append to the core's
	// log, in order: a core whose state is large and changes a little at
	// a time (a replicated log) hands over what changed instead of the
	// whole state. The driver appends them durably before sending
	// Messages, exactly as it writes State (Promise applies alike), and
	// hands them back in Env.Log after a restart, after the State they
	// follow. A Ready with State starts the log afresh: State is the
	// whole state as of this Ready, so the driver writes it as the new
	// snapshot and drops the log behind it (and any Entries beside it).
	// See the package doc.
	Entries [][]byte

	Adjustments []clock.Adjustment
	Messages    []Message
	Datagrams   []Datagram
	Events      []Event
}

// Empty reports whether there is nothing to do.
func (rd Ready) Empty() bool {
	return rd.State == nil && len(rd.Entries) == 0 && len(rd.Adjustments) == 0 && len(rd.Messages) == 0 &&
		len(rd.Datagrams) == 0 && len(rd.Events) == 0
}

// Core is a sans-IO protocol state machine.
type Core interface {
	// Step feeds one received, validated frame.
	Step(m Message) error
	// StepDatagram feeds one received foreign-protocol packet. Cores that
	// speak no foreign protocol return ErrUnexpectedDatagram.
	StepDatagram(d Datagram) error
	// Tick advances the core by one tick; now is the local clock's reading.
	Tick(now time.Time)
	// Ready drains what the core wants done since the last call.
	Ready() Ready
	// Status is the core's view for `X status`; it must marshal to JSON.
	Status() any
}

// Adjuster is implemented by a core whose model of the clock depends on
// when its Ready's Adjustments took effect: a clock discipline counts a
// slew from the tick that decided it, and the clock begins it when the
// driver applies it, milliseconds later on a busy host. After applying a
// Ready's Adjustments the driver calls Adjusted with the clock's reading
// right after (nothing when it applied none but AdjustSync, which changes
// nothing the core models).
type Adjuster interface {
	Adjusted(at time.Time)
}

// Advancer is implemented by a core that keeps durable state (usually
// through Durable). The driver calls Advance once it has acted on a Ready:
// saved says that the Ready's State, if it had one, is on disk. A core
// treats its state as unsaved until then, as etcd raft's RawNode does
// between Ready and Advance.
type Advancer interface {
	Advance(saved bool)
}

// Withdrawer is implemented by a core that can take back what a Ready
// whose write failed promised a caller (orderd's multicasts: a send
// answered "not sent" must never be delivered, or the caller who sends
// again delivers it twice). The driver calls Withdraw right after
// Advance(false), and only when it knows that no part of that write can
// be read back (the state on disk is what the last good write left, so
// a restart cannot bring it back) and that none of the Ready's Messages
// left (Promise: it withheld them). events are the Ready's events not
// reported yet; the core returns those that still stand (without the
// ones announcing what it took back), which the driver treats as it
// treats any failed write's events, and how many calls' promises it took
// back. all says that everything the write promised to the calls made
// since the Ready before it was taken back: the driver may answer them
// "not done, never will be" (all is false when it took back nothing).
// Otherwise the core keeps it pending, as after any failed write (the
// next Ready carries it again).
type Withdrawer interface {
	Withdraw(events []Event) (kept []Event, taken int, all bool)
}
