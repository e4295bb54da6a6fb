package mutextest

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/node"
	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/pkg/clock"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/mutex"
	"github.com/synclab/synclab/pkg/wire"
)

// Config is one simulated cluster running one algorithm.
type Config struct {
	Factory mutex.Factory
	// Options are handed to every member's core (zero Lease: 1 s; zero
	// Heartbeat: 100 ms).
	Options mutex.Options
	// Members: how many (one is a cluster too: a lone member grants
	// alone); 0 picks 3 to 7 from the seed.
	Members int
	// Locks the clients take (default "counter" and "printer").
	Locks []string
	// Faults injected between phases (default: the factory's
	// Guarantees.Survives). Loss also makes the links lossy (3% lost, 1%
	// duplicated, reordered by jitter); without it they are reliable.
	Faults []mutex.Fault
	// Rounds of faults (default 6), each followed by 2 s without one.
	Rounds int
	// Shared makes a third of the requests shared (default: when the
	// factory offers shared locks).
	Shared *bool
	// Target, if set, names a member worth crashing or pausing besides
	// the lock holders (e.g. the coordinator).
	Target func(s *sim.Sim) uint32
	// Quiet is how long the faultless, requestless end lasts, in which
	// every waiting request must be granted (default 8 s).
	Quiet time.Duration
	// Hosts are the members' hosts (default Calm): their clocks' drift
	// and how late their loops run.
	Hosts Hosts
	// DiskFaults, if set, makes every member's state writes fail with
	// this probability (sim.SetDiskFaults: a full or read-only disk)
	// through the fault rounds; the quiet end has healthy disks, so
	// every waiting request must still be granted there.
	DiskFaults float64
	// CausalSkipEvent names the event by which a causal algorithm
	// (mutex.Causal) says it granted a request without a predecessor
	// its stamp names ("member": the request's, "of": the predecessor's
	// stamp counter): the causal oracle excuses that grant (causal.go).
	CausalSkipEvent string
	// CausalSkipAfter: a grant the algorithm reported making without a
	// predecessor (CausalSkipEvent) is excused only this long or longer
	// after the predecessor was asked (the least its rules wait: central's
	// 2 x DeadAfter of its member's silence); 0: whenever. A rule that
	// gave way sooner, reporting it, would pass otherwise (causal.go).
	CausalSkipAfter time.Duration
	// CausalRefused reads a frame as it leaves its member: when it is
	// the algorithm's giving up of a waiting request (central's refusal,
	// KindCentralRefuse), the request's member and its stamp counter.
	// The causal oracle then takes that request's end from the frame,
	// not from its member's report (mutex.Lost), which a lost frame
	// delays: a dependent granted after the refusal did not overtake it
	// (causal.go). nil: the member's report only.
	CausalRefused func(f wire.Frame) (member uint32, counter uint64, ok bool)
	// ShortCuts makes short one-way cuts through the fault rounds, which
	// lose stream frames (a member's syncs and requests, the
	// coordinator's grants) and are no fault: the causal oracle excuses
	// nothing across them (shortcuts.go).
	ShortCuts bool
	// Builds says which members run configuration agreement
	// (sim.SetAgreement), so which of their frames reach the cores
	// core.Message.Checked. The zero value draws it from the seed.
	Builds Builds
	// LeasesApart: the members that run no configuration agreement
	// (older builds: BuildsOlder, the older members of BuildsMixed) may
	// run another --lease, as a real older build may: each draws
	// Options.Lease or twice it (a stream of its own), and its clients
	// ask for leases up to its own. The members that run agreement keep
	// Options.Lease: one configured apart would stand back (agreement
	// compares the lease). For algorithms that keep their guarantees
	// across members configured apart while every hold is re-announced
	// (central: an unchecked member's re-announced hold is kept whole,
	// peerLease). What no algorithm here keeps is a longer lease nobody
	// re-announces (a new coordinator waits its own --lease for those:
	// central's EventLeaseAboveMax), so the run is kept from it: its
	// links lose nothing (no Loss fault) and a fault spares a member
	// holding a lease longer than half the shortest --lease (spare).
	LeasesApart bool
}

// olderBuildWindow is how long a member that runs configuration agreement
// refuses the frames of an incarnation it heard and that never announced
// (an older build's) before it admits them unchecked: three announce
// intervals (internal/node's agreeAdmit).
const olderBuildWindow = 3 * node.DefaultAnnounceInterval

// Builds says which members run configuration agreement, as mutexd does
// (its announcement: the algorithm, --lease, --heartbeat and the
// algorithm's own settings, the same on every member here: they share
// Config.Options).
type Builds uint8

const (
	// BuildsDrawn: BuildsAgreeing for an even seed, BuildsOlder for an
	// odd one, drawn apart from the cluster's other draws, so that an odd
	// seed runs as it did before agreement was simulated.
	BuildsDrawn Builds = iota
	// BuildsAgreeing: every member runs agreement; the frames of a
	// member's incarnation are Checked once its announcement came (a
	// restarted member's are refused until then).
	BuildsAgreeing
	// BuildsOlder: no member does (older builds): no frame is Checked.
	BuildsOlder
	// BuildsMixed: some members do (at least one, not all, drawn from
	// the seed): frames between two of them are Checked, an older build's
	// frames are refused by them for three announce intervals from the
	// first one they hear of its incarnation, then admitted unchecked,
	// and it checks nothing; meanwhile they send it none of their cores'
	// frames (internal/node withholds them: a cut both ways). Never drawn
	// (the run is that window longer). While the refusal was a one-way
	// cut (the older build heard them), Lamport's permission algorithm
	// did not survive it (seed 2: the older build, member 2, taken for
	// down by the others at 1.27 s, which granted without it, while it
	// granted itself: two holders at 1.281 s); permission's
	// TestMixedBuilds runs it.
	BuildsMixed
)

