package tracecheck

import (
	"fmt"
	"slices"
	"time"

	"github.com/synclab/synclab/pkg/mutex"
)

// mutexProperties are mutexd's promises, from the events every mutex core
// reports (pkg/mutex: lock_granted with its fence, mode and lease expiry,
// lock_renewed, lock_released, lock_lost), at the member whose client
// asked.
var mutexProperties = []property{
	{name: "exclusive", promise: "no two holders of one lock at once (a shared holder beside shared ones only)", check: checkExclusive},
	{name: "fences", promise: "fences strictly increasing in grant order, for each lock (shared holders together share one)", check: checkFences},
	{name: "ended", promise: "every grant released or expired (a loss reported by its member)", check: checkEnded},
}

// hold is one grant and how it ended.
type hold struct {
	file    string
	id      uint32
	host    string
	req     uint64
	lock    string
	shared  bool
	fence   uint64
	lease   time.Duration
	grant   int       // the lock_granted event
	end     int       // the lock_released or lock_lost event; -1: none in the trace
	expires time.Time // the last expiry granted or renewed, on its host's clock (zero: none)
	expSet  int       // the event that set it
}

// expiry is the hold's lease's end, on its host's clock (ok false: none).
func (h *hold) expiry() (instant, bool) {
	return instant{ev: h.expSet, t: h.expires, local: true}, !h.expires.IsZero()
}

// endHi is when the hold had certainly ended: its release or loss, or
// its lease's expiry if earlier (on the holder's clock: the two are one
// clock's readings); never when neither is known.
func (h *hold) endHi(r *run) instant {
	exp, ok := h.expiry()
	if h.end >= 0 && (!ok || !h.expires.Before(r.localOf(r.at(h.end)))) {
		return r.at(h.end)
	}
	if ok {
		return exp
	}
	return never
}

// endLo is until when the hold lasted for certain: its end when the
// trace shows one, else its trace's last event (capped by its expiry).
func (h *hold) endLo(r *run) instant {
	if h.end >= 0 {
		return h.endHi(r)
	}
	until := r.heldUntil(h.file)
	if exp, ok := h.expiry(); ok && r.before(exp, until, false) {
		return exp
	}
	return until
}

// endEvent is the event that shows how the hold ended (for a
// counterexample): its release or loss, the event that set its expiry,
// or the last of its trace.
func (h *hold) endEvent(r *run) int {
	switch {
	case h.end >= 0:
		return h.end
	case !h.expires.IsZero():
		return h.expSet
	}
	return r.covered(h.file)
}

func (h *hold) mode() string {
	if h.shared {
		return "shared"
	}
	return "exclusive"
}

// holds collects c's grants in the order of the run's events.
func (r *run) holds(c *cluster) []*hold {
	var out []*hold
	open := map[string]*hold{} // file, incarnation, request
	incarnation := map[string]int{}
	for _, i := range c.events {
		e := &r.d.Events[i]
		if e.Ev != "local" {
			continue
		}
		req, _ := argU64(&e.Event, "request")
		key := fmt.Sprintf("%s\x00%d\x00%d", e.File, incarnation[e.File], req)
		switch e.Name {
		case CrashEvent:
			for k, h := range open {
				if h.file == e.File {
					h.end = i
					delete(open, k)
				}
			}
			incarnation[e.File]++
		case mutex.EventGranted:
			fence, _ := argU64(&e.Event, "fence")
			h := &hold{file: e.File, id: r.d.Procs[e.Proc].ID, host: r.d.Procs[e.Proc].Host, req: req, lock: argStr(&e.Event, "lock"),
				shared: argStr(&e.Event, "mode") == mutex.Shared.String(), fence: fence, grant: i, end: -1, expSet: i}
			h.expires, _ = argTime(&e.Event, "expires")
			h.lease, _ = argDuration(&e.Event, "lease")
			open[key] = h
			out = append(out, h)
		case mutex.EventRenewed:
			if h := open[key]; h != nil {
				if t, ok := argTime(&e.Event, "expires"); ok {
					h.expires, h.expSet = t, i
				}
			}
		case mutex.EventReleased, mutex.EventLost:
			if h := open[key]; h != nil {
				h.end = i
				delete(open, key)
			}
		}
	}
	return out
}

