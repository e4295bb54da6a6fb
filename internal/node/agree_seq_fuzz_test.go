package node

import (
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/wire"
)

// seqLAN is three keyed members with configuration agreement, driven as
// the daemon drives a node (each ticked at its NextTick, MaxSleep at
// most), over links a program cuts, thins and heals, with clocks it steps
// and nodes it restarts (a new incarnation): FuzzAgreementSequence.
type seqLAN struct {
	t      testing.TB
	nodes  map[uint32]*Node
	inc    map[uint32]uint32
	next   map[uint32]time.Time     // real time of each node's next wake
	off    map[uint32]time.Duration // each node's clock: real time + off
	cut    map[[2]uint32]bool       // frames from one node to another lost
	noRef  map[uint32]bool          // the node's refreshes lost
	loss   int                      // one frame in loss lost (0: none)
	rnd    *rand.Rand
	now    time.Time
	wakes  map[uint32]int
	frames map[[2]uint32]int // config frames (announcements, refreshes, timings) per pair
	// keyless: the cluster runs without a key (--insecure), and the
	// program forges frames in the members' names.
	keyless bool
}

func newSeqLAN(t testing.TB, seed uint64, keyless bool) *seqLAN {
	l := &seqLAN{t: t, keyless: keyless, nodes: map[uint32]*Node{}, inc: map[uint32]uint32{}, next: map[uint32]time.Time{},
		off: map[uint32]time.Duration{}, cut: map[[2]uint32]bool{}, noRef: map[uint32]bool{}, rnd: rand.New(rand.NewPCG(seed, 7)),
		now: t0, wakes: map[uint32]int{}, frames: map[[2]uint32]int{}}
	for id := uint32(1); id <= 3; id++ {
		l.inc[id] = 1
		l.start(id)
	}
	return l
}

// start (re)starts node id in its incarnation l.inc[id], first ticked a
// driver's TickInterval later.
func (l *seqLAN) start(id uint32) {
	all := scaleMembers(3)
	c := Config{ID: id, Members: maps.Clone(all), Keys: []wire.Key{testKey}, Cluster: "lab", Service: "electd", Incarnation: l.inc[id],
		Agreement: &Agreement{Algorithm: "bully", Params: map[string]string{"priorities": ""}}}
	if l.keyless {
		c.Keys = nil
	}
	nd, err := New(c, &scheduler{})
	if err != nil {
		l.t.Fatal(err)
	}
	l.nodes[id] = nd
	l.next[id] = l.now.Add(10*time.Millisecond + time.Duration(id)*time.Millisecond)
}

// forge hands node to, in member id's name and from its address, what a
// node configured as member id (incarnation inc, algorithm algo) sends
// it: its announcement (asking for an answer) or a refresh (spacing
// 0 or 65535 s, its digest or another) and a core frame: what anyone on
// the LAN can send a keyless cluster.
func (l *seqLAN) forge(id, to, inc uint32, algo string, what int) {
	all := scaleMembers(3)
	c := Config{ID: id, Members: maps.Clone(all), Cluster: "lab", Service: "electd", Incarnation: inc,
		Agreement: &Agreement{Algorithm: algo, Params: map[string]string{"priorities": ""}}}
	forger, err := New(c, &recorder{})
	if err != nil {
		l.t.Fatal(err)
	}
	forger.Tick(l.now.Add(l.off[id]))
	switch what % 3 {
	case 1:
		if what%2 == 0 {
			forger.agree.spacing = 0
		} else {
			forger.agree.spacing = 65535 * time.Second
		}
		forger.refresh(to)
	case 2:
		forger.own = append(forger.own, core.Message{To: to, Kind: wire.KindHeartbeat, Payload: make([]byte, 8)})
	}
	nd := l.nodes[to]
	for _, s := range forger.Ready().Sends {
		if s.To == all[to] {
			_ = nd.Receive(Inbound{From: all[id], Data: forger.Finalize(s, l.now.Add(l.off[id])), Time: l.now.Add(l.off[to])})
		}
	}
	l.flush(nd, l.now, 0)
}