var buildsNames = [...]string{BuildsDrawn: "drawn", BuildsAgreeing: "agreeing", BuildsOlder: "older builds", BuildsMixed: "mixed builds"}

func (b Builds) String() string {
	if int(b) < len(buildsNames) {
		return buildsNames[b]
	}
	return fmt.Sprintf("builds(%d)", uint8(b))
}

// Hosts are the conditions of the simulated members' hosts.
type Hosts struct {
	// Name says which in a test log ("calm", "harsh").
	Name string
	// DriftPPM: each member's clock runs at a rate drawn within
	// +-DriftPPM of true time (two clocks part by up to 2 DriftPPM, under
	// mutex.DefaultMaxDriftPPM).
	DriftPPM float64
	// LateMin and LateMax: each member's loop runs up to a lateness drawn
	// in [LateMin, LateMax] behind its timers and its socket (sim.SetLate,
	// a loaded host); 0: on time.
	LateMin, LateMax time.Duration
	// SocketBuffer: each member's kernel keeps the datagrams that reach
	// it while it is paused, up to this many bytes, and it reads them,
	// stamped with their arrival, when it resumes (sim.SetSocketBuffer);
	// half the pauses are then short stalls, under two heartbeats (what
	// a member takes for a stall of its own loop). 0: none kept, every
	// pause longer than the lease.
	SocketBuffer int
	// ResumeOrder: where a paused member's first tick falls among the
	// frames its kernel kept when it resumes (sim.SetResumeOrder; the
	// daemon promises no order). The zero value: after them all.
	ResumeOrder sim.ResumeOrder
}

// Calm hosts: clocks within 100 ppm, loops on time (the default).
var Calm = Hosts{Name: "calm", DriftPPM: 100}

// Harsh hosts: clocks drifting up to 495 ppm (two of them 990 ppm apart,
// just inside the members' 1000 ppm bound) and loops 5-20 ms late: a frame
// waits in the kernel, stamped with its arrival, until the loop reads it,
// and a paused member reads, when it resumes, frames stamped before its
// pause. A core that judged a lease by those stamps would report a grant
// whose lease had already ended (the oracle refuses one).
var Harsh = Hosts{Name: "harsh", DriftPPM: 495, LateMin: 5 * time.Millisecond, LateMax: 20 * time.Millisecond}

// HarshBuffered hosts: Harsh, and a paused member's kernel keeps its
// datagrams as the lab hosts' do (net.core.rmem_default, 212992 bytes):
// when it resumes, its loop reads frames stamped during the pause, while
// the others heard nothing from it; half the pauses are short stalls.
var HarshBuffered = Hosts{Name: "harsh+buffered", DriftPPM: 495, LateMin: 5 * time.Millisecond, LateMax: 20 * time.Millisecond, SocketBuffer: 212992}

// HarshInterleaved hosts: HarshBuffered, and a resumed member's loop ticks
// before the frames its kernel kept, after them, or amid them, drawn at
// each resume (sim.ResumeDrawn), as the daemon may: its first tick sends
// a heartbeat the others may not hear, and frames stamped during the
// pause are read after it.
var HarshInterleaved = Hosts{Name: "harsh+interleaved", DriftPPM: 495, LateMin: 5 * time.Millisecond, LateMax: 20 * time.Millisecond, SocketBuffer: 212992,
	ResumeOrder: sim.ResumeDrawn}

// Cluster is a simulated cluster with one client per member and the
// oracle watching every outcome.
type Cluster struct {
	t       testing.TB
	cfg     Config
	s       *sim.Sim
	rng     *rand.Rand
	ids     []uint32
	drift   map[uint32]float64
	clients map[uint32]*client
	shared  bool
	link    sim.LinkConfig
	// builds is Config.Builds as drawn; agreeing, the members that run
	// configuration agreement.
	builds   Builds
	agreeing []uint32
	// lease is each member's --lease (Options.Lease unless
	// Config.LeasesApart drew another); longest, the longest of them.
	lease             map[uint32]time.Duration
	longest, shortest time.Duration

	// causal is the causal oracle (nil: the algorithm does not order by
	// vectors), known once the cores run (causalKnown).
	causal      *causalOracle
	causalKnown bool

	grants map[string][]*interval // per lock, in grant order
	live   map[uint64]*interval   // by node<<32|request

	// handed: the grants drained (node<<32|request) whose lock_granted
	// the log has not said yet; logged: how much of the event log
	// checkGrantEvents has read.
	handed map[uint64]bool
	logged int

	// Requests and Grants count the clients' requests and their grants;
	// Releases the grants given back by their clients.
	Requests, Grants, Releases int
	// LongestWait is the longest a granted request waited.
	LongestWait time.Duration

	// Config.ShortCuts: the short cut under way, the cuts' own draws,
	// whether a fault cuts links now (no short cut then), and how many
	// were made (shortcuts.go).
	cut           *shortCut
	cutRng        *rand.Rand
	faultCuts     bool
	ShortCutsMade int
}

