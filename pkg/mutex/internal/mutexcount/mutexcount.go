// Package mutexcount is what every mutual-exclusion core keeps the same
// way, the twin of the election family's electcount: the drain that turns
// the request table's outcomes into the core's outcomes and events
// (Drain), the hold that keeps them from the driver until the promises
// they may depend on are on disk (Hold), the one view of the core's, the
// table's and the bugs' counters (Counters), and the metric families
// every core exports from them (RequestMetrics, LossMetrics). Each core keeps its own counters and
// metrics beside these (a ring's token passes, Maekawa's votes, ...). The
// duration checks of every Config, shared with the election family, are
// liveness.FillDurations and liveness.CheckTimers.
package mutexcount

import (
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/mutex"
)

// Grants is how a core reports its grants.
type Grants struct {
	// Mode adds the request's "mode" (an algorithm with shared locks).
	Mode bool
	// Epoch names the grant's epoch argument ("generation", "term",
	// "incarnation"; empty: none).
	Epoch string
}

// Drain moves the table's outcomes to *outcomes, each reported as an
// event too (mutex.EventGranted...: for logs and hooks), in the order they
// happened. ended, if not nil, is called with every request that was lost
// or released, before its event: the core forgets what it kept for it.
func Drain(reqs *mutex.Table, outcomes *[]mutex.Outcome, events *[]core.Event, g Grants, ended func(mutex.RequestID)) {
	emit := func(name, msg string, args ...any) {
		*events = append(*events, core.Event{Name: name, Msg: msg, Args: args})
	}
	for _, o := range reqs.Outcomes() {
		*outcomes = append(*outcomes, o)
		switch o := o.(type) {
		case mutex.Granted:
			args := []any{"request", uint64(o.ID), "lock", o.Lock, "fence", o.Fence}
			if g.Mode {
				args = append(args, "mode", o.Mode.String())
			}
			args = append(args, "lease", o.Lease, "expires", o.Expires)
			if g.Epoch != "" {
				args = append(args, g.Epoch, o.Epoch)
			}
			emit(mutex.EventGranted, fmt.Sprintf("%s granted (fence %d)", o.Lock, o.Fence), args...)
		case mutex.Renewed:
			emit(mutex.EventRenewed, "", "request", uint64(o.ID), "lock", o.Lock, "fence", o.Fence, "expires", o.Expires)
		case mutex.Lost:
			if ended != nil {
				ended(o.ID)
			}
			emit(mutex.EventLost, fmt.Sprintf("%s lost (fence %d): %s", o.Lock, o.Fence, o.Reason),
				"request", uint64(o.ID), "lock", o.Lock, "fence", o.Fence, "reason", string(o.Reason))
		case mutex.Released:
			if ended != nil {
				ended(o.ID)
			}
			emit(mutex.EventReleased, fmt.Sprintf("%s released (fence %d)", o.Lock, o.Fence), "request", uint64(o.ID), "lock", o.Lock, "fence", o.Fence)
		}
	}
}

// Counters is the request table's counters, the core's own and its bugs'
// ("bug_" + label), one view: the status's Counters and the metrics read
// it.
func Counters(reqs *mutex.Table, own map[string]uint64, bugs *core.Bugs) map[string]uint64 {
	m := reqs.Counters()
	maps.Copy(m, own)
	for label, n := range bugs.Counts() {
		m["bug_"+label] = n
	}
	return m
}

// ByPrefix is the counters named prefix+X, as X -> n.
func ByPrefix(counters map[string]uint64, prefix string) map[string]uint64 {
	out := map[string]uint64{}
	for k, v := range counters {
		if r, ok := strings.CutPrefix(k, prefix); ok {
			out[r] = v
		}
	}
	return out
}

// RequestMetrics exports the request table's counters every core shares.
func RequestMetrics(m *core.MetricSet, counters map[string]uint64) {
	cnt := func(k string) float64 { return float64(counters[k]) }
	m.Counter("synclab_mutex_requests_total", "Lock requests queued at this member.", cnt("requests"))
	m.Counter("synclab_mutex_grants_total", "Leases granted to clients of this member.", cnt("grants"))
	m.Counter("synclab_mutex_renewals_total", "Leases renewed.", cnt("renewals"))
	m.Counter("synclab_mutex_cancelled_total", "Waiting requests withdrawn before a grant.", cnt("cancelled"))
}

// LossMetrics exports the leases lost by reason (every one of reasons
// present at 0, so an alert on a rate sees the series before the first
// loss) and the frames refused by reason; frames is what the core calls
// its frames in the help text ("Frames", "Ring frames", "Vote frames").
func LossMetrics(m *core.MetricSet, counters map[string]uint64, reasons []mutex.LossReason, frames string) {
	losses := ByPrefix(counters, "lost_")
	for _, r := range reasons {
		losses[string(r)] += 0
	}
	m.Counters("synclab_mutex_losses_total", "Leases lost before their release, by reason.", "reason", losses)
	m.Counters("synclab_mutex_frames_rejected_total", frames+" refused by the core, by reason.", "reason", ByPrefix(counters, "rejected_"))
}

// LateGrants reports the grants and renewals a core refused because its
// loop read the last answer they needed after the lease they gave had
// ended (a process paused and continued, a host too busy to run it): the
// answers came in time, by their receive stamps, but a grant reported then
// would have no time left, and a renewal would renew a lease already over.
// A renewal may also be refused for answers that came after the lease's
// end themselves (RenewalLate.AnswersLate): its event says which.
// Each is counted (grants_late, renewals_late) and said as an event, at
// WARN at most once in LateRewarn for both kinds together (INFO between: a
// host that stays overloaded refuses many).
type LateGrants struct{ warned time.Time }