func (l *seqLAN) byAddr(a string) *Node {
	for _, nd := range l.nodes {
		if nd.cfg.Members[nd.cfg.ID].String() == a {
			return nd
		}
	}
	return nil
}

func (l *seqLAN) lost(from, to uint32, k wire.Kind) bool {
	switch {
	case l.cut[[2]uint32{from, to}]:
		return true
	case k == wire.KindConfigRefresh && l.noRef[from]:
		return true
	case l.loss > 0 && l.rnd.IntN(l.loss) == 0:
		return true
	}
	return false
}

// flush delivers nd's sends at real time now, and what they make the
// receivers send.
func (l *seqLAN) flush(nd *Node, now time.Time, depth int) {
	if depth > 20 {
		l.t.Fatalf("frames answered by frames 20 deep at %v", now.Sub(t0))
	}
	from := nd.cfg.ID
	for _, s := range nd.Ready().Sends {
		to := l.byAddr(s.To.String())
		if to == nil {
			continue
		}
		if s.Kind == wire.KindConfig || s.Kind == wire.KindConfigRefresh || s.Kind == wire.KindConfigTimings {
			l.frames[[2]uint32{from, to.cfg.ID}]++
		}
		if l.lost(from, to.cfg.ID, s.Kind) {
			continue
		}
		_ = to.Receive(Inbound{From: nd.cfg.Members[from], Data: nd.Finalize(s, now.Add(l.off[from])), Time: now.Add(l.off[to.cfg.ID])})
		l.flush(to, now, depth+1)
	}
	nd.Notices()
}

// run drives the nodes for d of real time; a node woken more than once a
// millisecond on average, or sending a member more than a config frame or
// so a second, fails the program.
func (l *seqLAN) run(d time.Duration) {
	end := l.now.Add(d)
	wakes0, frames0 := maps.Clone(l.wakes), maps.Clone(l.frames)
	for {
		var id uint32
		var at time.Time
		for _, i := range slices.Sorted(maps.Keys(l.next)) {
			if w := l.next[i]; id == 0 || w.Before(at) {
				id, at = i, w
			}
		}
		if !at.Before(end) {
			break
		}
		l.now = at
		nd := l.nodes[id]
		local := at.Add(l.off[id])
		nd.Tick(local)
		if l.rnd.IntN(4) == 0 {
			// The core speaks now and then (its frames go through
			// agreeAdmit, and are withheld from a member it refuses).
			sc := nd.core.(*scheduler)
			for _, o := range nd.others {
				sc.rd.Messages = append(sc.rd.Messages, core.Message{To: o, Kind: wire.KindHeartbeat, Payload: make([]byte, 8)})
			}
		}
		l.wakes[id]++
		if l.wakes[id]-wakes0[id] > int(d/time.Millisecond)+100 {
			l.t.Fatalf("node %d woken %d times in %v: a busy loop (next tick %v)", id, l.wakes[id]-wakes0[id], d, l.next[id].Sub(at))
		}
		l.flush(nd, at, 0)
		for _, i := range slices.Sorted(maps.Keys(l.nodes)) {
			o := l.nodes[i]
			w, ok := o.NextTick(at.Add(l.off[i]))
			if !ok {
				w = at.Add(l.off[i]).Add(10 * time.Millisecond)
			}
			real := w.Add(-l.off[i])
			if i == id || real.Before(l.next[i]) {
				l.next[i] = maxTime(real, at).Add(100 * time.Microsecond)
			}
		}
	}
	l.now = end
	for pair, n := range l.frames {
		if sent := n - frames0[pair]; sent > int(4*d/time.Second)+20 {
			l.t.Fatalf("node %d sent node %d %d config frames in %v", pair[0], pair[1], sent, d)
		}
	}
}

