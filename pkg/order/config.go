package order

import (
	"errors"
	"fmt"
	"time"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/elect"
	"github.com/synclab/synclab/pkg/elect/bully"
	"github.com/synclab/synclab/pkg/liveness"
)

// Total names how the total order is made.
type Total uint8

// Total-order algorithms.
const (
	// Sequencer: an elected sequencer numbers every message; a number is
	// delivered once a majority holds it (see doc.go).
	Sequencer Total = iota + 1
	// Lamport: the notes' distributed algorithm, Lamport stamps and an
	// acknowledgement from every member to every member.
	Lamport
)

func (t Total) String() string {
	switch t {
	case Sequencer:
		return "sequencer"
	case Lamport:
		return "lamport"
	}
	return fmt.Sprintf("total(%d)", uint8(t))
}

// ParseTotal reads a Total's name.
func ParseTotal(s string) (Total, error) {
	switch s {
	case "sequencer":
		return Sequencer, nil
	case "lamport":
		return Lamport, nil
	}
	return 0, fmt.Errorf("unknown total order %q (known: sequencer, lamport)", s)
}

// Config configures a Core. Zero fields take the defaults of
// DefaultLANConfig; every duration is on the local clock.
type Config struct {
	// Total is how total order is made. Default Sequencer.
	Total Total
	// Retry is how long a sender waits for an acknowledgement before it
	// sends again (stream records, submissions, log entries). It doubles
	// per silent try up to 16 x Retry, so a member that is down costs
	// a few frames a second. Default 40 ms.
	Retry time.Duration
	// Window bounds the records of this member's stream that some member
	// has not acknowledged: a multicast beyond it is refused (ErrBusy)
	// until the slowest member catches up. It also bounds how far ahead
	// of the next expected record a receiver holds records back. Default
	// 256; at most MaxWindow, and MaxUnkeyedWindow when Unkeyed (then
	// settleWindows x Window records may be kept waiting to settle: the
	// records kept are bounded by MaxWindow either way).
	Window int
	// RelayAfter is how long this member holds a record of another
	// member's stream without hearing that every member holds it before
	// it passes it on to the members that lack it (its sender may have
	// crashed mid-fan-out); a sender says how far every member holds its
	// stream 3/4 RelayAfter after the first record it has not yet said it
	// of (relay.go). Default 3 s.
	RelayAfter time.Duration
	// MaxSubmits bounds this member's total-order messages waiting for
	// their number (sequencer). Default 256.
	MaxSubmits int
	// MaxUncommitted bounds the sequencer's numbered but uncommitted
	// entries: submissions beyond it wait. Default 64.
	MaxUncommitted int
	// KeepLog is how many delivered log entries a member keeps for the
	// members that lag (and for a sequencer that takes over). The log is
	// part of the state written before every frame that depends on it, so
	// it is kept short. Default 256.
	KeepLog int
	// Heartbeat is how often the sequencer repeats its commit point to a
	// member that lags. Default 50 ms.
	Heartbeat time.Duration
	// CommitDelay is how long the sequencer, while numbers are in
	// flight, waits for an Append to carry a new commit point to a member
	// before it sends it alone: under load the next message's Append
	// carries it (the notes' N frames per multicast). An idle sequencer
	// (everything numbered committed) sends it alone at once: N-1 frames
	// more for an isolated multicast. Default 2 ms; at most Heartbeat.
	CommitDelay time.Duration
	// RecordDelay is how long a record that holds only the sequencer's
	// commit point and the deliveries announced before their record may
	// wait for the next write before it is written alone (lazy.go): a
	// crash in between repeats those deliveries at the restart, at the
	// same numbers. Default 50 ms.
	RecordDelay time.Duration
	// Election builds the sequencer's election from the Env the core hands
	// it. Default bully with DefaultLANConfig, reserving
	// (SequencerElection).
	Election func(env core.Env) (elect.Elector, error)
	// Machine, when set, is the replicated state machine the total order
	// is applied to (in the core, so that its state is persisted with the
	// position it reflects). New returns an empty one.
	Machine func() StateMachine
	// History is how many delivered messages are kept for Deliveries'
	// readers (orderd log). Default 1024.
	History int
	// Unkeyed says that the cluster's frames carry no MAC (orderd
	// --insecure): anyone can send a frame in a member's name. A member's
	// acknowledgement of this member's stream then lets a record be
	// trimmed only once it stood 8 x Retry with no lower word of that
	// member stamped after it, the member being asked meanwhile, and a
	// holding of this member's own stream is answered (stream.go,
	// "Acknowledgements without a key"). Default false: with a key
	// acknowledgements are trusted as they come.
	Unkeyed bool
}