// LateRewarn is how soon another late grant is said at WARN again.
const LateRewarn = time.Minute

// Report counts and says that lock's request id was not granted, read late
// past its lease's end at now; next says what the request does instead.
func (l *LateGrants) Report(now time.Time, counters map[string]uint64, events *[]core.Event, name, lock string, id mutex.RequestID, late time.Duration, next string) {
	counters["grants_late"]++
	*events = append(*events, core.Event{Name: name, Warn: l.warn(now), Args: lateArgs(lock, id, late),
		Msg: lateMsg(lock, id, late, "was not granted", "the lease they gave", next)})
}

// RenewalLate is a renewal refused at a reading of the clock (ReportRenewal).
type RenewalLate struct {
	Lock string
	ID   mutex.RequestID
	// Late is how long past the end of the lease the renewal would have
	// given (or, when that had not ended, of the lease it was to renew)
	// the reading came.
	Late time.Duration
	// Answered is the receive stamp of the last answer the renewal needed
	// (the one that completed its quorum or check), By the member(s) it
	// came from; End is the end of the lease those answers had to come
	// before. Answered at or after End, the answers themselves came late
	// (a slow or lossy link, a starved member): reading them at once would
	// not have saved the renewal. Before End, they came in time and this
	// member's loop read them late.
	Answered, End time.Time
	By            []uint32
	// Unanswered says that no answer had completed the renewal when End
	// came (Answered is then zero, By the members it still waited for):
	// the answers came late too, or never.
	Unanswered bool
	// EndOf says which lease End ends ("the lease it renews", "the lease
	// it asked for"); empty: "its lease".
	EndOf string
}

// AnswersLate says whether r's answers came after the lease's end (not
// this member's loop, but the network or the members answering).
func (r RenewalLate) AnswersLate() bool {
	return r.Unanswered || !r.Answered.IsZero() && !r.Answered.Before(r.End)
}

// ReportRenewal counts and says (mutex.EventRenewalLate) that renewal r
// was refused, read at now: the lease ends as it was, and the client
// learns of the loss and asks again. The event says which it was ("cause":
// loop_late or answers_late), naming the member(s) whose answer came last,
// and what to do in each case.
func (l *LateGrants) ReportRenewal(now time.Time, counters map[string]uint64, events *[]core.Event, r RenewalLate) {
	counters["renewals_late"]++
	next := "its lease ends as it was, and the client learns of the loss and asks again"
	by, lease := memberList(r.By), r.EndOf
	if lease == "" {
		lease = "its lease"
	}
	cause, msg := "loop_late", lateMsg(r.Lock, r.ID, r.Late, "was not renewed", "its lease", next)
	if r.AnswersLate() {
		cause = "answers_late"
		came := fmt.Sprintf("came after %s had ended (the last, from %s, %v after the end)", lease, by, r.Answered.Sub(r.End).Round(time.Millisecond))
		if r.Unanswered {
			came = fmt.Sprintf("had not come when %s ended (none yet from %s)", lease, by)
		}
		msg = fmt.Sprintf("%s: request %d was not renewed: the answers it needed %s, so no reading could have renewed it: not this member's loop, but a slow or lossy link between this member and %s (frames lost and asked again), or %s busy; %s. "+
			"Check the link (loss, delay: ping, both members' status: Frames, dropped) and %s's load; a client that renews earlier in its lease leaves the answers more time",
			r.Lock, r.ID, came, by, by, next, by)
	} else if !r.Answered.IsZero() && len(r.By) > 0 {
		msg = fmt.Sprintf("%s: request %d was not renewed: the answers it needed came in time (the last, from %s, %v before the end of %s), but this member read them %v after they came, %v after it had ended (its loop ran late: a process paused and continued, or a host too busy to run it); %s. Check the host's load and what stops mutexd (a debugger, SIGSTOP, swapping)",
			r.Lock, r.ID, by, r.End.Sub(r.Answered).Round(time.Millisecond), lease, now.Sub(r.Answered).Round(time.Millisecond), r.Late.Round(time.Millisecond), next)
	}
	args := append(lateArgs(r.Lock, r.ID, r.Late), "cause", cause)
	if len(r.By) > 0 {
		args = append(args, "members", by)
	}
	*events = append(*events, core.Event{Name: mutex.EventRenewalLate, Warn: l.warn(now), Args: args, Msg: msg})
}

// memberList names members: "member 3", "members 2 and 3".
func memberList(ids []uint32) string {
	switch len(ids) {
	case 0:
		return "the members asked"
	case 1:
		return fmt.Sprintf("member %d", ids[0])
	}
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = fmt.Sprint(id)
	}
	return "members " + strings.Join(s[:len(s)-1], ", ") + " and " + s[len(s)-1]
}

// warn says whether a late grant or renewal refused at now is said at
// WARN: at most once in LateRewarn.
func (l *LateGrants) warn(now time.Time) bool {
	if !l.warned.IsZero() && now.Sub(l.warned) < LateRewarn {
		return false
	}
	l.warned = now
	return true
}

func lateArgs(lock string, id mutex.RequestID, late time.Duration) []any {
	return []any{"lock", lock, "request", uint64(id), "late", late}
}

func lateMsg(lock string, id mutex.RequestID, late time.Duration, what, lease, next string) string {
	return fmt.Sprintf("%s: request %d %s: the answers it needed came in time, but this member read the last of them %v after %s had ended (its loop ran late: a process paused and continued, or a host too busy to run it); %s. Check the host's load and what stops mutexd (a debugger, SIGSTOP, swapping)",
		lock, id, what, late.Round(time.Millisecond), lease, next)
}