// FuzzAgreementSequence: whatever a program does to three agreeing
// members (links cut one way or thinned, refreshes lost, clocks stepped
// back or forward by up to hours, restarts), no node panics, busy-loops or
// floods a member with config frames, and once the links heal every node
// agrees with every member again within two minutes, and at rest sends
// each member at most twice the config frames of its refresh spacing. It reaches what the unit
// tests of the slots (refreshSlots, refreshDue), the lapse ask and the
// refusal's window (withholds) set up one by one.
func FuzzAgreementSequence(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0, 40, 2, 1, 0, 60, 6, 0, 0, 80})
	f.Add([]byte{0, 30, 1, 1, 2, 0, 90, 6, 0, 4, 1, 0, 40})
	f.Add([]byte{0, 30, 3, 2, 200, 0, 50, 3, 2, 10, 0, 30})
	f.Add([]byte{0, 30, 5, 8, 0, 120, 4, 3, 0, 30, 6, 0, 60})
	f.Add([]byte{1, 30, 7, 1, 2, 1, 1, 0, 0, 5, 7, 3, 2, 2, 0, 1, 0, 8})
	f.Add([]byte{1, 30, 7, 1, 2, 2, 0, 1, 0, 5, 7, 3, 2, 0, 1, 2, 0, 8})
	f.Fuzz(func(t *testing.T, prog []byte) {
		if len(prog) > 64 {
			prog = prog[:64]
		}
		var seed uint64
		for _, b := range prog {
			seed = seed*31 + uint64(b)
		}
		keyless := len(prog) > 0 && prog[0]&1 == 1
		l := newSeqLAN(t, seed, keyless)
		at := 0
		byte1 := func() int {
			if at >= len(prog) {
				return 0
			}
			at++
			return int(prog[at-1])
		}
		for at < len(prog) {
			switch op := byte1() % 8; op {
			case 0: // run a while
				l.run(time.Duration(1+byte1()) * 500 * time.Millisecond)
			case 1: // cut (or heal) one direction
				a, b := uint32(1+byte1()%3), uint32(1+byte1()%3)
				if a != b {
					l.cut[[2]uint32{a, b}] = !l.cut[[2]uint32{a, b}]
				}
			case 2: // a node's refreshes lost (or not)
				id := uint32(1 + byte1()%3)
				l.noRef[id] = !l.noRef[id]
			case 3: // a node's clock stepped
				id := uint32(1 + byte1()%3)
				b := byte1()
				step := time.Duration(b%64) * time.Second
				if b >= 128 {
					step = time.Duration(b%64) * 7 * time.Minute
				}
				if b&64 != 0 {
					step = -step
				}
				l.off[id] += step
			case 4: // a node restarts
				id := uint32(1 + byte1()%3)
				l.inc[id]++
				l.start(id)
			case 5: // thin every link
				l.loss = byte1() % 16
			case 6: // heal
				clear(l.cut)
				clear(l.noRef)
				l.loss = 0
			case 7: // a short run, or a forged frame (keyless)
				if !l.keyless {
					l.run(time.Duration(1+byte1()) * 10 * time.Millisecond)
					break
				}
				id, to := uint32(1+byte1()%3), uint32(1+byte1()%3)
				incs := []uint32{l.inc[id], l.inc[id] + 1, 1<<24 - 1, 1 << 23} // incarnations are 24 bits (wire.SeqParts)
				inc := incs[byte1()%len(incs)]
				algo := []string{"bully", "changroberts"}[byte1()%2]
				if id != to {
					l.forge(id, to, inc, algo, byte1())
				}
			}
		}
		clear(l.cut)
		clear(l.noRef)
		l.loss = 0
		l.run(2 * time.Minute)
		for _, id := range slices.Sorted(maps.Keys(l.nodes)) {
			st := l.nodes[id].Status().Agreement
			if l.nodes[id].Standing() != StandingAgreed {
				t.Fatalf("node %d %v two minutes after the links healed", id, l.nodes[id].Standing())
			}
			for _, m := range st.Members {
				if m.State != "agrees" {
					t.Fatalf("node %d takes member %d for %q two minutes after the links healed", id, m.ID, m.State)
				}
			}
		}
		frames0 := maps.Clone(l.frames)
		l.run(time.Minute)
		for pair, n := range l.frames {
			// A refresh (and its timings) every QuietInterval (8 s): 7 or
			// 8 a minute.
			if sent := n - frames0[pair]; sent > 16 {
				t.Fatalf("at rest node %d sent node %d %d config frames in a minute", pair[0], pair[1], sent)
			}
		}
	})
}