// MaxWindow is the largest Window; MaxUnkeyedWindow the largest without a
// key, where up to settleWindows x Window records are kept.
const (
	MaxWindow        = 1 << 16
	MaxUnkeyedWindow = MaxWindow / settleWindows
)

// StateMachine is a deterministic state machine applied to the totally
// ordered messages: the same messages in the same order give the same
// state at every replica.
type StateMachine interface {
	// Apply applies one message; its result is reported with the
	// delivery (an error is a refused command, still in the order).
	Apply(msg []byte) (string, error)
	// Snapshot encodes the state; Restore replaces the state with one.
	Snapshot() []byte
	Restore(b []byte) error
}

// DefaultLANConfig returns the defaults for a LAN.
func DefaultLANConfig() Config {
	return Config{Total: Sequencer, Retry: 40 * time.Millisecond, RelayAfter: 3 * time.Second, Window: 256, MaxSubmits: 256,
		MaxUncommitted: 64, KeepLog: 256, Heartbeat: 50 * time.Millisecond, CommitDelay: 2 * time.Millisecond, RecordDelay: 50 * time.Millisecond, History: 1024}
}

// ErrConfig is wrapped by New's error for a configuration it refuses.
var ErrConfig = errors.New("order: invalid config")

func (c *Config) validate() error {
	d := DefaultLANConfig()
	if c.Total == 0 {
		c.Total = d.Total
	}
	if c.Retry == 0 {
		c.Retry = d.Retry
	}
	if c.Window == 0 {
		c.Window = d.Window
	}
	if c.RelayAfter == 0 {
		c.RelayAfter = d.RelayAfter
	}
	if c.MaxSubmits == 0 {
		c.MaxSubmits = d.MaxSubmits
	}
	if c.MaxUncommitted == 0 {
		c.MaxUncommitted = d.MaxUncommitted
	}
	if c.KeepLog == 0 {
		c.KeepLog = d.KeepLog
	}
	if c.Heartbeat == 0 {
		c.Heartbeat = d.Heartbeat
	}
	if c.CommitDelay == 0 {
		c.CommitDelay = d.CommitDelay
	}
	if c.History == 0 {
		c.History = d.History
	}
	if c.RecordDelay == 0 {
		c.RecordDelay = d.RecordDelay
	}
	if c.Election == nil {
		c.Election = func(env core.Env) (elect.Elector, error) {
			return bully.New(env, SequencerElection(bully.DefaultLANConfig()))
		}
	}
	switch {
	case c.Total != Sequencer && c.Total != Lamport:
		return fmt.Errorf("%w: total order %v", ErrConfig, c.Total)
	case c.Window < 1 || c.Window > MaxWindow:
		return fmt.Errorf("%w: Window %d: want 1 to %d", ErrConfig, c.Window, MaxWindow)
	case c.Unkeyed && c.Window > MaxUnkeyedWindow:
		return fmt.Errorf("%w: Window %d: without a key at most %d (%d x Window records may wait there for their acknowledgements to settle, "+
			"as many as %d with a key): give the cluster a key, or a smaller window", ErrConfig, c.Window, MaxUnkeyedWindow, settleWindows, MaxWindow)
	case c.RelayAfter < 2*c.Retry:
		return fmt.Errorf("%w: RelayAfter %v: want at least 2 x Retry (%v)", ErrConfig, c.RelayAfter, 2*c.Retry)
	case c.CommitDelay < 0 || c.CommitDelay > c.Heartbeat:
		return fmt.Errorf("%w: CommitDelay %v: want 0 to Heartbeat (%v)", ErrConfig, c.CommitDelay, c.Heartbeat)
	case c.RecordDelay < 0 || c.RecordDelay > time.Minute:
		return fmt.Errorf("%w: RecordDelay %v: want 0 to a minute", ErrConfig, c.RecordDelay)
	case c.MaxSubmits < 1 || c.MaxUncommitted < 1 || c.KeepLog < 1 || c.History < 1:
		return fmt.Errorf("%w: MaxSubmits %d, MaxUncommitted %d, KeepLog %d, History %d must be positive",
			ErrConfig, c.MaxSubmits, c.MaxUncommitted, c.KeepLog, c.History)
	}
	if err := liveness.CheckTimeout("Retry", c.Retry); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if err := liveness.CheckTimeout("Heartbeat", c.Heartbeat); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return nil
}

// SequencerElection is bully's configuration c as the sequencer's election
// runs it: reserving (bully.Config.Reserve), so that a member is elected,
// says so and sequences only in a term a write of its state covers. Without
// it a member whose disk failed took the role and reported elected in a term
// on no disk, and after a restart it read the older term and claimed the
// same one again: one term led in two lives.
func SequencerElection(c bully.Config) bully.Config {
	c.Reserve = true
	return c
}
