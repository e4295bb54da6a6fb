package mutextest

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/synclab/synclab/internal/node"
	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/pkg/clock"
	"github.com/synclab/synclab/pkg/mutex"
)

// The causal oracle, for an algorithm whose grants follow the causal order
// of the requests (mutex.Causal, its Vector working: the token-asking
// central token). Half the clients' requests carry in Request.After the
// vector of a program message just received from another member's client
// (that member's Vector: the stamp of its latest request, which may still
// wait, or still be on its way to whoever orders them), and the oracle
// checks what the algorithm promises: a request is granted only after
// every request its stamp names. Without it the simulations of a causal
// algorithm and of its plain twin were the same run: no request named a
// predecessor, and a core that ignored the vectors passed every seed.
//
// Grants are seen where they are reported, at each member, and a grant
// made first may be reported a link later than one made after it (the
// frames to two members), so a predecessor reported granted within
// causalSlack of its dependent counts as granted first. The promise gives
// way where the algorithm says it does, and the oracle excuses exactly
// that: a predecessor whose member was faulted (crashed, paused, cut off)
// between its request and its dependent's grant (its coordinator drops a
// silent member's waiting requests, and the member re-announces them
// when it is back), and one the algorithm reported granting without
// (Config.CausalSkipEvent), no sooner than its rules let it
// (Config.CausalSkipAfter after the predecessor was asked: a report
// excused any overtaking, and a rule that gave way at once, saying so,
// passed). A predecessor that ends without a grant
// (lost, or its member crashed) is checked as one granted then: a
// dependent granted while it still waited overtook it. One the algorithm
// refused (Config.CausalRefused: the refusal as it left the coordinator)
// ended then, if it ends without a grant: its member's report of it
// comes a lost frame later, and taken for its end it failed dependents
// granted after the refusal (central under short cuts with leases apart:
// a request over the coordinator's --lease, refused; TestMixedBuilds
// with short cuts, calm seed 23).

// creq is one request as the causal oracle follows it.
type creq struct {
	node    uint32
	stamp   uint64 // its own entry of its stamp
	asked   time.Duration
	after   clock.Vector // what its client passed
	granted bool
	ended   bool // lost, withdrawn, or its member crashed, before a grant
	// refused is when the algorithm first gave it up, waiting
	// (Config.CausalRefused: central's coordinator refused it), 0: never.
	// Ended without a grant, it ended then, not when its member reported
	// it (a refusal lost with a cut reaches the member a sync later,
	// while its dependents, rightly, go on).
	refused time.Duration
	// before are the dependents granted while this request still waited.
	before []dependent
}

// dependent is a request granted (reported, at) while a predecessor it
// names still waited.
type dependent struct {
	r  *creq
	at time.Duration
}

// fault is one fault's window on a member.
type fault struct {
	node       uint32
	start, end time.Duration // end 0: not over yet
	// isolated: a cut made by Cluster.Isolate, which lasts across the
	// member's restarts until Cluster.Heal (the others end at the end of
	// the fault that made them).
	isolated bool
	// agreement: a cut of configuration agreement's (agreementCut),
	// which ends at end unless a refusal extends it.
	agreement bool
}

// causalOracle is the Cluster's causal bookkeeping (nil: the algorithm is
// not causal).
type causalOracle struct {
	reqs    map[uint64]*creq            // by node<<32 | request
	byStamp map[uint32]map[uint64]*creq // by node, then stamp
	faults  []fault
	// Checked counts the requests granted with a predecessor named;
	// Waited those whose predecessor was still waiting when they were
	// asked (the case the algorithm orders).
	Checked, Waited int
}

// CausalCounts are the causal oracle's counts so far (0, 0 for an
// algorithm that does not order by vectors): the requests granted with a
// predecessor named, and those asked while it still waited.
func (c *Cluster) CausalCounts() (checked, waited int) {
	if c.causal == nil {
		return 0, 0
	}
	return c.causal.Checked, c.causal.Waited
}

// causalOracleFor is the causal oracle for a cluster whose member id runs
// a, or nil when a does not order its grants by vectors.
func causalOracleFor(a mutex.Algorithm) *causalOracle {
	ca, ok := a.(mutex.Causal)
	if !ok {
		return nil
	}
	if _, err := ca.Vector(); errors.Is(err, mutex.ErrBadVector) {
		return nil
	}
	return &causalOracle{reqs: map[uint64]*creq{}, byStamp: map[uint32]map[uint64]*creq{}}
}

// causalSlack is how much later than its dependent a predecessor's grant
// may be reported, both granted at once by the coordinator (a batch of
// readers, say): a frame's longest trip on the cluster's links, and twice
// a member's loop lateness (sim.SetLate: the loop reads the grant late,
// and the grant then waits for a reading of the clock, a timer that fires
// late too); and the clients' millisecond step. Seen on Harsh hosts
// (loops 5-20 ms late): 22 ms and 31 ms between two readers of one batch.
func (c *Cluster) causalSlack() time.Duration {
	return c.link.Delay + c.link.Jitter + 2*c.cfg.Hosts.LateMax + time.Millisecond
}

