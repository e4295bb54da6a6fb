package mutexcount

import (
	"fmt"
	"time"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/mutex"
)

// Hold keeps a core's outcomes from its driver while a promise of the
// core's durable state (an incarnation, an era, a generation, a term) is
// not on disk: the raft rule (core.Ready, core.Durable) applied to the
// outcomes, which are not messages and which a driver would otherwise
// hand to its clients whatever its write did. A grant's fence is built on
// those numbers; handed out and then lost with a crash before the write,
// the restarted member reads the older number and grants the same fence
// again. With two members or more the withheld messages already stop
// that (a grant needs an answer the member cannot ask for while its
// promise is unsaved), but a member that grants alone (a one-member
// cluster, a token or a vote it holds itself) sends nothing: only its
// outcome leaves.
//
// The rule: the outcomes drained since the last Ready leave with that
// Ready when it carries no promise and nothing is held; else they are held,
// in order behind what already is, until every promise is on disk. When
// the write of the Ready they came with succeeds they leave at its Advance
// (the core's clock has not moved since it judged their leases: a healthy
// disk changes nothing but that a driver hands them over after the write;
// a write slower than a lease hands over a grant with nothing left, which
// the client's own count, from before its request, refuses);
// when they waited across a failed write they leave at the next Tick,
// whose reading of the clock judges them again: a grant or a renewal whose
// lease ended meanwhile is dropped (counted: grants_unsaved,
// renewals_unsaved; said: mutex.EventGrantUnsaved), the request then ends
// the table's way (its lease expires). Lost and Released wait in line too,
// so that a client never hears of its request's end before its grant.
//
// A core embeds a Hold beside its core.Durable and calls Ready (after
// Durable.Ready), Advance (after Durable.Advance), Release at the start of
// Tick, and folds Deadline into its own.
type Hold struct {
	held []mutex.Outcome
	// fresh: every held outcome came with the last Ready, whose write
	// is the first they wait for.
	fresh bool
	// due: every promise is on disk; the held outcomes leave at the next
	// reading of the clock (Release).
	due    bool
	warned time.Time
}

// Ready is called from the core's Ready once its Durable filled rd: the
// outcomes drained since the last Ready (*outcomes) are held when rd
// carries a promise or outcomes are held already.
func (h *Hold) Ready(rd *core.Ready, outcomes *[]mutex.Outcome) {
	if !rd.Promise && len(h.held) == 0 {
		return
	}
	if rd.Promise {
		h.fresh = len(h.held) == 0
		h.due = false
	}
	h.held = append(h.held, *outcomes...)
	*outcomes = nil
}

// Advance is called from the core's Advance once its Durable has taken
// the driver's report: onDisk says that no promise is pending any more
// (!Durable.PromisePending()). Outcomes whose first write this was leave
// now, into *outcomes; those that waited across a failed write at the
// next Tick (Deadline, Release).
func (h *Hold) Advance(onDisk bool, outcomes *[]mutex.Outcome) {
	switch {
	case len(h.held) == 0:
	case !onDisk:
		h.fresh, h.due = false, false
	case h.fresh:
		*outcomes = append(h.held, *outcomes...)
		h.held, h.fresh = nil, false
	default:
		h.due = true
	}
}

// Held is how many outcomes wait for a write.
func (h *Hold) Held() int { return len(h.held) }

// Deadline asks for a reading of the clock at once (after now, the core's
// last) while held outcomes may leave.
func (h *Hold) Deadline(now time.Time) time.Time {
	if h.due && len(h.held) > 0 {
		return now.Add(time.Nanosecond)
	}
	return time.Time{}
}

// UnsavedRewarn is how soon another grant dropped for an unsaved write is
// said at WARN again (INFO between: a disk that keeps failing drops many).
const UnsavedRewarn = time.Minute

// Release is called at the start of the core's Tick with its reading of
// the clock: once every promise is on disk, the held outcomes leave into
// *outcomes, but for the grants and renewals whose lease has ended by
// now, each dropped, counted and said. They go before the outcomes made
// since (a release or renewal the client made in the same turn of the
// driver's loop, before the Tick): they came first (a review: a release
// reached the driver before the grant it ends).
func (h *Hold) Release(now time.Time, outcomes *[]mutex.Outcome, events *[]core.Event, counters map[string]uint64) {
	if !h.due {
		return
	}
	kept := make([]mutex.Outcome, 0, len(h.held)+len(*outcomes))
	defer func() { *outcomes = append(kept, *outcomes...) }()
	for _, o := range h.held {
		switch o := o.(type) {
		case mutex.Granted:
			if !now.Before(o.Expires) {
				counters["grants_unsaved"]++
				h.say(now, events, o.Lock, o.ID, o.Fence, "grant", now.Sub(o.Expires))
				continue
			}
		case mutex.Renewed:
			if !now.Before(o.Expires) {
				counters["renewals_unsaved"]++
				h.say(now, events, o.Lock, o.ID, o.Fence, "renewal", now.Sub(o.Expires))
				continue
			}
		}
		kept = append(kept, o)
	}
	h.held, h.due = nil, false
}

func (h *Hold) say(now time.Time, events *[]core.Event, lock string, id mutex.RequestID, fence uint64, what string, late time.Duration) {
	warn := h.warned.IsZero() || now.Sub(h.warned) >= UnsavedRewarn
	if warn {
		h.warned = now
	}
	*events = append(*events, core.Event{Name: mutex.EventGrantUnsaved, Warn: warn,
		Msg: fmt.Sprintf("%s: request %d's %s (fence %d) was never handed to its client: it depends on state this member could not write, and its lease ended %v before a write succeeded; the request ends as its lease does, and the client asks again. Make the state directory writable (status: Persist; free space or fix permissions under --state-dir)",
			lock, id, what, fence, late.Round(time.Millisecond)),
		Args: []any{"lock", lock, "request", uint64(id), "fence", fence, "what", what, "late", late}})
}
