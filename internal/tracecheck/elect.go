package tracecheck

import (
	"fmt"
	"slices"

	"github.com/synclab/synclab/internal/trace"
	"github.com/synclab/synclab/pkg/elect"
)

// electProperties are electd's promises, from the leadership events every
// election core reports (pkg/elect: elected and demoted at the leader,
// leader_elected wherever a member learns one, each with its term).
var electProperties = []property{
	{name: "one-leader-per-term", promise: "at most one leader per term (what every member names as the term's leader)", check: checkLeaderPerTerm},
	{name: "one-leader-at-once", promise: "at most one leader at any instant (the majority election's leases)", applies: majorityOnly, check: checkLeaderAtOnce},
}

// majorityKinds are the frames only the majority election sends.
var majorityKinds = []string{"vote_request", "vote", "lease_renew", "lease_grant", "lease_release"}

func majorityOnly(r *run, c *cluster) string {
	for _, i := range c.events {
		if slices.Contains(majorityKinds, r.d.Events[i].Kind) {
			return ""
		}
	}
	return "promised by the majority election only, and the traces carry none of its frames (" + fmt.Sprint(majorityKinds) + "): not checked"
}

func checkLeaderPerTerm(r *run, c *cluster) Result {
	type claim struct {
		leader uint64
		ev     int
	}
	first := map[uint64]claim{} // term -> the first claim seen
	var terms []uint64
	var t tally
	unnumbered := 0
	for _, i := range c.events {
		e := &r.d.Events[i]
		if e.Ev != "local" || (e.Name != elect.EventElected && e.Name != elect.EventLeaderElected) {
			continue
		}
		term, okT := argU64(&e.Event, "term")
		leader, okL := argU64(&e.Event, "leader")
		if !okL || leader == 0 {
			continue
		}
		if !okT || term == 0 {
			unnumbered++ // no term (0 is none in every algorithm here): nothing to compare
			continue
		}
		c0, seen := first[term]
		if !seen {
			first[term] = claim{leader, i}
			terms = append(terms, term)
			continue
		}
		if c0.leader != leader {
			t.violation(fmt.Sprintf("term %d has two leaders: member %d (%s, by member %d) and member %d (%s, by member %d)",
				term, c0.leader, r.d.Events[c0.ev].Name, r.d.Procs[r.d.Events[c0.ev].Proc].ID,
				leader, e.Name, r.d.Procs[e.Proc].ID), r.refs([2]int{c0.ev, i}))
			first[term] = claim{leader, i} // report each further disagreement once
		}
	}
	t.checked = len(terms)
	ok := fmt.Sprintf("%s, each with one leader in every member's events", plural(len(terms), "term"))
	if unnumbered > 0 {
		ok += fmt.Sprintf(" (%s without a term not compared)", plural(unnumbered, "leadership claim"))
	}
	return t.result(ok, "terms with two leaders")
}

// leadership is one member's time as leader.
type leadership struct {
	file  string
	id    uint32
	term  uint64
	start int // elected
	end   int // demoted; -1: none in the trace
	// lastRenew is its last lease_renew sent before a demotion for an
	// expired lease (-1: none): the lease ran out between it and the
	// demotion, reported when the member next ran (after a pause).
	lastRenew int
	renew     int  // its last lease_renew sent so far
	paused    bool // the simulator paused it since that renewal
}

func checkLeaderAtOnce(r *run, c *cluster) Result {
	var ls []*leadership
	open := map[string]*leadership{}
	for _, i := range c.events {
		e := &r.d.Events[i]
		if e.Ev == "send" && e.Kind == "lease_renew" {
			if l := open[e.File]; l != nil {
				l.renew, l.paused = i, false
			}
		}
		if e.Ev != "local" {
			continue
		}
		switch e.Name {
		case CrashEvent:
			if l := open[e.File]; l != nil {
				l.end = i
				delete(open, e.File)
			}
		case PauseEvent:
			if l := open[e.File]; l != nil {
				l.paused = true
			}
		case elect.EventElected:
			if l := open[e.File]; l != nil {
				continue // elected again while leading (a new term): one time as leader
			}
			term, _ := argU64(&e.Event, "term")
			l := &leadership{file: e.File, id: r.d.Procs[e.Proc].ID, term: term, start: i, end: -1, lastRenew: -1, renew: i}
			open[e.File] = l
			ls = append(ls, l)
		case elect.EventDemoted:
			if l := open[e.File]; l != nil {
				l.end = i
				// Demoted for an expired lease: when the member ran
				// again, which is when the lease ran out unless it was
				// paused (the simulator says so; a daemon's trace cannot).
				f := r.files[e.File]
				if argStr(&e.Event, "reason") == "lease_expired" && (l.paused || f == nil || f.Header.Clock != trace.ClockTrue) {
					l.lastRenew = l.renew
				}
				delete(open, e.File)
			}
		}
	}
	var t tally
	t.checked = len(ls)
	var used []int
	endHi := func(l *leadership) instant {
		if l.end >= 0 {
			return r.at(l.end)
		}
		return never
	}
	endLo := func(l *leadership) instant {
		switch {
		case l.lastRenew >= 0:
			return r.at(l.lastRenew)
		case l.end >= 0:
			return r.at(l.end)
		}
		return r.heldUntil(l.file)
	}
	endEv := func(l *leadership) int {
		if l.end >= 0 {
			return l.end
		}
		return r.covered(l.file)
	}
	for i, a := range ls {
		for _, b := range ls[i+1:] {
			if a.id == b.id && a.file == b.file {
				continue
			}
			sa, sb := r.at(a.start), r.at(b.start)
			used = append(used, a.start, b.start)
			if r.before(endHi(a), sb, false) || r.before(endHi(b), sa, false) {
				continue
			}
			first, second := a, b
			if r.d.Events[b.start].T.Before(r.d.Events[a.start].T) {
				first, second = b, a
			}
			refs := r.refs([2]int{first.start, second.start}, endEv(first), endEv(second), first.lastRenew)
			if r.before(r.at(second.start), endLo(first), true) && r.before(r.at(first.start), endLo(second), true) {
				t.violation(fmt.Sprintf("member %d led (term %d) from %s until %s, and member %d was elected (term %d) at %s, in between: two leaders at once",
					first.id, first.term, r.when(first.start), r.endWhen(first.end), second.id, second.term, r.when(second.start)), refs)
				continue
			}
			if first.lastRenew >= 0 {
				t.unsure(fmt.Sprintf("member %d's lease (term %d) ran out at an instant its trace does not show, between its last renewal at %s and its demotion at %s (reported when it ran again), and member %d was elected (term %d) at %s, in between",
					first.id, first.term, r.when(first.lastRenew), r.when(first.end), second.id, second.term, r.when(second.start)), refs)
				continue
			}
			t.unsure(fmt.Sprintf("member %d's leadership (term %d, ended %s) and member %d's election (term %d, at %s) are ordered by no message, and their times are within the clocks' error bounds",
				first.id, first.term, r.endWhen(first.end), second.id, second.term, r.when(second.start)), refs)
		}
	}
	res := t.result(fmt.Sprintf("%s checked pairwise: each ended before the next began", plural(len(ls), "leadership")), "overlaps")
	res.ClockBound = r.boundText(used...)
	return res
}

func (r *run) endWhen(i int) string {
	if i < 0 {
		return "the end of its trace"
	}
	return r.d.Events[i].Name + " at " + r.when(i)
}