// programMessage is the After of a request member id's client is about
// to make: half the time the vector of another running member's client's
// program message, sent now; else empty.
func (c *Cluster) programMessage(id uint32) clock.Vector {
	if c.causal == nil || c.rng.IntN(2) == 0 {
		return clock.Vector{}
	}
	from := c.Other()
	if from == id || !c.s.Running(from) {
		return clock.Vector{}
	}
	v, err := c.algorithm(from).(mutex.Causal).Vector()
	switch {
	case errors.Is(err, mutex.ErrBadVector):
		c.t.Fatalf("member %d: vector: %v", from, err)
	case err != nil:
		// No vector to give now (its state is not on disk): the program
		// message is not sent.
		return clock.Vector{}
	}
	return v
}

// causalAsked records request req of member id, asked with after.
func (c *Cluster) causalAsked(id uint32, req mutex.RequestID, after clock.Vector) {
	o := c.causal
	if o == nil {
		return
	}
	v, ok := c.algorithm(id).(mutex.Causal).RequestVector(req)
	if !ok {
		c.t.Fatalf("member %d: request %d has no stamp", id, req)
	}
	r := &creq{node: id, stamp: v.Get(id), asked: c.s.Elapsed(), after: after}
	o.reqs[uint64(id)<<32|uint64(req)] = r
	if o.byStamp[id] == nil {
		o.byStamp[id] = map[uint64]*creq{}
	}
	o.byStamp[id][r.stamp] = r
	for _, j := range after.IDs() {
		if p := o.byStamp[j][after.Get(j)]; j != id && p != nil && !p.granted && !p.ended {
			o.Waited++
			break
		}
	}
}

// causalGranted checks the grant of member id's request req, reported at
// at: each predecessor it names was granted, or has ended; one still
// waiting must be reported granted within causalSlack (causalPredGranted).
// A predecessor granted first is checked when it is.
func (c *Cluster) causalGranted(id uint32, req mutex.RequestID, at time.Duration) {
	o := c.causal
	if o == nil {
		return
	}
	r := o.reqs[uint64(id)<<32|uint64(req)]
	if r == nil || r.granted {
		return
	}
	r.granted = true
	if r.after.Len() > 0 {
		o.Checked++
	}
	for _, j := range r.after.IDs() {
		if p := o.byStamp[j][r.after.Get(j)]; j != id && p != nil && !p.granted && !p.ended {
			p.before = append(p.before, dependent{r: r, at: at})
		}
	}
	for _, d := range r.before {
		if at-d.at > c.causalSlack() && !c.causalExcused(r, d, at) {
			c.t.Fatalf("%v: member %d's request %s granted, %v after member %d's request %s, which names it (asked at %v with %s): causal order broken\n%s",
				at, id, stampText(r.stamp), at-d.at, d.r.node, stampText(d.r.stamp), d.r.asked, vectorText(d.r.after), c.Tail())
		}
	}
	r.before = nil
}

// causalEnded records that member id's request req ended without a grant
// at at (lost, withdrawn; 0: every waiting request of id, which
// crashed); lost says its member reported it lost, the only end a
// refusal (causalRefused) can have brought: a refusal its member never
// acted on (a stale coordinator's, one lost with a cut after which the
// request waited again) ends nothing, and a crash or a withdrawal later
// is its end (review-tokenask2: such a request's dependents, granted
// while it waited again, went unchecked). A dependent granted while it still waited, more than
// causalSlack before its end, overtook it as much as one granted before
// it would have (its end excuses nothing): unless excused, the order is
// broken. Such dependents used to be forgotten here.
func (c *Cluster) causalEnded(id uint32, req mutex.RequestID, at time.Duration, lost bool) {
	o := c.causal
	if o == nil {
		return
	}
	for _, key := range slices.Sorted(maps.Keys(o.reqs)) {
		r := o.reqs[key]
		if key>>32 != uint64(id) || req != 0 && key != uint64(id)<<32|uint64(req) || r.granted || r.ended {
			continue
		}
		end, how := at, "ended without a grant"
		if lost && r.refused > 0 && r.refused < at {
			end, how = r.refused, fmt.Sprintf("was refused (reported at %v)", at)
		}
		for _, d := range r.before {
			if end-d.at > c.causalSlack() && !c.causalExcused(r, d, end) {
				c.t.Fatalf("%v: member %d's request %s %s, %v after member %d's request %s, which names it, was granted (asked at %v with %s): causal order broken\n%s",
					end, id, stampText(r.stamp), how, end-d.at, d.r.node, stampText(d.r.stamp), d.r.asked, vectorText(d.r.after), c.Tail())
			}
		}
		r.ended, r.before = true, nil
	}
}

// causalRefused reads frame sf, leaving its member: if it is the
// algorithm's refusal of a waiting request (Config.CausalRefused), that
// request ends then for the oracle, should it end without a grant
// (causalEnded). Granted after all (the refusal lost, and another
// coordinator granted it), it is checked as any grant: the refusal
// excuses nothing then.
func (c *Cluster) causalRefused(sf sim.SentFrame) {
	o := c.causal
	if o == nil {
		return
	}
	id, counter, ok := c.cfg.CausalRefused(sf.Frame)
	if !ok {
		return
	}
	if r := o.byStamp[id][counter]; r != nil && !r.granted && !r.ended && r.refused == 0 {
		r.refused = c.s.Elapsed()
	}
}