func (r *run) holdName(h *hold) string {
	return fmt.Sprintf("member %d (%s) request %d", h.id, h.host, h.req)
}

// tally keeps the first violation and the first undecided case.
type tally struct {
	checked, violations, undecided int
	vWhy, uWhy                     string
	vEvents, uEvents               []Ref
}

func (t *tally) violation(why string, refs []Ref) {
	if t.violations++; t.violations == 1 {
		t.vWhy, t.vEvents = why, refs
	}
}

func (t *tally) unsure(why string, refs []Ref) {
	if t.undecided++; t.undecided == 1 {
		t.uWhy, t.uEvents = why, refs
	}
}

// result turns the tally into a verdict; ok says what held.
func (t *tally) result(ok, what string) Result {
	res := Result{Checked: t.checked, Violations: t.violations, Undecided: t.undecided}
	switch {
	case t.violations > 0:
		res.Verdict, res.Why, res.Events = Violated, t.vWhy, t.vEvents
		if t.violations > 1 {
			res.Why += fmt.Sprintf(" (and %d more %s)", t.violations-1, what)
		}
	case t.undecided > 0:
		res.Verdict, res.Why, res.Events = Undecided, t.uWhy, t.uEvents
		if t.undecided > 1 {
			res.Why += fmt.Sprintf(" (and %d more)", t.undecided-1)
		}
	default:
		res.Verdict, res.Why = Holds, ok
	}
	return res
}

// eachPair calls f with every two holds of one lock (in the order they
// were granted per member), locks in name order; it returns how many
// locks there are.
func eachPair(hs []*hold, f func(lock string, a, b *hold)) int {
	m := map[string][]*hold{}
	for _, h := range hs {
		m[h.lock] = append(m[h.lock], h)
	}
	var locks []string
	for l := range m {
		locks = append(locks, l)
	}
	slices.Sort(locks)
	for _, lock := range locks {
		list := m[lock]
		for i, a := range list {
			for _, b := range list[i+1:] {
				f(lock, a, b)
			}
		}
	}
	return len(locks)
}

func (r *run) when(i int) string {
	e := &r.d.Events[i]
	if e.T.IsZero() {
		return "(no time)"
	}
	return e.T.UTC().Format("15:04:05.000000")
}

func checkExclusive(r *run, c *cluster) Result {
	hs := r.holds(c)
	var t tally
	t.checked = len(hs)
	var used []int
	locks := eachPair(hs, func(lock string, a, b *hold) {
		if a.shared && b.shared {
			return
		}
		ga, gb := r.at(a.grant), r.at(b.grant)
		used = append(used, a.grant, b.grant)
		if r.before(a.endHi(r), gb, false) || r.before(b.endHi(r), ga, false) {
			return // one ended before the other began
		}
		first, second := a, b
		if r.before(gb, ga, false) || (!r.before(ga, gb, false) && r.d.Events[b.grant].T.Before(r.d.Events[a.grant].T)) {
			first, second = b, a
		}
		refs := r.refs([2]int{first.grant, second.grant}, first.endEvent(r), second.endEvent(r))
		if r.before(r.at(second.grant), first.endLo(r), true) && r.before(r.at(first.grant), second.endLo(r), true) {
			t.violation(fmt.Sprintf("%s held %s (%s, fence %d) from %s, and %s was granted it (%s, fence %d) at %s, before the first hold ended (%s): two holders at once",
				r.holdName(first), lock, first.mode(), first.fence, r.when(first.grant),
				r.holdName(second), second.mode(), second.fence, r.when(second.grant), r.endText(first)), refs)
			return
		}
		t.unsure(fmt.Sprintf("%s's hold of %s (fence %d, ended %s) and %s's grant (fence %d, at %s) are ordered by no message, and their times are within the clocks' error bounds",
			r.holdName(first), lock, first.fence, r.endText(first), r.holdName(second), second.fence, r.when(second.grant)), refs)
	})
	res := t.result(fmt.Sprintf("%s of %s checked pairwise: every two holds of one lock (but two shared ones) are ordered, one ending before the other began",
		plural(len(hs), "hold"), plural(locks, "lock")), "overlaps")
	res.ClockBound = r.boundText(used...)
	return res
}

