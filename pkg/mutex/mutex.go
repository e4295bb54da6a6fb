package mutex

import (
	"errors"
	"fmt"
	"time"

	"github.com/synclab/synclab/pkg/clock"
	"github.com/synclab/synclab/pkg/core"
)

// Algorithm is a mutual-exclusion core: a core.Core that also says when it
// next needs Tick, takes requests from the driver's loop, and hands back
// typed outcomes. Every call runs on the driver's loop, like Step and Tick.
type Algorithm interface {
	core.Core
	core.Scheduler

	// Acquire queues r at local time now. The answer comes later as an
	// Outcome: Granted, or Lost if the request can never be granted.
	Acquire(now time.Time, r Request) (RequestID, error)
	// Renew asks that granted request id's lease run lease (0: the lease
	// it has) from now. The answer is Renewed or Lost, at once when the
	// algorithm can confirm at once, else after a round of messages.
	Renew(now time.Time, id RequestID, lease time.Duration) error
	// Release gives a granted lock back, or withdraws a waiting request.
	Release(now time.Time, id RequestID) error
	// Outcomes drains the outcomes since the last call; the driver calls it
	// after each Ready and after each Advance: the outcomes that came with
	// a Ready whose promise (core.Ready.Promise) was not yet on disk are
	// handed over only once its write is confirmed (at Advance, or at a
	// later Tick after a failed write; package doc, "Fences and the
	// disk").
	Outcomes() []Outcome
	// Lookup returns request id as it stands (waiting or granted).
	Lookup(id RequestID) (RequestStatus, bool)
	// Report is the typed status (Status of core.Core returns the same,
	// as any, for the generic daemon status).
	Report() Status
	// Guarantees is what the algorithm promises (see Guarantees).
	Guarantees() Guarantees
}

// RequestID names a request at the member that took it. IDs start at 1
// with every run of the core; a driver that hands them to clients
// qualifies them by the run (mutexd's INCARNATION-ID handles).
type RequestID uint64

// Mode is how a lock is held.
type Mode uint8

// Modes.
const (
	// Exclusive: one holder at a time (the zero value).
	Exclusive Mode = iota
	// Shared: several holders together, never beside an exclusive one.
	Shared
)

func (m Mode) String() string {
	switch m {
	case Exclusive:
		return "exclusive"
	case Shared:
		return "shared"
	}
	return fmt.Sprintf("mode(%d)", uint8(m))
}

// MarshalText writes the mode's name (JSON: "exclusive", "shared").
func (m Mode) MarshalText() ([]byte, error) { return []byte(m.String()), nil }

// UnmarshalText reads a mode's name.
func (m *Mode) UnmarshalText(b []byte) error {
	switch string(b) {
	case "exclusive", "":
		*m = Exclusive
	case "shared":
		*m = Shared
	default:
		return fmt.Errorf("mutex: mode %q: want exclusive or shared", b)
	}
	return nil
}

// Request is what a client asks for.
type Request struct {
	Lock   string        // 1-64 bytes of [A-Za-z0-9._:/@+-] (wire.ValidLockName)
	Mode   Mode          // Exclusive unless the algorithm offers Shared
	Lease  time.Duration // 0: the algorithm's longest
	Client string        // who asks, for status only
	// After is the vector timestamp of what the client has seen (a
	// program message's, `mutexd lock --after`): the request is granted
	// only after every request it names. Only an algorithm that
	// implements Causal takes it; the others refuse it (ErrBadVector).
	After clock.Vector
}

// Causal is implemented by an algorithm whose grants follow the causal
// order of the requests (the token-asking central token): each request is
// stamped with a vector timestamp, and a request is granted only after
// every request its stamp names. A client passes the stamp of what it has
// seen in Request.After.
type Causal interface {
	// Vector is what a program message sent now by a client of this
	// member carries: the stamp of the member's latest request (empty
	// before its first). An error wrapping ErrBadVector: this core does
	// not order by vectors after all (a variant that does not); another
	// error: it cannot give one now (its state is not on disk yet: ask
	// again later).
	Vector() (clock.Vector, error)
	// RequestVector is the stamp of request id, while it waits or holds.
	RequestVector(id RequestID) (clock.Vector, bool)
	// VectorText and ParseVector are the algorithm's text of a vector
	// (mutexd vector, --after, MUTEXD_VECTOR); ParseVector's errors wrap
	// ErrBadVector.
	VectorText(v clock.Vector) string
	ParseVector(s string) (clock.Vector, error)
}