// interval is one grant as real time sees it: from the grant to the
// release, or to the end of the lease (as renewed) on the granting
// member's clock. A lost lock is not shortened: its client may not know
// yet, and must stop at its lease's end.
type interval struct {
	node       uint32
	lock       string
	mode       mutex.Mode
	fence      uint64
	start, end time.Duration
}

// client is the program on one member that takes locks: it asks for one,
// holds it a while (renewing a long hold), and releases it; a few times it
// hangs and neither renews nor releases, so the lease must end it.
type client struct {
	req     mutex.RequestID
	lock    string
	mode    mutex.Mode
	asked   time.Duration
	holding bool
	lease   time.Duration
	until   time.Duration // release at (virtual time)
	renewAt time.Duration
	hung    bool
	nextTry time.Duration
	pinned  bool // asked by Hold: hangs once granted
}

// New builds the cluster of seed (nothing runs before the first Run).
func New(t testing.TB, seed int64, cfg Config) *Cluster {
	t.Helper()
	if cfg.Options.Lease == 0 {
		cfg.Options.Lease = time.Second
	}
	if cfg.Options.Heartbeat == 0 {
		cfg.Options.Heartbeat = 100 * time.Millisecond
	}
	if cfg.Members == 0 {
		cfg.Members = 3 + int(seed%5)
	}
	if len(cfg.Locks) == 0 {
		cfg.Locks = []string{"counter", "printer"}
	}
	if cfg.Faults == nil {
		cfg.Faults = cfg.Factory.Guarantees.Survives
	}
	if cfg.LeasesApart {
		cfg.Faults = slices.DeleteFunc(slices.Clone(cfg.Faults), func(f mutex.Fault) bool { return f == mutex.Loss })
	}
	if cfg.Rounds == 0 {
		cfg.Rounds = 6
	}
	if cfg.Quiet == 0 {
		cfg.Quiet = 8 * time.Second
		if cfg.LeasesApart {
			// A lease may be twice Options.Lease: the holds that
			// renew, and the queue behind them, twice as long.
			cfg.Quiet *= 2
		}
	}
	if cfg.Hosts == (Hosts{}) {
		cfg.Hosts = Calm
	}
	link := sim.LinkConfig{Delay: 200 * time.Microsecond, Jitter: 300 * time.Microsecond}
	if slices.Contains(cfg.Faults, mutex.Loss) {
		link.Loss, link.Duplicate = 0.03, 0.01
	}
	c := &Cluster{
		t: t, cfg: cfg,
		s:       sim.New(sim.Config{Seed: seed, DefaultLink: link}),
		rng:     rand.New(rand.NewPCG(uint64(seed), 7)),
		drift:   map[uint32]float64{},
		clients: map[uint32]*client{},
		grants:  map[string][]*interval{},
		live:    map[uint64]*interval{},
		shared:  cfg.Factory.Guarantees.Shared,
		link:    link,
	}
	if cfg.Shared != nil {
		c.shared = *cfg.Shared
	}
	for i := 1; i <= cfg.Members; i++ {
		c.ids = append(c.ids, uint32(i))
	}
	for _, id := range c.ids {
		ppm := cfg.Hosts.DriftPPM
		// A test may step a crashed member's clock back (Sim().Clock(id)):
		// mutexd's clock is anchored at the wall time of the daemon's start,
		// which may have been stepped back since the last run.
		clk := clock.SimConfig{Offset: time.Duration(c.rng.Int64N(int64(time.Second))), DriftPPM: c.rng.Float64()*2*ppm - ppm, AllowBackwardStep: true}
		c.drift[id] = clk.DriftPPM
		c.s.AddNode(id, netip.AddrPort{}, func(env core.Env) core.Core {
			a, err := cfg.Factory.New(env, c.options(id))
			if err != nil {
				t.Fatalf("member %d: %s: %v", id, cfg.Factory.Name, err)
			}
			return a
		}, clk)
		c.clients[id] = &client{}
	}
	if b := cfg.Hosts.SocketBuffer; b > 0 {
		for _, id := range c.ids {
			c.s.SetSocketBuffer(id, b)
		}
	}
	if o := cfg.Hosts.ResumeOrder; o != sim.ResumeFramesFirst {
		for _, id := range c.ids {
			c.s.SetResumeOrder(id, o)
		}
	}
	if h := cfg.Hosts; h.LateMax > 0 {
		for _, id := range c.ids {
			c.s.SetLate(id, h.LateMin+time.Duration(c.rng.Int64N(int64(h.LateMax-h.LateMin)+1)))
		}
	}
	c.setBuilds(seed)
	c.s.OnRefused(c.agreementCut)
	c.s.OnReady(c.outcomes)
	if cfg.CausalRefused != nil {
		c.s.OnSend(c.causalRefused)
	}
	return c
}