// endText says how a hold ended, for a verdict.
func (r *run) endText(h *hold) string {
	hi := h.endHi(r)
	switch {
	case h.end >= 0 && hi.mark:
		return fmt.Sprintf("%s at %s", r.d.Events[h.end].Name, r.when(h.end))
	case !h.expires.IsZero():
		return "its lease expiring at " + h.expires.UTC().Format("15:04:05.000000")
	}
	return "never, in the trace"
}

func checkFences(r *run, c *cluster) Result {
	hs := r.holds(c)
	var t tally
	t.checked = len(hs)
	var used []int
	locks := eachPair(hs, func(lock string, a, b *hold) {
		if a.fence == b.fence {
			if a.shared && b.shared {
				return
			}
			t.violation(fmt.Sprintf("%s and %s were both granted %s with fence %d (%s and %s): a fence names one grant, shared holders together excepted",
				r.holdName(a), r.holdName(b), lock, a.fence, a.mode(), b.mode()), r.refs([2]int{a.grant, b.grant}))
			return
		}
		lo, hi := a, b
		if b.fence < a.fence {
			lo, hi = b, a
		}
		gLo, gHi := r.at(lo.grant), r.at(hi.grant)
		used = append(used, lo.grant, hi.grant)
		if r.before(gLo, gHi, false) {
			return
		}
		refs := r.refs([2]int{hi.grant, lo.grant})
		if r.before(gHi, gLo, true) {
			t.violation(fmt.Sprintf("%s was granted %s with fence %d at %s, before %s was granted it with the lower fence %d at %s",
				r.holdName(hi), lock, hi.fence, r.when(hi.grant), r.holdName(lo), lo.fence, r.when(lo.grant)), refs)
			return
		}
		t.unsure(fmt.Sprintf("the grants of %s with fences %d (%s, at %s) and %d (%s, at %s) are ordered by no message, and their times are within the clocks' error bounds",
			lock, lo.fence, r.holdName(lo), r.when(lo.grant), hi.fence, r.holdName(hi), r.when(hi.grant)), refs)
	})
	res := t.result(fmt.Sprintf("%s of %s: each lock's fences increase in the order its grants happened", plural(len(hs), "grant"), plural(locks, "lock")), "grants out of order")
	res.ClockBound = r.boundText(used...)
	return res
}

func checkEnded(r *run, c *cluster) Result {
	hs := r.holds(c)
	var t tally
	t.checked = len(hs)
	released, lost, crashed, expired := 0, 0, 0, 0
	for _, h := range hs {
		if h.end >= 0 {
			switch r.d.Events[h.end].Name {
			case mutex.EventReleased:
				released++
			case CrashEvent:
				crashed++
			default:
				lost++
			}
			continue
		}
		lastIdx := r.covered(h.file)
		until := r.heldUntil(h.file)
		exp, ok := h.expiry()
		switch {
		case !ok:
			t.unsure(fmt.Sprintf("%s's grant of %s (fence %d) carries no lease, and its trace ends before a release or loss", r.holdName(h), h.lock, h.fence),
				r.refs([2]int{h.grant, lastIdx}))
		case !r.before(exp, until, false):
			t.unsure(fmt.Sprintf("%s still held %s (fence %d, lease to %s) when its trace ended at %s", r.holdName(h), h.lock, h.fence,
				h.expires.UTC().Format("15:04:05.000000"), r.when(lastIdx)), r.refs([2]int{h.grant, lastIdx}))
		case h.lease > 0 && r.before(instant{ev: h.expSet, t: h.expires.Add(h.lease), local: true}, until, true):
			t.violation(fmt.Sprintf("%s's lease of %s (fence %d) ran out at %s, yet its trace goes on to %s (more than the lease, %v, later) without a release or a loss",
				r.holdName(h), h.lock, h.fence, h.expires.UTC().Format("15:04:05.000000"), r.when(lastIdx), h.lease), r.refs([2]int{h.expSet, lastIdx}, h.grant))
		default:
			expired++
		}
	}
	return t.result(fmt.Sprintf("%s: %d released, %d lost (a loss reported), %d ended by their member's crash, %d expired as the trace ended",
		plural(len(hs), "grant"), released, lost, crashed, expired), "grants")
}
