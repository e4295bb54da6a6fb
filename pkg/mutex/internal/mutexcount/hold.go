package mutexcount

import (
	"fmt"
	"slices"
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
// The events of the held outcomes (Drain's: lock_granted, lock_renewed,
// lock_lost, lock_released) wait with them and are reported when they
// leave, so that the log says a request holds its lock when its client
// can know it (a review: lock_granted was logged before the write, for a
// grant a crash then lost). A grant or renewal still held when a write
// fails is said instead (mutex.EventGrantHeld, INFO), once; Unsaved and
// Mark show it in the core's Lookup and status.
//
// A core embeds a Hold beside its core.Durable and calls Ready (after
// Durable.Ready), Advance (after Durable.Advance), Release at the start of
// Tick, Mark after the table's Fill and Unsaved in its Lookup, and folds
// Deadline into its own.
type Hold struct {
	held []mutex.Outcome
	// events[i] is held[i]'s event (Name "": none found), reported
	// when it leaves.
	events []core.Event
	// said: held[:said] were said held (EventGrantHeld).
	said int
	// fresh: every held outcome came with the last Ready, whose write
	// is the first they wait for.
	fresh bool
	// due: every promise is on disk; the held outcomes leave at the next
	// reading of the clock (Release).
	due bool
	// unread: events left the hold at an Advance, after the Ready that
	// reports events: the next Ready must come at once (Deadline).
	unread bool
	warned time.Time
}

// Ready is called from the core's Ready once its Durable filled rd: the
// outcomes drained since the last Ready (*outcomes) are held when rd
// carries a promise or outcomes are held already, and their events are
// taken out of rd.Events to wait with them.
func (h *Hold) Ready(rd *core.Ready, outcomes *[]mutex.Outcome) {
	h.unread = false
	if !rd.Promise && len(h.held) == 0 {
		return
	}
	if rd.Promise {
		h.fresh = len(h.held) == 0
		h.due = false
	}
	// Backward, each taking the last event of its name and request: two
	// renewals of one request drained together each keep their own
	// (review-mine), and an earlier outcome's released before stays.
	events := make([]core.Event, len(*outcomes))
	for i, o := range slices.Backward(*outcomes) {
		events[i] = takeEvent(&rd.Events, o)
	}
	h.held = append(h.held, *outcomes...)
	h.events = append(h.events, events...)
	*outcomes = nil
}

// takeEvent removes outcome o's event (Drain's) from *events and
// returns it (Name "": none there). The last of its name and request: an
// earlier one is an outcome of the same request released before o (a
// renewal let go at the last write's Advance, whose event waited in the
// core for this Ready), and taken in o's place it was held while o's
// went out before its client had o (review-mutex5).
func takeEvent(events *[]core.Event, o mutex.Outcome) core.Event {
	name := outcomeEvent(o)
	for i, e := range slices.Backward(*events) {
		if e.Name != name {
			continue
		}
		if id, ok := argOf(e.Args, "request"); ok && id == uint64(o.Request()) {
			*events = append((*events)[:i:i], (*events)[i+1:]...)
			return e
		}
	}
	return core.Event{}
}

// outcomeEvent is the event Drain reports with o.
func outcomeEvent(o mutex.Outcome) string {
	switch o.(type) {
	case mutex.Granted:
		return mutex.EventGranted
	case mutex.Renewed:
		return mutex.EventRenewed
	case mutex.Lost:
		return mutex.EventLost
	case mutex.Released:
		return mutex.EventReleased
	}
	return ""
}

func argOf(args []any, key string) (uint64, bool) {
	for i := 0; i+1 < len(args); i += 2 {
		if k, ok := args[i].(string); ok && k == key {
			v, ok := args[i+1].(uint64)
			return v, ok
		}
	}
	return 0, false
}

// Advance is called from the core's Advance once its Durable has taken
// the driver's report: onDisk says that no promise is pending any more
// (!Durable.PromisePending()). Outcomes whose first write this was leave
// now, in front of *outcomes, and their events in front of *events
// (reported with the next Ready, which Deadline asks for at once): both
// came before anything the core made since their Ready, in the same order
// as Release keeps (a driver that stepped the core between a Ready and its
// Advance would otherwise log a later release before the grant it ends:
// review-last); those that waited across
// a failed write at the next Tick (Deadline, Release). A failed write
// says the grants and renewals it holds that were not said yet.
func (h *Hold) Advance(onDisk bool, outcomes *[]mutex.Outcome, events *[]core.Event) {
	switch {
	case len(h.held) == 0:
	case !onDisk:
		h.fresh, h.due = false, false
		h.sayHeld(events)
	case h.fresh:
		*outcomes = append(h.held, *outcomes...)
		left := reported(h.events)
		*events = append(left, *events...)
		h.held, h.events, h.said, h.fresh = nil, nil, 0, false
		h.unread = len(left) > 0
	default:
		h.due = true
	}
}

// reported is the events that were found (Name set).
func reported(events []core.Event) []core.Event {
	out := make([]core.Event, 0, len(events))
	for _, e := range events {
		if e.Name != "" {
			out = append(out, e)
		}
	}
	return out
}

// sayHeld reports the grants and renewals held since the last said, at
// INFO: the log's lock_granted waits for the write, and this says why
// the client has not heard yet (the daemon's ERROR says the write's
// failure, at most every 10 s; the drop, if the lease ends first, is
// EventGrantUnsaved at WARN).
func (h *Hold) sayHeld(events *[]core.Event) {
	for _, o := range h.held[h.said:] {
		var (
			lock  string
			id    mutex.RequestID
			fence uint64
			what  string
		)
		switch o := o.(type) {
		case mutex.Granted:
			lock, id, fence, what = o.Lock, o.ID, o.Fence, "grant"
		case mutex.Renewed:
			lock, id, fence, what = o.Lock, o.ID, o.Fence, "renewal"
		default:
			continue
		}
		*events = append(*events, core.Event{Name: mutex.EventGrantHeld,
			Msg: fmt.Sprintf("%s: request %d's %s (fence %d) is made and waits for this member's state write, which failed: its client hears of it once a write succeeds (dropped if its lease ends first). Make the state directory writable (status: Persist; free space or fix permissions under --state-dir)",
				lock, id, what, fence),
			Args: []any{"lock", lock, "request", uint64(id), "fence", fence, "what", what}})
	}
	h.said = len(h.held)
}

// Held is how many outcomes wait for a write.
func (h *Hold) Held() int { return len(h.held) }

// Unsaved says what of request id waits for a write before its client
// hears of it: "grant" (the client does not hold the lock yet),
// "renewal" (the client has the lease as last renewed), or "".
func (h *Hold) Unsaved(id mutex.RequestID) string {
	what := ""
	for _, o := range h.held {
		if o.Request() != id {
			continue
		}
		switch o.(type) {
		case mutex.Granted:
			return mutex.UnsavedGrant
		case mutex.Renewed:
			what = mutex.UnsavedRenewal
		}
	}
	return what
}

// Mark sets Unsaved on the holders of ls (filled by the table).
func (h *Hold) Mark(ls *mutex.LockStatus) {
	if len(h.held) == 0 {
		return
	}
	for i := range ls.Holders {
		ls.Holders[i].Unsaved = h.Unsaved(ls.Holders[i].ID)
	}
	if ls.Holder != nil {
		ls.Holder.Unsaved = h.Unsaved(ls.Holder.ID)
	}
}

// Deadline asks for a reading of the clock at once (after now, the core's
// last) while held outcomes may leave, or events that left wait for a
// Ready.
func (h *Hold) Deadline(now time.Time) time.Time {
	if h.due && len(h.held) > 0 || h.unread {
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
// reached the driver before the grant it ends). Their events go with
// them, before the core's events since; a dropped one's is not reported
// (its client never held the lock).
func (h *Hold) Release(now time.Time, outcomes *[]mutex.Outcome, events *[]core.Event, counters map[string]uint64) {
	if !h.due {
		return
	}
	kept := make([]mutex.Outcome, 0, len(h.held)+len(*outcomes))
	said := make([]core.Event, 0, len(h.held)+len(*events))
	defer func() {
		*outcomes = append(kept, *outcomes...)
		*events = append(said, *events...)
	}()
	for i, o := range h.held {
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
		if h.events[i].Name != "" {
			said = append(said, h.events[i])
		}
	}
	h.held, h.events, h.said, h.due = nil, nil, 0, false
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