// setBuilds makes the members Config.Builds says run configuration
// agreement, as mutexd configures it (cmd/mutexd's agreementParams). Its
// draws come from a stream of their own.
func (c *Cluster) setBuilds(seed int64) {
	b := c.cfg.Builds
	if b == BuildsDrawn {
		b = [...]Builds{BuildsAgreeing, BuildsOlder}[uint64(seed)%2]
	}
	c.builds, c.agreeing = b, nil
	opt := c.cfg.Options
	params := map[string]string{"lease": opt.Lease.String(), "heartbeat": opt.Heartbeat.String()}
	for name, d := range opt.Params {
		params[name] = d.String()
	}
	a := &node.Agreement{Algorithm: c.cfg.Factory.Name, Params: params}
	switch b {
	case BuildsAgreeing:
		c.agreeing = slices.Clone(c.ids)
	case BuildsMixed:
		rng := rand.New(rand.NewPCG(uint64(seed), 11))
		for len(c.agreeing) == 0 || len(c.agreeing) == len(c.ids) {
			c.agreeing = nil
			for _, id := range c.ids {
				if rng.IntN(2) == 0 {
					c.agreeing = append(c.agreeing, id)
				}
			}
			if len(c.ids) == 1 {
				break
			}
		}
	}
	for _, id := range c.agreeing {
		c.s.SetAgreement(id, a)
	}
	c.lease, c.longest, c.shortest = map[uint32]time.Duration{}, opt.Lease, opt.Lease
	rng := rand.New(rand.NewPCG(uint64(seed), 13))
	for _, id := range c.ids {
		c.lease[id] = opt.Lease
		if c.cfg.LeasesApart && !slices.Contains(c.agreeing, id) {
			c.lease[id] *= time.Duration(1 + rng.IntN(2))
		}
		c.longest = max(c.longest, c.lease[id])
	}
}

// spare is the member a fault meant for victim hits (0: none, the fault
// is skipped): victim itself unless Config.LeasesApart and it holds a
// lease that ends more than half the shortest --lease from now (a new
// coordinator of a shorter --lease would not wait for it if it went
// unannounced: LeasesApart), else the Target, else the first running
// member that holds none.
func (c *Cluster) spare(victim uint32) uint32 {
	if !c.cfg.LeasesApart {
		return victim
	}
	long := func(id uint32) bool {
		for _, ivs := range c.grants {
			for _, iv := range ivs {
				if iv.node == id && iv.end > c.s.Elapsed()+c.shortest/2 {
					return true
				}
			}
		}
		return false
	}
	if !long(victim) {
		return victim
	}
	if c.cfg.Target != nil {
		if t := c.cfg.Target(c.s); t != 0 && c.s.Running(t) && !long(t) {
			return t
		}
	}
	for _, id := range c.ids {
		if c.s.Running(id) && !long(id) {
			return id
		}
	}
	return 0
}

// options are the Options member id's core runs with: Config.Options,
// with the member's own --lease (Config.LeasesApart).
func (c *Cluster) options(id uint32) mutex.Options {
	opt := c.cfg.Options
	opt.Lease = c.lease[id]
	return opt
}

// Sim is the simulator under the cluster (faults, counts, traces).
func (c *Cluster) Sim() *sim.Sim { return c.s }

// IDs are the members.
func (c *Cluster) IDs() []uint32 { return slices.Clone(c.ids) }

func (c *Cluster) algorithm(id uint32) mutex.Algorithm { return c.s.Core(id).(mutex.Algorithm) }

// trueTime is the real (virtual) time at which member id's clock reads
// local, given that it read atLocal at at (the clocks only drift: mutexd
// never adjusts one).
func (c *Cluster) trueTime(id uint32, at time.Duration, atLocal, local time.Time) time.Duration {
	return at + time.Duration(float64(local.Sub(atLocal))/(1+c.drift[id]*1e-6))
}

// outcomes drains a member's outcomes after each of its Readys, as mutexd
// does, into the oracle's intervals and the client's state.
func (c *Cluster) outcomes(r sim.Ready) {
	a, ok := r.Core.(mutex.Algorithm)
	if !ok {
		c.t.Fatalf("member %d: %T is not a mutex.Algorithm", r.Node, r.Core)
	}
	cl := c.clients[r.Node]
	for _, o := range a.Outcomes() {
		key := uint64(r.Node)<<32 | uint64(o.Request())
		mine := cl.req == o.Request()
		switch o := o.(type) {
		case mutex.Granted:
			c.causalGranted(r.Node, o.ID, r.At)
			if !r.Local.Before(o.Expires) {
				c.t.Fatalf("%v: member %d reported request %d's grant of %s (fence %d) at %v on its clock, its lease (%v) already over at %v\n%s",
					r.At, r.Node, o.ID, o.Lock, o.Fence, r.Local.Format(stampLayout), o.Lease, o.Expires.Format(stampLayout), c.Tail())
			}
			iv := &interval{node: r.Node, lock: o.Lock, mode: o.Mode, fence: o.Fence, start: r.At,
				end: c.trueTime(r.Node, r.At, r.Local, o.Expires)}
			c.checkFence(iv)
			if c.handed == nil {
				c.handed = map[uint64]bool{}
			}
			c.handed[key] = true
			c.grants[o.Lock] = append(c.grants[o.Lock], iv)
			c.live[key] = iv
			c.Grants++
			if !mine {
				c.t.Fatalf("%v: member %d granted request %d for %s, which its client does not wait for\n%s", r.At, r.Node, o.ID, o.Lock, c.Tail())
			}
			cl.holding = true
			c.LongestWait = max(c.LongestWait, r.At-cl.asked)
			cl.lease = o.Lease
			cl.renewAt = r.At + cl.lease/3
			hold := time.Duration(c.rng.Int64N(int64(20 * time.Millisecond)))
			switch c.rng.IntN(20) {
			case 0:
				cl.hung = true // neither renews nor releases
			case 1, 2:
				hold = cl.lease * time.Duration(1+c.rng.IntN(3)) // needs renewals
			}
			if cl.pinned {
				cl.hung, hold = true, 0
			}
			cl.until = r.At + hold
		case mutex.Renewed:
			if !r.Local.Before(o.Expires) {
				c.t.Fatalf("%v: member %d reported request %d's renewal of %s at %v on its clock, its lease already over at %v\n%s",
					r.At, r.Node, o.ID, o.Lock, r.Local.Format(stampLayout), o.Expires.Format(stampLayout), c.Tail())
			}
			if iv := c.live[key]; iv != nil {
				iv.end = c.trueTime(r.Node, r.At, r.Local, o.Expires)
			}
			if mine {
				cl.renewAt = r.At + cl.lease/3
			}
		case mutex.Released:
			if iv := c.live[key]; iv != nil {
				iv.end = min(iv.end, r.At)
				delete(c.live, key)
			} else {
				c.causalEnded(r.Node, o.ID, r.At, false)
			}
		case mutex.Lost:
			if c.live[key] == nil {
				c.causalEnded(r.Node, o.ID, r.At, true)
			}
			delete(c.live, key)
			if mine {
				*cl = client{nextTry: r.At + 20*time.Millisecond}
			}
		}
	}
	c.checkGrantEvents(r)
}