// Errors every algorithm returns for the same refusal (wrapped with detail
// where there is some; test with errors.Is).
var (
	ErrBadLockName = errors.New("bad lock name: want 1-64 bytes of letters, digits and ._:/@+-")
	ErrBadLease    = errors.New("lease out of range")
	// ErrTooManyLocks, ErrQueueFull: this member's lock table or queue is
	// full.
	ErrTooManyLocks = errors.New("too many locks")
	ErrQueueFull    = errors.New("too many waiting requests")
	// ErrUnknownRequest: no such request (released, lost, never made).
	ErrUnknownRequest = errors.New("no such request")
	// ErrNotHolder: a renewal of a request that is still waiting.
	ErrNotHolder = errors.New("request does not hold its lock")
	// ErrExpired: a renewal or release that came after the lease ran out.
	ErrExpired = errors.New("lease expired")
	// ErrBadVector: a Request.After an algorithm cannot take (it does not
	// order by vector timestamps, or the vector names a non-member).
	ErrBadVector = errors.New("bad vector timestamp")
	// ErrSharedUnsupported: a Shared request to an algorithm without it.
	ErrSharedUnsupported = errors.New("shared mode is not offered by this algorithm")
)

// Outcome is a typed answer about one request: Granted, Renewed, Lost or
// Released.
type Outcome interface {
	Request() RequestID
	outcome()
}

// Granted: the request holds its lock from now until Expires (local time)
// unless renewed. Fence is strictly greater than every fence granted before
// for the lock, anywhere in the cluster, except that readers holding the
// lock together (Shared) share one; Epoch is the algorithm's epoch the
// grant was made in (the token ring's generation).
type Granted struct {
	ID      RequestID
	Lock    string
	Mode    Mode
	Fence   uint64
	Lease   time.Duration
	Expires time.Time
	Epoch   uint64
}

// Renewed: the lease now runs until Expires.
type Renewed struct {
	ID      RequestID
	Lock    string
	Fence   uint64
	Lease   time.Duration
	Expires time.Time
}

// Lost: the request lost its lock, or will never get it.
type Lost struct {
	ID     RequestID
	Lock   string
	Fence  uint64 // 0 if it was never granted
	Reason LossReason
}

// Released: the holder gave the lock back.
type Released struct {
	ID    RequestID
	Lock  string
	Fence uint64
}

func (o Granted) Request() RequestID  { return o.ID }
func (o Renewed) Request() RequestID  { return o.ID }
func (o Lost) Request() RequestID     { return o.ID }
func (o Released) Request() RequestID { return o.ID }
func (Granted) outcome()              {}
func (Renewed) outcome()              {}
func (Lost) outcome()                 {}
func (Released) outcome()             {}

// LossReason says why a lock was lost: one of the constants, or an
// algorithm's own (a short snake_case word, a metrics label).
type LossReason string

// Loss reasons every algorithm may give.
const (
	// Expired: the lease ran out before a renewal.
	Expired LossReason = "expired"
	// Superseded: the epoch the grant was made in was replaced (a newer
	// token, a new coordinator).
	Superseded LossReason = "superseded"
	// RenewRefused: the renewal could not be confirmed: a newer epoch
	// exists.
	RenewRefused LossReason = "renew_refused"
)

// LossReasons are the reasons every algorithm may give, in a fixed order
// (metrics show each at 0 before the first loss).
var LossReasons = []LossReason{Expired, Superseded, RenewRefused}

// Explain is the reason in words, for an operator.
func (r LossReason) Explain() string {
	switch r {
	case Expired:
		return "its lease expired before a renewal"
	case Superseded:
		return "a newer epoch replaced the one it was granted in (a newer token, a new coordinator)"
	case RenewRefused:
		return "a majority refused to confirm it (a newer epoch exists)"
	}
	return string(r)
}

// Fault is a failure an algorithm may or may not survive.
type Fault string

// Faults.
const (
	// Crash: a member (the holder included) crashes, and may restart.
	Crash Fault = "crash"
	// Pause: a member stops for longer than a lease and goes on as if
	// nothing happened (GC, SIGSTOP, a suspended VM).
	Pause Fault = "pause"
	// Partition: the network splits; a majority side goes on.
	Partition Fault = "partition"
	// Loss: messages are lost, duplicated or reordered.
	Loss Fault = "loss"
)

// Faults in a fixed order.
var Faults = []Fault{Crash, Pause, Partition, Loss}

// Guarantees is what an algorithm promises, shown in status, in the API
// and in docs/mutexd.md's table.
type Guarantees struct {
	// Survives: the faults after which the majority goes on granting and
	// no two holders ever hold a lock together by the fence's order.
	Survives []Fault `json:"survives"`
	// Messages is the cost of one entry (acquire, hold, release) in
	// theory, e.g. "0 (token here) to N+1 (a rotation)"; SyncDelay the
	// messages between one holder's release and the next one's grant.
	Messages  string `json:"messages_per_entry"`
	SyncDelay string `json:"sync_delay"`
	// Shared: whether Shared requests are offered.
	Shared bool `json:"shared"`
	// Protection is what protects the resource when a holder does not
	// know it lost the lock (a pause longer than the lease): the fence,
	// which the resource must check.
	Protection string `json:"protection"`
}

// SurvivesFault says whether f is among Survives.
func (g Guarantees) SurvivesFault(f Fault) bool {
	for _, s := range g.Survives {
		if s == f {
			return true
		}
	}
	return false
}