// causalFault records that a fault on member id starts now (begin) or
// ends now.
func (c *Cluster) causalFault(id uint32, begin bool) { c.causalWindow(id, begin, false) }

// agreementCut records the cut configuration agreement makes in
// BuildsMixed when an agreeing member, r.Node, refuses a frame of an
// older build, r.From: for three announce intervals from the first frame
// r.Node heard of r.From's incarnation (which may come long after r.From
// started: it followed a coordinator that is not r.Node), while r.From
// hears r.Node. Causal order is promised across no fault: each such
// refusal is a fault window on both members, from the refusal to two
// heartbeats later (the frames they exchange come at least that often
// while it lasts), merged with the window before it. A refusal between
// agreeing members (a start, a restart's incarnation not yet announced)
// opens none: it is short, both ways, and the cores keep causal order
// across it as across a lost frame (a window there excused real
// violations: TestAgreementRefusalExcusesNothing).
func (c *Cluster) agreementCut(r sim.Refused) {
	o := c.causal
	if o == nil || c.builds != BuildsMixed || !agreementRefusal(r.Err) ||
		!slices.Contains(c.agreeing, r.Node) || slices.Contains(c.agreeing, r.From) {
		return
	}
	end := r.At + 2*c.cfg.Options.Heartbeat + c.causalSlack()
	for _, id := range []uint32{r.Node, r.From} {
		k := slices.IndexFunc(o.faults, func(f fault) bool { return f.node == id && f.agreement && f.end >= r.At })
		if k >= 0 {
			o.faults[k].end = max(o.faults[k].end, end)
			continue
		}
		o.faults = append(o.faults, fault{node: id, start: r.At, end: end, agreement: true})
	}
}

// agreementRefusal says whether err is configuration agreement's refusal
// of a frame (internal/node).
func agreementRefusal(err error) bool {
	return errors.Is(err, node.ErrConfigUnverified) || errors.Is(err, node.ErrStarting) ||
		errors.Is(err, node.ErrSteppedBack) || errors.Is(err, node.ErrConfigDiffers)
}

// causalWindow opens (begin) or closes a fault window on member id, of
// Isolate's kind or of the others'.
func (c *Cluster) causalWindow(id uint32, begin, isolated bool) {
	o := c.causal
	if o == nil {
		return
	}
	now := c.s.Elapsed()
	if begin {
		o.faults = append(o.faults, fault{node: id, start: now, isolated: isolated})
		return
	}
	for i := range o.faults {
		if f := &o.faults[i]; f.node == id && f.end == 0 && f.isolated == isolated {
			f.end = now
		}
	}
}

// causalExcused says whether predecessor p, reported granted (or ended)
// at at, may have been granted after dependent d: its member was faulted
// between its request and d's grant (its coordinator may have dropped
// it, or lost it with a crash), or the algorithm said it granted d
// without it. A fault that began after d's grant excuses nothing: the
// order was broken while p's member was well (it used to excuse any
// fault up to p's grant).
func (c *Cluster) causalExcused(p *creq, dep dependent, at time.Duration) bool {
	d := dep.r
	for _, f := range c.causal.faults {
		if f.node == p.node && f.start <= dep.at && (f.end == 0 || f.end >= p.asked) {
			return true
		}
	}
	if c.cfg.CausalSkipEvent == "" {
		return false
	}
	for _, e := range c.s.Events() {
		if e.Name != c.cfg.CausalSkipEvent || e.At > at || !c.skipLateEnough(p, e.At) {
			continue
		}
		m, _ := e.Arg("member")
		of, _ := e.Arg("of")
		if m == d.node && of == p.stamp {
			return true
		}
	}
	return false
}

// skipLateEnough says whether a skip of predecessor p reported at at
// came no sooner than the algorithm's rules let it (Config.CausalSkipAfter
// after p was asked, less the clocks' drift: the algorithm counts on its
// member's clock). A skip reported sooner excuses nothing: a rule that
// gave way at once, and said so, passed every seed
// (central's TestOracleCatchesEarlySkip).
func (c *Cluster) skipLateEnough(p *creq, at time.Duration) bool {
	min := c.cfg.CausalSkipAfter
	if min == 0 {
		return true
	}
	min -= time.Duration(float64(min) * 2 * c.cfg.Hosts.DriftPPM * 1e-6)
	return at-p.asked >= min
}

// stampText shows a vector counter as incarnation.seq, the token-asking
// variant's counters (incarnation<<32 | seq).
func stampText(n uint64) string { return fmt.Sprintf("%d.%d", n>>32, n&(1<<32-1)) }

// vectorText shows v as member:incarnation.seq entries.
func vectorText(v clock.Vector) string {
	parts := make([]string, 0, v.Len())
	for _, id := range v.IDs() {
		parts = append(parts, fmt.Sprintf("%d:%s", id, stampText(v.Get(id))))
	}
	return strings.Join(parts, ",")
}