// checkGrantEvents: the log says lock_granted only for a grant its
// client has (drained by now): a grant the core holds for a write is
// logged when it leaves the hold (a review: it was logged when the core
// decided, and a grant held past a crash was logged and never handed
// over).
func (c *Cluster) checkGrantEvents(r sim.Ready) {
	evs := c.s.Events()
	for _, e := range evs[min(c.logged, len(evs)):] {
		if e.Name != mutex.EventGranted {
			continue
		}
		req, _ := argOf(e.Args, "request").(uint64)
		key := uint64(e.Node)<<32 | req
		if !c.handed[key] {
			c.t.Fatalf("%v: member %d logged lock_granted for request %d before its client had the grant (%v)\n%s", r.At, e.Node, req, e.Msg, c.Tail())
		}
		delete(c.handed, key)
	}
	c.logged = len(evs)
}

// argOf is the value of key in slog-style args (nil: none).
func argOf(args []any, key string) any {
	for i := 0; i+1 < len(args); i += 2 {
		if k, ok := args[i].(string); ok && k == key {
			return args[i+1]
		}
	}
	return nil
}

// stampLayout shows a member's clock reading to the microsecond.
const stampLayout = "15:04:05.000000"

// checkFence: a grant's fence is above the fence of every grant of the
// lock that ended before it began, or equal when both are shared; and no
// two exclusive grants share a fence. That, with readers together sharing
// one fence (Check), is what a resource needs that keeps the highest fence
// it has seen and refuses a lower one: every holder is accepted while its
// grant lasts, and one that outlived its lease is refused once a later
// holder has used the resource (a reader only after a writer: readers
// together may read).
func (c *Cluster) checkFence(iv *interval) {
	for _, p := range c.grants[iv.lock] {
		bothShared := p.mode == mutex.Shared && iv.mode == mutex.Shared
		switch {
		case p.end <= iv.start && (p.fence > iv.fence || p.fence == iv.fence && !bothShared):
			c.t.Fatalf("%v: %s granted fence %d at member %d (%v) after member %d's fence %d (%v) ended at %v\n%s",
				iv.start, iv.lock, iv.fence, iv.node, iv.mode, p.node, p.fence, p.mode, p.end, c.Tail())
		case p.fence == iv.fence && !bothShared:
			c.t.Fatalf("%v: %s: fence %d granted twice (members %d and %d)\n%s", iv.start, iv.lock, iv.fence, p.node, iv.node, c.Tail())
		}
	}
}

// drive lets every running client act at the current instant.
func (c *Cluster) drive(active bool) {
	now := c.s.Elapsed()
	if !c.causalKnown && c.s.Running(c.ids[0]) {
		c.causalKnown = true
		c.causal = causalOracleFor(c.algorithm(c.ids[0]))
	}
	for _, id := range c.ids {
		cl := c.clients[id]
		if !c.s.Running(id) {
			continue
		}
		switch {
		case cl.req == 0 && active && now >= cl.nextTry:
			cl.lock = c.cfg.Locks[c.rng.IntN(len(c.cfg.Locks))]
			cl.mode = mutex.Exclusive
			if c.shared && c.rng.IntN(3) == 0 {
				cl.mode = mutex.Shared
			}
			lease := c.lease[id] * time.Duration(3+c.rng.IntN(7)) / 10
			after := c.programMessage(id)
			c.do(id, func(a mutex.Algorithm, now time.Time) {
				req, err := a.Acquire(now, mutex.Request{Lock: cl.lock, Mode: cl.mode, Lease: lease, Client: "sim", After: after})
				if err != nil {
					c.t.Fatalf("member %d: acquire %s: %v", id, cl.lock, err)
				}
				cl.req, cl.asked = req, c.s.Elapsed()
				c.causalAsked(id, req, after)
			})
			c.Requests++
		case cl.holding && !cl.hung && now >= cl.until:
			req := cl.req
			*cl = client{nextTry: now + time.Duration(c.rng.Int64N(int64(30*time.Millisecond)))}
			c.do(id, func(a mutex.Algorithm, now time.Time) {
				err := a.Release(now, req)
				if err != nil && !errors.Is(err, mutex.ErrExpired) && !errors.Is(err, mutex.ErrUnknownRequest) {
					c.t.Fatalf("member %d: release %d: %v", id, req, err)
				}
			})
			c.Releases++
		case cl.holding && !cl.hung && now >= cl.renewAt:
			cl.renewAt = now + cl.lease // the next is set by the renewal's outcome
			c.do(id, func(a mutex.Algorithm, now time.Time) {
				a.Renew(now, cl.req, 0) // a refusal arrives as Lost
			})
		case cl.holding && cl.hung && now >= cl.until+2*cl.lease:
			// The hung client comes back long after its lease ended and
			// gives back what it no longer holds.
			req := cl.req
			*cl = client{nextTry: now}
			c.do(id, func(a mutex.Algorithm, now time.Time) { a.Release(now, req) })
		}
	}
}

func (c *Cluster) do(id uint32, f func(a mutex.Algorithm, now time.Time)) {
	c.s.Do(id, func(cc core.Core) { f(cc.(mutex.Algorithm), c.s.Clock(id).Now()) })
}

// Run advances d in 1 ms steps, the clients asking for locks when active.
func (c *Cluster) Run(d time.Duration, active bool) {
	end := c.s.Elapsed() + d
	for c.s.Elapsed() < end {
		c.s.Run(time.Millisecond)
		c.shortCuts(active)
		c.drive(active)
	}
}

// Hold makes member id's client, which must be idle, ask now for lock
// (exclusive, for lease) and, once granted, keep it for the whole lease
// (a hung client: no renewal, no release): a test that steers a scenario
// asks with it, the oracle watching as for any request.
func (c *Cluster) Hold(id uint32, lock string, lease time.Duration) mutex.RequestID {
	cl := c.clients[id]
	if cl.req != 0 {
		c.t.Fatalf("member %d: Hold %s while its client waits for or holds %s", id, lock, cl.lock)
	}
	*cl = client{lock: lock, mode: mutex.Exclusive, pinned: true}
	c.do(id, func(a mutex.Algorithm, now time.Time) {
		req, err := a.Acquire(now, mutex.Request{Lock: lock, Mode: mutex.Exclusive, Lease: lease, Client: "sim"})
		if err != nil {
			c.t.Fatalf("member %d: acquire %s: %v", id, lock, err)
		}
		cl.req, cl.asked = req, c.s.Elapsed()
	})
	c.Requests++
	return cl.req
}

// Crash crashes member id (sim.Crash): its client's program dies with it.
func (c *Cluster) Crash(id uint32) {
	c.s.Crash(id)
	c.resetClient(id)
	c.causalFault(id, true)
}

// Isolate cuts member id off from every other member (sim.Isolate) until
// Heal, across its restarts: a fault, for the oracles that excuse one.
func (c *Cluster) Isolate(id uint32) {
	c.faultCutting(true)
	c.s.Isolate(id)
	c.causalWindow(id, true, true)
}

// Heal ends every cut (sim.Heal), Isolate's among them.
func (c *Cluster) Heal() {
	c.s.Heal()
	c.faultCutting(false)
	for _, id := range c.ids {
		c.causalWindow(id, false, true)
	}
}

// Restart restarts crashed member id (sim.Restart) with a new client.
func (c *Cluster) Restart(id uint32) {
	c.s.Restart(id)
	c.resetClient(id)
	c.causalFault(id, false)
}

// Settle runs the quiet end of a test (Quiet, no new requests, no
// faults) and fails t unless every waiting request was granted, then runs
// the oracle (Check).
func (c *Cluster) Settle() {
	c.t.Helper()
	c.Run(c.cfg.Quiet, false)
	for _, id := range c.Waiting() {
		cl := c.clients[id]
		c.t.Fatalf("%s: member %d: request %d for %s, asked at %v, never granted\n%+v\n%s",
			c.cfg.Factory.Name, id, cl.req, cl.lock, cl.asked, c.algorithm(id).Report(), c.Tail())
	}
	c.Check()
}

// Holding says whether member id's client holds the lock it asked for.
func (c *Cluster) Holding(id uint32) bool { return c.clients[id].holding }

// crashed, restarted and resumed members lose their client's state: the
// program that asked died with them, or its lease ran out.
func (c *Cluster) resetClient(id uint32) {
	c.causalEnded(id, 0, c.s.Elapsed(), false)
	if cl := c.clients[id]; cl.req != 0 {
		for key, iv := range c.live {
			if key>>32 == uint64(id) && iv.node == id {
				delete(c.live, key)
			}
		}
	}
	*c.clients[id] = client{nextTry: c.s.Elapsed() + 50*time.Millisecond}
}

// Holder returns a running member holding a lock, else the Target, else
// a random running member.
func (c *Cluster) Holder() uint32 {
	// In key order, not the map's: a seed must replay the same run.
	for _, key := range slices.Sorted(maps.Keys(c.live)) {
		if iv := c.live[key]; c.s.Running(iv.node) {
			return iv.node
		}
	}
	if c.cfg.Target != nil {
		if id := c.cfg.Target(c.s); id != 0 && c.s.Running(id) {
			return id
		}
	}
	return c.Other()
}

// Other returns a random running member.
func (c *Cluster) Other() uint32 {
	var up []uint32
	for _, id := range c.ids {
		if c.s.Running(id) {
			up = append(up, id)
		}
	}
	if len(up) == 0 {
		return c.ids[0]
	}
	return up[c.rng.IntN(len(up))]
}

// Fault injects one fault of kind f for a random while, runs through it
// and ends it.
func (c *Cluster) Fault(f mutex.Fault) {
	hold := time.Duration(200+c.rng.IntN(1500)) * time.Millisecond
	switch f {
	case mutex.Crash:
		victim := c.Holder()
		if c.rng.IntN(2) == 0 {
			victim = c.Other()
		}
		if victim = c.spare(victim); victim == 0 {
			c.Run(hold, true)
			return
		}
		c.Crash(victim)
		c.Run(hold, true)
		c.Restart(victim)
	case mutex.Pause:
		victim := c.spare(c.Holder())
		pause := c.longest + hold
		if c.cfg.Hosts.SocketBuffer > 0 && c.rng.IntN(2) == 0 {
			// A short stall, half a heartbeat to two: the member does
			// not take it for one, and reads what its kernel kept.
			hb := c.cfg.Options.Heartbeat
			pause = hb/2 + time.Duration(c.rng.Int64N(int64(3*hb/2)))
		}
		if victim == 0 {
			c.Run(pause, true)
			return
		}
		c.s.Pause(victim)
		c.causalFault(victim, true)
		c.Run(pause, true)
		c.s.Resume(victim)
		c.causalFault(victim, false)
	case mutex.Partition:
		// A minority (one member, the holder or the target) alone.
		victim := c.spare(c.Holder())
		if victim == 0 {
			c.Run(hold, true)
			return
		}
		c.faultCutting(true)
		c.s.Isolate(victim)
		c.causalFault(victim, true)
		c.Run(hold, true)
		c.s.Heal()
		c.faultCutting(false)
		c.causalFault(victim, false)
	case mutex.Loss:
		// A short burst: the links between a holder and another member
		// drop everything.
		a, b := c.Holder(), c.Other()
		c.faultCutting(true)
		if a != b {
			c.s.Cut(a, b)
			c.s.Cut(b, a)
			c.causalFault(a, true)
			c.causalFault(b, true)
		}
		c.Run(time.Duration(50+c.rng.IntN(300))*time.Millisecond, true)
		c.s.Heal()
		c.faultCutting(false)
		c.causalFault(a, false)
		c.causalFault(b, false)
	}
}

// Check runs the exclusion oracle over every grant so far: an exclusive
// grant never overlaps another grant of its lock in real time; shared
// grants overlap only each other, and carry the same fence (a resource
// that keeps the highest fence it has seen would refuse the lower of two
// readers once the other had read).
func (c *Cluster) Check() {
	for name, ivs := range c.grants {
		byStart := slices.Clone(ivs)
		slices.SortFunc(byStart, func(a, b *interval) int { return cmp.Compare(a.start, b.start) })
		// latest exclusive and latest any-mode end seen so far, and the
		// readers whose grant still lasts.
		var lastEx, lastAny *interval
		var readers []*interval
		for _, b := range byStart {
			if lastEx != nil && b.start < lastEx.end {
				c.t.Fatalf("%s: member %d's %v grant (fence %d) from %v inside member %d's exclusive grant (fence %d) [%v, %v]\n%s",
					name, b.node, b.mode, b.fence, b.start, lastEx.node, lastEx.fence, lastEx.start, lastEx.end, c.Tail())
			}
			if b.mode == mutex.Exclusive && lastAny != nil && b.start < lastAny.end {
				c.t.Fatalf("%s: member %d's exclusive grant (fence %d) from %v inside member %d's %v grant (fence %d) [%v, %v]\n%s",
					name, b.node, b.fence, b.start, lastAny.node, lastAny.mode, lastAny.fence, lastAny.start, lastAny.end, c.Tail())
			}
			if b.mode == mutex.Shared {
				readers = slices.DeleteFunc(readers, func(a *interval) bool { return a.end <= b.start })
				for _, a := range readers {
					if a.fence != b.fence {
						c.t.Fatalf("%s: member %d's shared grant (fence %d) from %v beside member %d's shared grant with another fence (%d) [%v, %v]\n%s",
							name, b.node, b.fence, b.start, a.node, a.fence, a.start, a.end, c.Tail())
					}
				}
				readers = append(readers, b)
			}
			if b.mode == mutex.Exclusive && (lastEx == nil || b.end > lastEx.end) {
				lastEx = b
			}
			if lastAny == nil || b.end > lastAny.end {
				lastAny = b
			}
		}
	}
}

// Waiting returns the members whose client waits for a lock.
func (c *Cluster) Waiting() []uint32 {
	var out []uint32
	for _, id := range c.ids {
		if cl := c.clients[id]; cl.req != 0 && !cl.holding {
			out = append(out, id)
		}
	}
	return out
}

// Tail is the end of the event log, for failure messages.
func (c *Cluster) Tail() string {
	evs := c.s.Events()
	var b strings.Builder
	for _, e := range evs[max(0, len(evs)-60):] {
		b.WriteString(e.String() + "\n")
	}
	return b.String()
}

// Run is the standard run of an algorithm over one seed: 3 s of clients
// taking locks, then Rounds faults drawn from cfg.Faults each followed by
// 2 s of calm, then a quiet end in which every waiting request is granted;
// the oracle checks exclusion, fences and liveness.
func Run(t testing.TB, seed int64, cfg Config) *Cluster {
	t.Helper()
	c := New(t, seed, cfg)
	start := 3 * time.Second
	if c.builds == BuildsMixed {
		// The members that run agreement refuse an older build's frames
		// until it has been heard for three announce intervals without
		// announcing itself (then they admit it unchecked): until then
		// each side may elect its own coordinator, neither with a
		// majority's support.
		start += olderBuildWindow
	}
	if c.cfg.ShortCuts && c.cfg.LeasesApart {
		// A short cut of the coordinator's link may have a member elect
		// anew, and the new coordinator holds back its own --lease
		// (twice Options.Lease, drawn apart) before it grants: nothing
		// was granted in the first 3 s (older builds, calm seed 15,
		// harsh seed 21: a term at 1.0 s, held 2.07 s).
		start += c.longest
	}
	c.Run(start, true)
	if c.Grants == 0 {
		t.Fatalf("%s: nothing granted in %v (%s)\n%s", cfg.Factory.Name, start, c.builds, c.Tail())
	}
	c.setDiskFaults(c.cfg.DiskFaults)
	for round := range c.cfg.Rounds {
		if len(c.cfg.Faults) > 0 {
			c.Fault(c.cfg.Faults[(int(seed)+round)%len(c.cfg.Faults)])
		}
		c.Run(2*time.Second, true)
	}
	c.setDiskFaults(0)
	c.Settle()
	return c
}

// setDiskFaults makes every member's state writes fail with probability
// p from now on (nothing when the config asks for no disk faults, so a
// run without them draws exactly what it drew before).
func (c *Cluster) setDiskFaults(p float64) {
	if c.cfg.DiskFaults == 0 {
		return
	}
	for _, id := range c.ids {
		c.s.SetDiskFaults(id, p)
	}
}

// String summarises the run for a test log.
func (c *Cluster) String() string {
	var sent uint64
	for _, k := range wire.Kinds() {
		sent += c.s.Sent(k)
	}
	causal := ""
	if o := c.causal; o != nil {
		causal = fmt.Sprintf(", %d granted after a program message (%d asked while a predecessor waited)", o.Checked, o.Waited)
	}
	if c.ShortCutsMade > 0 {
		causal += fmt.Sprintf(", %d short one-way cuts", c.ShortCutsMade)
	}
	builds := c.builds.String()
	if c.builds == BuildsMixed {
		builds = fmt.Sprintf("%s (agreement on %v)", builds, c.agreeing)
	}
	if c.longest > c.cfg.Options.Lease {
		var long []uint32
		for _, id := range c.ids {
			if c.lease[id] > c.cfg.Options.Lease {
				long = append(long, id)
			}
		}
		builds += fmt.Sprintf(", --lease %v on %v", c.longest, long)
	}
	return fmt.Sprintf("%s, %d members, %s: %d requests, %d grants, %d releases, longest wait %v, %d frames%s",
		c.cfg.Factory.Name, len(c.ids), builds, c.Requests, c.Grants, c.Releases, c.LongestWait, sent, causal)
}

// MessagesPerEntry measures what one uncontended entry (acquire, hold,
// release) costs at n members on reliable links: the frames all members
// send from the request to the release's last consequence, heartbeats
// excepted, averaged over entries at every member in turn.
func MessagesPerEntry(t testing.TB, f mutex.Factory, opt mutex.Options, n int) float64 {
	t.Helper()
	none := false
	c := New(t, 1, Config{Factory: f, Options: opt, Members: n, Faults: []mutex.Fault{}, Shared: &none})
	c.Run(2*time.Second, false) // settle: elections, first heartbeats
	count := func() uint64 {
		var sum uint64
		for _, k := range wire.Kinds() {
			if k != wire.KindHeartbeat && k != wire.KindPermHeartbeat {
				sum += c.s.Sent(k)
			}
		}
		return sum
	}
	var total uint64
	entries := 0
	for round := range 2 {
		for _, id := range c.ids {
			before := count()
			cl := c.clients[id]
			c.do(id, func(a mutex.Algorithm, now time.Time) {
				req, err := a.Acquire(now, mutex.Request{Lock: "counter", Lease: opt.Lease, Client: "count"})
				if err != nil {
					t.Fatalf("member %d: acquire: %v", id, err)
				}
				cl.req, cl.asked = req, c.s.Elapsed()
			})
			if !c.s.RunUntil(func() bool { return cl.holding }, 5*time.Second) {
				t.Fatalf("%s: member %d not granted within 5 s\n%s", f.Name, id, c.Tail())
			}
			req := cl.req
			*cl = client{}
			c.do(id, func(a mutex.Algorithm, now time.Time) {
				if err := a.Release(now, req); err != nil {
					t.Fatalf("member %d: release: %v", id, err)
				}
			})
			// The release's consequences (a release to all, a token's
			// move) take a few message delays; heartbeats are not counted.
			c.s.Run(50 * time.Millisecond)
			if round > 0 { // the first round warms up (a token's first trip)
				total += count() - before
				entries++
			}
		}
	}
	c.Check()
	return float64(total) / float64(entries)
}

// RenewalLateSaid fails t unless events hold exactly one
// mutex.EventRenewalLate, of cause ("loop_late", "answers_late") naming
// members, whose text says each of says.
func RenewalLateSaid(t testing.TB, events []core.Event, cause, members string, says ...string) {
	t.Helper()
	var said []core.Event
	for _, e := range events {
		if e.Name == mutex.EventRenewalLate {
			said = append(said, e)
		}
	}
	if len(said) != 1 {
		t.Fatalf("%d %s events, want 1", len(said), mutex.EventRenewalLate)
	}
	e := said[0]
	t.Logf("%s", e.Msg)
	c, _ := (sim.Event{Event: e}).Arg("cause")
	m, _ := (sim.Event{Event: e}).Arg("members")
	if c != cause || m != members {
		t.Fatalf("cause %v, members %v; want %s, %s: %s", c, m, cause, members, e.Msg)
	}
	for _, w := range says {
		if !strings.Contains(e.Msg, w) {
			t.Fatalf("the event does not say %q: %s", w, e.Msg)
		}
	}
}
