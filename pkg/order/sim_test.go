package order

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/internal/testkit/leadcheck"
	"github.com/synclab/synclab/pkg/clock"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/order/rsm"
	"github.com/synclab/synclab/pkg/wire"
)

// oracle knows the truth the replicas cannot: every message sent, in
// what order, and what its sender had delivered (or sent) before it, the
// true happens-before of causal messages.
type oracle struct {
	t         *testing.T
	s         *sim.Sim
	sent      map[string]sentMsg         // by message text
	delivered map[uint32][]Delivery      // per replica, in delivery order
	seen      map[uint32]map[string]bool // per replica: delivered texts
	// causalPast is, per replica, the causal messages it delivered or
	// sent so far: a causal message's dependencies at its send.
	causalPast map[uint32][]string
	bySender   map[uint32][]string // per sender, its messages in send order
	// dead are the members crashed for good: not correct, so what only
	// they delivered need not be delivered anywhere else.
	dead map[uint32]bool
	// sequencer: total-order messages go through a sequencer, and one is
	// promised (answered) only once committed (Core.Submission): one
	// that nobody delivered before its sender crashed may be lost.
	sequencer bool

	// What "never delivered twice" means once the sequencer's total order
	// is announced before its record is written (doc.go, "Announced
	// before written"): a replica may announce a total-order message
	// again only after a restart, only if the record of its earlier
	// announcement was never written, and then at the same position
	// (log number) with the same message; no message at two positions,
	// never two messages at one position or at one delivery index, and
	// a replica's indexes only increase, across restarts too.
	announced map[uint32]map[string]*announcement // per replica, by text
	failures  map[uint32]uint64                   // per replica, its disk's failed writes so far
	indexes   map[uint32]map[uint64]string        // per replica, delivery index -> text
	lastIndex map[uint32]uint64                   // per replica, its last delivery index
	positions map[uint64]string                   // sequencer's log number -> text, at any replica
	lastPos   map[uint32][2]uint64                // per replica: incarnation, last log number delivered in it
	repeats   int                                 // announcements repeated after a restart
	// held are, per replica, the deliveries of Readies whose write failed
	// and that were not announced before it: as the daemon, they are
	// announced once a later write of the same life succeeds, and lost
	// with a crash before (the restart delivers them again).
	held map[uint32]*heldDeliveries
	// withdrawn are the messages whose send the daemon answered "not
	// sent" (503 not_sent): the write of its Ready failed and the core
	// took the message back (Core.Withdraw). Never delivered anywhere,
	// by any later write or life: its client may send it again.
	withdrawn map[string]bool
	// notSaved are the sends answered "not saved" (503 not_saved): the
	// write failed and the message stays pending, so it may still be
	// delivered (everywhere, then, in its place) or be lost with a crash.
	notSaved map[string]bool
}

type heldDeliveries struct {
	inc uint32
	ds  []Delivery
}

// announcement is a replica's last delivery of a message.
type announcement struct {
	seq   uint64
	inc   uint32 // the replica's incarnation
	saved bool   // a write that holds its record succeeded since
}

type sentMsg struct {
	from  uint32
	order Order
	deps  []string
	inc   uint32 // the sender's incarnation at the send
}

// volatile says whether m may be lost: a submission to the sequencer
// whose sender crashed since, that nobody delivered (delivered anywhere,
// it is committed and must be delivered everywhere).
func (o *oracle) volatile(text string) bool {
	m := o.sent[text]
	if o.notSaved[text] {
		return o.nowhere(text)
	}
	if !o.sequencer || m.order != TotalOrder || o.s.Incarnation(m.from) == m.inc {
		return false
	}
	return o.nowhere(text)
}

// nowhere says whether no replica delivered text.
func (o *oracle) nowhere(text string) bool {
	for _, id := range o.s.IDs() {
		if o.seen[id][text] {
			return false
		}
	}
	return true
}

func newOracle(t *testing.T, s *sim.Sim) *oracle {
	o := &oracle{t: t, s: s, sent: map[string]sentMsg{}, delivered: map[uint32][]Delivery{},
		seen: map[uint32]map[string]bool{}, causalPast: map[uint32][]string{}, bySender: map[uint32][]string{},
		dead: map[uint32]bool{}, announced: map[uint32]map[string]*announcement{}, failures: map[uint32]uint64{},
		indexes: map[uint32]map[uint64]string{}, lastIndex: map[uint32]uint64{}, positions: map[uint64]string{},
		lastPos: map[uint32][2]uint64{}, held: map[uint32]*heldDeliveries{},
		withdrawn: map[string]bool{}, notSaved: map[string]bool{}}
	s.OnReady(func(r sim.Ready) {
		// The simulator reports a Ready once it wrote (or failed to
		// write) its state: if that write succeeded and left nothing
		// pending, it holds every delivery so far (a failed one leaves the change pending, and
		// the next write carries it whole).
		inc := s.Incarnation(r.Node)
		h := o.held[r.Node]
		if h == nil || h.inc != inc {
			h = &heldDeliveries{inc: inc} // a crash lost what waited
			o.held[r.Node] = h
		}
		ds := r.Core.(*Core).Deliveries()
		if f := s.Counters(r.Node).WriteFailures; f != o.failures[r.Node] {
			o.failures[r.Node] = f
			// As the daemon: the Ready's leading deliveries announced
			// before the write go now (when none waits), the rest wait.
			i := 0
			for len(h.ds) == 0 && i < len(ds) && ds[i].early {
				o.check(r.Node, ds[i])
				i++
			}
			h.ds = append(h.ds, ds[i:]...)
		} else {
			for _, d := range append(h.ds, ds...) {
				o.check(r.Node, d)
			}
			h.ds = nil
			// Of this life only: what an earlier life announced and
			// never wrote is not in this one's state. Only once nothing
			// is pending: a record that may wait (lazy.go) is not
			// written by a Ready that writes nothing.
			for _, a := range o.announced[r.Node] {
				if a.inc == inc && !r.Core.(*Core).durable.Pending() {
					a.saved = true
				}
			}
		}
	})
	return o
}

// checkIndex: a delivery index is given once per replica, increasing,
// across restarts too; a log number holds one message everywhere, and a
// replica delivers log numbers in increasing order within a life.
func (o *oracle) checkIndex(at uint32, d Delivery) {
	t, text := o.t, string(d.Message)
	if o.indexes[at] == nil {
		o.indexes[at] = map[uint64]string{}
	}
	if prev, ok := o.indexes[at][d.Index]; ok {
		t.Fatalf("replica %d delivered %q at index %d, where it delivered %q\n%s", at, text, d.Index, prev, o.s.Log())
	}
	if d.Index <= o.lastIndex[at] {
		t.Fatalf("replica %d delivered %q at index %d after index %d", at, text, d.Index, o.lastIndex[at])
	}
	o.indexes[at][d.Index], o.lastIndex[at] = text, d.Index
	if d.Order != TotalOrder || !o.sequencer {
		return
	}
	if prev, ok := o.positions[d.Seq]; ok && prev != text {
		t.Fatalf("replica %d delivered %q at log number %d, where %q was delivered\n%s", at, text, d.Seq, prev, o.s.Log())
	}
	o.positions[d.Seq] = text
	inc := uint64(o.s.Incarnation(at))
	if lp := o.lastPos[at]; lp[0] == inc && d.Seq <= lp[1] {
		t.Fatalf("replica %d delivered log number %d after %d", at, d.Seq, lp[1])
	}
	o.lastPos[at] = [2]uint64{inc, d.Seq}
}

// send multicasts text from id with order o, if id runs and has room.
func (o *oracle) send(id uint32, ord Order, text string) bool {
	if !o.s.Running(id) {
		return false
	}
	var err error
	// Recorded first: FIFO and causal messages are delivered to their
	// sender within Multicast.
	o.sent[text] = sentMsg{from: id, order: ord, deps: slices.Clone(o.causalPast[id]), inc: o.s.Incarnation(id)}
	o.bySender[id] = append(o.bySender[id], text)
	before := o.s.Counters(id)
	_ = o.s.Do(id, func(c core.Core) {
		err = c.(*Core).Multicast(o.s.Clock(id).Now(), ord, []byte(text))
	})
	after := o.s.Counters(id)
	if err != nil {
		delete(o.sent, text)
		o.bySender[id] = o.bySender[id][:len(o.bySender[id])-1]
		return false
	}
	if (ord != TotalOrder || !o.sequencer) && after.WriteFailures != before.WriteFailures {
		// The daemon's DoActiveSaved answers this send: not sent (taken
		// back whole), or not saved (kept pending).
		if after.Withdrawn != before.Withdrawn {
			o.withdrawn[text] = true
			delete(o.sent, text)
			o.bySender[id] = o.bySender[id][:len(o.bySender[id])-1]
			return true
		}
		o.notSaved[text] = true
	}
	if ord != TotalOrder && !o.seen[id][text] && !o.waiting(id, text) {
		o.t.Fatalf("%s: not delivered to its sender at once", text)
	}
	return true
}

// waiting reports whether replica id delivered text in a Ready whose
// write failed, not announced yet.
func (o *oracle) waiting(id uint32, text string) bool {
	if h := o.held[id]; h != nil {
		for _, d := range h.ds {
			if string(d.Message) == text {
				return true
			}
		}
	}
	return false
}

func (o *oracle) check(at uint32, d Delivery) {
	t := o.t
	text := string(d.Message)
	if o.withdrawn[text] {
		t.Fatalf("replica %d delivered %q, whose send was answered not sent (withdrawn after its write failed): a client that sent it again has it twice\n%s", at, text, o.s.Log())
	}
	m, ok := o.sent[text]
	if !ok {
		t.Fatalf("replica %d delivered %q, which nobody sent\n%s", at, text, o.s.Log())
	}
	if m.from != d.Sender || m.order != d.Order {
		t.Fatalf("replica %d delivered %q as %v from %d, sent as %v from %d", at, text, d.Order, d.Sender, m.order, m.from)
	}
	if o.seen[at] == nil {
		o.seen[at] = map[string]bool{}
	}
	o.checkIndex(at, d)
	if o.announced[at] == nil {
		o.announced[at] = map[string]*announcement{}
	}
	inc := o.s.Incarnation(at)
	if o.seen[at][text] {
		a := o.announced[at][text]
		if !o.sequencer || d.Order != TotalOrder || a.saved || a.inc == inc || a.seq != d.Seq {
			t.Fatalf("replica %d delivered %q twice (log number %d, then %d; incarnation %d, then %d; its record written: %v)\n%s",
				at, text, a.seq, d.Seq, a.inc, inc, a.saved, o.s.Log())
		}
		// Announced before its record was written, and the replica
		// crashed before the write: the restart repeats it, in place.
		a.inc = inc
		o.repeats++
		return
	}
	o.announced[at][text] = &announcement{seq: d.Seq, inc: inc}
	// FIFO, for every order: the sender's earlier messages of the same
	// order came first (but one lost with its sender's crash, see
	// volatile: then it never comes after, checked below), and none of
	// its later ones did.
	later := false
	for _, prev := range o.bySender[d.Sender] {
		if prev == text {
			later = true
			continue
		}
		if o.sent[prev].order != d.Order {
			continue
		}
		if later && o.seen[at][prev] {
			t.Fatalf("replica %d delivered %q after %q, sent later by %d (FIFO)\n%s", at, text, prev, d.Sender, o.s.Log())
		}
		if !later && !o.seen[at][prev] && !(o.sent[prev].inc < m.inc && o.volatile(prev)) {
			t.Fatalf("replica %d delivered %q before %q, sent earlier by %d (FIFO)\n%s", at, text, prev, d.Sender, o.s.Log())
		}
	}
	if d.Order == Causal {
		for _, dep := range m.deps {
			if !o.seen[at][dep] {
				t.Fatalf("replica %d delivered %q before its causal predecessor %q\n%s", at, text, dep, o.s.Log())
			}
		}
		o.causalPast[at] = append(o.causalPast[at], text)
	}
	o.seen[at][text] = true
	o.delivered[at] = append(o.delivered[at], d)
	if d.Order == TotalOrder {
		o.checkTotal()
	}
}

// totals returns replica id's total-order deliveries.
func (o *oracle) totals(id uint32) []string {
	var out []string
	for _, d := range o.delivered[id] {
		if d.Order == TotalOrder {
			out = append(out, string(d.Message))
		}
	}
	return out
}

// checkTotal: the total orders of any two replicas are one a prefix of
// the other.
func (o *oracle) checkTotal() {
	ids := o.s.IDs()
	for _, a := range ids {
		ta := o.totals(a)
		for _, b := range ids {
			tb := o.totals(b)
			n := min(len(ta), len(tb))
			if !slices.Equal(ta[:n], tb[:n]) {
				i := 0
				for i < n && ta[i] == tb[i] {
					i++
				}
				o.t.Fatalf("total order differs at position %d: replica %d delivered %q, replica %d %q\n%s", i, a, ta[i], b, tb[i], o.s.Log())
			}
		}
	}
}

// correct are the members not crashed for good.
func (o *oracle) correct() []uint32 {
	var ids []uint32
	for _, id := range o.s.IDs() {
		if !o.dead[id] {
			ids = append(ids, id)
		}
	}
	return ids
}

// owed reports whether every correct replica must deliver text: a
// correct member sent it, or some correct member delivered it (the
// agreement of reliable multicast: a message a member crashed for good
// sent to nobody else is delivered nowhere else).
func (o *oracle) owed(text string) bool {
	if !o.dead[o.sent[text].from] {
		return true
	}
	for _, id := range o.correct() {
		if o.seen[id][text] {
			return true
		}
	}
	return false
}

// complete reports whether every correct replica delivered every message
// it owes (but those lost with their sender's crash, see volatile).
func (o *oracle) complete() bool {
	for text := range o.sent {
		if !o.owed(text) || o.volatile(text) {
			continue
		}
		for _, id := range o.correct() {
			if !o.seen[id][text] {
				return false
			}
		}
	}
	return true
}

func (o *oracle) missing() string {
	var b strings.Builder
	for _, id := range o.correct() {
		var miss []string
		for text := range o.sent {
			if !o.seen[id][text] && o.owed(text) && !o.volatile(text) {
				miss = append(miss, text)
			}
		}
		slices.Sort(miss)
		fmt.Fprintf(&b, "replica %d misses %d: %v\n", id, len(miss), miss[:min(len(miss), 10)])
	}
	return b.String()
}

type chaos struct {
	nodes   int
	total   Total
	crashes bool
	// partitions cut the cluster in two now and then, healed within
	// seconds.
	partitions bool
	// killSequencer crashes the sequencer half-way and keeps it down for
	// outage while the others go on multicasting; with a sequencer, the
	// survivors must deliver in total order meanwhile.
	killSequencer bool
	outage        time.Duration
	// killSender crashes a member for good half-way, right after its
	// multicasts reached only some of the others.
	killSender bool
	msgs       int
	// burstCrashes: now and then a member sends a burst of total-order
	// messages and crashes within milliseconds, its submissions in
	// flight (the sequencer included), and comes back in a new era.
	burstCrashes bool
	// diskFaults fails each member's writes with this probability while
	// the messages are sent (healed before the end): a member that
	// crashes before a write succeeds has announced deliveries whose
	// record it never wrote.
	diskFaults float64
	// totalOnly sends only total-order messages.
	totalOnly bool
	// unkeyed runs the members as without a key (Config.Unkeyed): a
	// record is trimmed once its acknowledgements settled.
	unkeyed bool
}

// runChaos returns the oracle, to look at after the run.
func runChaos(t *testing.T, seed int64, ch chaos) *oracle {
	rng := rand.New(rand.NewPCG(uint64(seed), 7))
	link := sim.LinkConfig{Delay: 200 * time.Microsecond, Jitter: time.Duration(rng.IntN(3000)) * time.Microsecond,
		Loss: float64(rng.IntN(20)) / 100, Duplicate: float64(rng.IntN(10)) / 100}
	s := sim.New(sim.Config{Seed: seed, DefaultLink: link})
	cfg := DefaultLANConfig()
	cfg.Total = ch.total
	cfg.Unkeyed = ch.unkeyed
	ids := make([]uint32, ch.nodes)
	for i := range ids {
		ids[i] = uint32(i + 1)
		s.AddNode(ids[i], netip.AddrPort{}, func(env core.Env) core.Core {
			c, err := New(env, cfg)
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			return c
		}, clock.SimConfig{Offset: time.Duration(rng.IntN(50)) * time.Millisecond, DriftPPM: float64(rng.IntN(100))})
	}
	o := newOracle(t, s)
	o.sequencer = ch.total == Sequencer
	s.Run(time.Second) // an election
	orders := []Order{FIFO, Causal, TotalOrder}
	if ch.totalOnly {
		orders = []Order{TotalOrder}
	}
	for _, id := range ids {
		s.SetDiskFaults(id, ch.diskFaults)
	}
	sent := 0
	for step := 0; sent < ch.msgs && step < 20*ch.msgs; step++ {
		s.Run(time.Duration(rng.IntN(20)) * time.Millisecond)
		id := ids[rng.IntN(len(ids))]
		ord := orders[rng.IntN(len(orders))]
		if o.send(id, ord, fmt.Sprintf("%s-%d-%d", ord, id, step)) {
			sent++
		}
		if ch.killSequencer && sent == ch.msgs/2 {
			o.sequencerOutage(ch, rng)
			sent++
		}
		if ch.killSender && sent == ch.msgs/2 && len(o.dead) == 0 {
			o.senderDies(rng, step)
		}
		if ch.partitions && rng.IntN(60) == 0 {
			var a, b []uint32
			for _, id := range ids {
				if rng.IntN(2) == 0 {
					a = append(a, id)
				} else {
					b = append(b, id)
				}
			}
			s.Partition(a, b)
			s.Run(time.Duration(rng.IntN(2000)) * time.Millisecond)
			s.Heal()
		}
		if ch.burstCrashes && rng.IntN(15) == 0 && s.Running(id) {
			for k := range 1 + rng.IntN(6) {
				if o.send(id, TotalOrder, fmt.Sprintf("burst-%d-%d-%d", id, step, k)) {
					sent++
				}
			}
			s.Run(time.Duration(rng.IntN(3000)) * time.Microsecond)
			s.Crash(id)
			s.Run(time.Duration(rng.IntN(300)) * time.Millisecond)
			s.Restart(id)
		}
		if ch.crashes && rng.IntN(40) == 0 {
			victim := ids[rng.IntN(len(ids))]
			if o.dead[victim] {
				continue
			}
			if s.Running(victim) {
				s.Crash(victim)
				s.Run(time.Duration(rng.IntN(1500)) * time.Millisecond)
				s.Restart(victim)
			}
		}
	}
	for _, id := range ids {
		s.SetDiskFaults(id, 0)
	}
	if !s.RunUntil(o.complete, 60*time.Second) {
		var st strings.Builder
		for _, id := range o.correct() {
			r := s.Core(id).(*Core).Report()
			fmt.Fprintf(&st, "%d: %+v pending %+v", id, r.Streams, r.Pending)
			if r.Sequencer != nil {
				fmt.Fprintf(&st, " sequencer %+v", *r.Sequencer)
			}
			fmt.Fprintf(&st, " counters %v\n", r.Counters)
		}
		t.Fatalf("not every replica delivered every message:\n%s\n%s\n%s", o.missing(), st.String(), o.s.Log()[max(0, len(o.s.Log())-5000):])
	}
	live := o.correct()
	if ch.killSender {
		var relayed, asks, announced uint64
		for _, id := range live {
			r := s.Core(id).(*Core).Report()
			relayed += r.Counters["relayed_records"]
			asks += r.Counters["relay_asks"]
			announced += r.Counters["stability_announced"]
		}
		t.Logf("relayed %d records, %d asks, %d announcements", relayed, asks, announced)
	}
	for _, id := range live {
		if got, want := o.totals(id), o.totals(live[0]); !slices.Equal(got, want) {
			t.Fatalf("replica %d's total order differs from replica %d's", id, live[0])
		}
	}
	// A term led in two lives would be one log era for two sequencers.
	if err := leadcheck.LedOnce(s.Events()); err != nil {
		t.Fatal(err)
	}
	return o
}

// senderDies has a member multicast FIFO and causal messages that reach
// only some of the others (the links to the rest cut), crashes it for
// good, and has a member that may have delivered them multicast a causal
// successor at once: the survivors must still agree (the relay), and the
// successor must not wait forever for its dead predecessor.
func (o *oracle) senderDies(rng *rand.Rand, step int) {
	s := o.s
	var live []uint32
	for _, id := range s.IDs() {
		if s.Running(id) {
			live = append(live, id)
		}
	}
	if len(live) < 3 {
		return
	}
	rng.Shuffle(len(live), func(i, j int) { live[i], live[j] = live[j], live[i] })
	victim, others := live[0], live[1:]
	reach := others[:1+rng.IntN(len(others)-1)] // at least one, never all
	for _, id := range others[len(reach):] {
		s.Cut(victim, id)
	}
	for i := range 1 + rng.IntN(4) {
		ord := []Order{FIFO, Causal}[rng.IntN(2)]
		o.send(victim, ord, fmt.Sprintf("dying-%s-%d-%d-%d", ord, victim, step, i))
	}
	s.Run(time.Duration(1+rng.IntN(5)) * time.Millisecond)
	s.Crash(victim)
	o.dead[victim] = true
	s.Heal()
	o.send(reach[0], Causal, fmt.Sprintf("successor-%d-%d", reach[0], step))
}

// sequencerOutage crashes the sequencer and checks that the others keep
// delivering every order meanwhile (total order too, with a sequencer:
// a new one is elected and recovers the log from a majority).
func (o *oracle) sequencerOutage(ch chaos, rng *rand.Rand) {
	s := o.s
	var seqr uint32
	for _, id := range s.IDs() {
		if s.Running(id) {
			if lead, _, ok := s.Core(id).(*Core).Election().Leader(); ok {
				seqr = lead
			}
		}
	}
	if seqr == 0 || !s.Running(seqr) {
		return
	}
	s.Crash(seqr)
	var live []uint32
	for _, id := range s.IDs() {
		if s.Running(id) {
			live = append(live, id)
		}
	}
	var during []string
	for i := 0; i < 10; i++ {
		id := live[rng.IntN(len(live))]
		text := fmt.Sprintf("outage-%d-%d", id, i)
		// Lamport's total order waits for every member's ack, and a causal
		// message may depend on one of the dead member's that only some
		// members got (its stream resends it when it is back): FIFO is
		// what must go on without it, and the sequencer's total order.
		ord := FIFO
		if ch.total == Sequencer && i%2 == 0 {
			ord = TotalOrder
		}
		if o.send(id, ord, text) {
			during = append(during, text)
		}
		s.Run(20 * time.Millisecond)
	}
	ok := s.RunUntil(func() bool {
		for _, id := range live {
			for _, text := range during {
				if !o.seen[id][text] {
					return false
				}
			}
		}
		return true
	}, ch.outage)
	if !ok {
		o.t.Fatalf("with sequencer %d down, the others did not deliver %v within %v:\n%s", seqr, during, ch.outage, o.missing())
	}
	s.Restart(seqr)
}

// A sender crashes for good mid-fan-out (its last multicasts reached only
// some members) amid loss, duplication, reordering, crashes and restarts
// of the others: every correct member delivers the same FIFO and causal
// messages (the relay passes on what the dead sender's stream cannot
// resend), causal order holds against the true happens-before (a
// successor of a message only some got is not blocked), nothing twice.
func TestSimSenderDiesMidFanOut(t *testing.T) {
	sim.SoakSeeds(t, 30, 300, func(t *testing.T, seed int64) {
		runChaos(t, seed, chaos{nodes: 5, total: Sequencer, crashes: true, partitions: seed%2 == 0, killSender: true, msgs: 60})
	})
}

// The chaos of TestSimSenderDiesMidFanOut without a key: the settled
// acknowledgements, the probes and their answers keep every promise of
// the oracle (FIFO, causal, total order, nothing lost or twice).
func TestSimUnkeyedChaos(t *testing.T) {
	sim.SoakSeeds(t, 20, 300, func(t *testing.T, seed int64) {
		runChaos(t, seed, chaos{nodes: 5, total: []Total{Sequencer, Lamport}[seed%2], crashes: true, partitions: seed%3 == 0, killSender: seed%2 == 0, msgs: 60, unkeyed: true})
	})
}

func TestSimSequencer(t *testing.T) {
	sim.SoakSeeds(t, 20, 300, func(t *testing.T, seed int64) {
		runChaos(t, seed, chaos{nodes: 4, total: Sequencer, crashes: true, msgs: 60})
	})
}

// Senders crash with submissions in flight, the sequencer among them:
// a restarted sender's new era is taken after its old one, no submission
// is numbered twice or after a later one of its sender (the oracle's
// FIFO and duplicate checks), every message delivered anywhere or whose
// sender lives is delivered everywhere, in one total order.
func TestSimSequencerSenderCrashes(t *testing.T) {
	sim.SoakSeeds(t, 20, 300, func(t *testing.T, seed int64) {
		runChaos(t, seed, chaos{nodes: 5, total: Sequencer, crashes: true, burstCrashes: true, msgs: 80})
	})
}

func TestSimLamport(t *testing.T) {
	sim.SoakSeeds(t, 20, 300, func(t *testing.T, seed int64) {
		runChaos(t, seed, chaos{nodes: 4, total: Lamport, crashes: true, msgs: 60})
	})
}

// The sequencer crashes and stays down while the others multicast: a new
// sequencer takes over without a gap or a duplicate (the oracle checks
// every replica's total order against every other's), on 5 members with
// partitions too.
func TestSimSequencerFailover(t *testing.T) {
	sim.SoakSeeds(t, 20, 300, func(t *testing.T, seed int64) {
		runChaos(t, seed, chaos{nodes: 5, total: Sequencer, partitions: true, killSequencer: true, outage: 5 * time.Second, msgs: 80})
	})
}

// Seed 235 of TestSimSequencerFailover, pinned: a member held number 17
// from the dead sequencer, lost the new sequencer's Append that replaced
// it, took the next one (which carried the commit point past 17), and
// delivered the dead sequencer's entry where every other replica
// delivered the new one's. A sequencer's first Append taken by a member
// must now start within the member's commit point.
func TestSimSequencerStaleEntryNotCommitted(t *testing.T) {
	runChaos(t, 235, chaos{nodes: 5, total: Sequencer, partitions: true, killSequencer: true, outage: 5 * time.Second, msgs: 80})
}

func TestSimLamportPartitions(t *testing.T) {
	sim.SoakSeeds(t, 10, 200, func(t *testing.T, seed int64) {
		runChaos(t, seed, chaos{nodes: 5, total: Lamport, partitions: true, killSequencer: true, outage: 5 * time.Second, msgs: 80})
	})
}

// A replica down for more commands than the log keeps catches up from a
// snapshot of the state machine: as a member (the sequencer sends it), and
// as the returning highest-ranked member that becomes sequencer again and
// must fetch the log from a member that compacted it.
func TestSimSnapshotCatchUp(t *testing.T) {
	sim.SoakSeeds(t, 10, 200, func(t *testing.T, seed int64) {
		s, _, tr := machineSim(t, seed, 3)
		apply := applier(t, s)
		machine := func(id uint32) string { return string(s.Core(id).(*Core).Machine().Snapshot()) }
		same := func(ids ...uint32) func() bool {
			return func() bool {
				for _, id := range ids {
					if !s.Running(id) || machine(id) != machine(ids[0]) || s.Core(id).(*Core).st.Log.Submits != nil && len(s.Core(id).(*Core).st.Log.Submits) > 0 {
						return false
					}
				}
				return true
			}
		}
		apply(1, 5)
		s.Crash(1)
		apply(2, 40)
		s.Run(2 * time.Second)
		s.Restart(1)
		if !s.RunUntil(same(1, 2, 3), 20*time.Second) {
			t.Fatalf("member 1 did not catch up: %s vs %s\n%+v", machine(1), machine(2), *s.Core(1).(*Core).Report().Sequencer)
		}
		s.Crash(3) // the sequencer
		apply(1, 40)
		s.Run(3 * time.Second) // a new sequencer numbers them all; the log is compacted past 3's
		s.Restart(3)           // outranks 2: sequencer again, from a log it lacks
		apply(2, 3)
		if !s.RunUntil(same(1, 2, 3), 20*time.Second) {
			t.Fatalf("the returning sequencer did not catch up: %s vs %s\n%+v", machine(3), machine(2), *s.Core(3).(*Core).Report().Sequencer)
		}
		if ev := s.EventsNamed(EventSnapshot); len(ev) < 2 {
			t.Fatalf("%d snapshots installed, want one at each catch-up: %v", len(ev), ev)
		}
		// Each skip was reported as a delivery record naming its numbers
		// (the trail checks that no number was passed over otherwise),
		// and only the members that were down skipped anything: member 2
		// never lagged, and neither did member 1 when member 3 came back.
		if len(tr.skipped[1]) == 0 || len(tr.skipped[3]) == 0 {
			t.Fatalf("skip records: %v; want some at members 1 and 3", tr.skipped)
		}
		if len(tr.skipped[2]) > 0 || len(tr.skipped[1]) > 1 {
			t.Fatalf("skip records: %v; members 2 and 1 (once back) were never more than a few entries behind", tr.skipped)
		}
		for id, ks := range tr.skipped {
			var n uint64
			for _, k := range ks {
				n += k[1] - k[0] + 1
			}
			c := s.Core(id).(*Core)
			if got := c.counters["skipped_numbers"]; got != n || c.Report().Sequencer.LastSkip == nil {
				t.Fatalf("member %d skipped %d numbers, its counter says %d (last skip %v)", id, n, got, c.Report().Sequencer.LastSkip)
			}
		}
	})
}

// What a member wrote (its last snapshot and the records after it) is
// exactly its state: after every Ready of every member, a core built from
// its disk alone holds the same streams, queues, log and state machine as
// the running one, under loss, duplication, crashes and partitions, for
// both total orders. (The Lamport clock, the acknowledgements a member
// received and the time it was last caught up with the sequencer are
// soft: they are written when something else changes, and a restart
// learns them again; an older HeardAt only lets a snapshot take the
// member further.)
func TestSimRecordsRestoreExactly(t *testing.T) {
	for _, total := range []Total{Sequencer, Lamport} {
		t.Run(total.String(), func(t *testing.T) {
			sim.SoakSeeds(t, 4, 100, func(t *testing.T, seed int64) { recordsRestoreExactly(t, total, seed) })
		})
	}
}

// Seed 95 of TestSimRecordsRestoreExactly/sequencer, pinned: a member
// back from a crash took, in one batch, a new sequencer's Append of
// entries 32 to 40 with the commit point at 40, and compacted its log to
// 32 before writing: the record carried the log from 33 on, so entry 32
// (applied to the state machine) existed nowhere on disk, and the member
// refused its own disk at the next start ("log record 101 changes entry
// 33, the log holds 1 to 31"). Compaction now never cuts an entry not
// yet written.
func TestSimRecordsCompactionAfterWrite(t *testing.T) {
	recordsRestoreExactly(t, Sequencer, 95)
}

func recordsRestoreExactly(t *testing.T, total Total, seed int64) {
	rng := rand.New(rand.NewPCG(uint64(seed), 9))
	s := sim.New(sim.Config{Seed: seed, DefaultLink: sim.LinkConfig{Delay: 200 * time.Microsecond,
		Jitter: time.Millisecond, Loss: 0.1, Duplicate: 0.05}})
	cfg := DefaultLANConfig()
	cfg.Total = total
	cfg.KeepLog = 8 // compaction between snapshots
	cfg.Machine = func() StateMachine { return rsm.New() }
	build := func(env core.Env) (*Core, error) { return New(env, cfg) }
	for id := uint32(1); id <= 3; id++ {
		s.AddNode(id, netip.AddrPort{}, func(env core.Env) core.Core {
			c, err := build(env)
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			return c
		}, clock.SimConfig{})
	}
	checks, readies := 0, 0
	s.OnReady(func(r sim.Ready) {
		live := r.Core.(*Core)
		if readies++; readies%sampleEvery != 0 || live.durable.Pending() {
			return // sampled (a restore is costly); or a failed write: nothing to compare with
		}
		restored, err := build(core.Env{ID: r.Node, Members: []uint32{1, 2, 3}, Now: r.Local,
			Lamport: &clock.Lamport{}, State: s.Disk(r.Node), Log: s.DiskLog(r.Node)})
		if err != nil {
			t.Fatalf("node %d at %v: its own disk refused: %v", r.Node, r.At, err)
		}
		// A start takes the next submission era, once the last is on
		// disk (no submission ID is reused).
		if total == Sequencer && restored.st.Log.Era != live.st.Log.Era+1 {
			t.Fatalf("node %d at %v: restarted in era %d after era %d", r.Node, r.At, restored.st.Log.Era, live.st.Log.Era)
		}
		restored.st.Log.Era = live.st.Log.Era
		if a, b := comparable(live), comparable(restored); a != b {
			t.Fatalf("node %d at %v: restored from %d records:\n%s\nlive:\n%s", r.Node, r.At, len(s.DiskLog(r.Node)), b, a)
		}
		checks++
	})
	s.Run(time.Second)
	orders := []Order{FIFO, Causal, TotalOrder, TotalOrder}
	for step := range 120 {
		id := uint32(1 + rng.IntN(3))
		if s.Running(id) {
			_ = s.Do(id, func(c core.Core) {
				_ = c.(*Core).Multicast(s.Clock(id).Now(), orders[rng.IntN(len(orders))], []byte(fmt.Sprintf("set k%d %d", step%5, step)))
			})
		}
		s.Run(time.Duration(rng.IntN(8)) * time.Millisecond)
		if rng.IntN(50) == 0 {
			v := uint32(1 + rng.IntN(3))
			s.Crash(v)
			s.Run(time.Duration(rng.IntN(300)) * time.Millisecond)
			s.Restart(v)
		}
	}
	s.Run(2 * time.Second)
	if checks < 50 {
		t.Fatalf("only %d states compared", checks)
	}
}

// sampleEvery: one Ready in so many is checked.
const sampleEvery = 13

// comparable renders what a core must restore exactly.
func comparable(c *Core) string {
	st := *c.st
	st.Clock = 0
	s := *st.Stream
	s.Out = nil
	st.Stream = &s
	st.Election = c.el.State
	st.Log.changed = 0
	st.Log.HeardAt = time.Time{} // soft: written with what changes next
	var m []byte
	if c.machine != nil {
		m = c.machine.Snapshot()
	}
	b, _ := json.Marshal(st)
	return string(b) + "\nmachine " + string(m)
}

// Numbering and committing are not promises (the sequencer's Appends
// leave while it writes), so what makes a committed number survive is
// that a majority has it on disk before any member delivers it: the
// sequencer counts itself a holder only once its own write is confirmed.
// With every member's disk failing now and then, whenever a member
// delivers total-order number k, a majority of the members' disks (the
// state a restart would read) hold entry k.
func TestSimCommittedIsOnAMajorityOfDisks(t *testing.T) {
	sim.SoakSeeds(t, 6, 100, func(t *testing.T, seed int64) {
		rng := rand.New(rand.NewPCG(uint64(seed), 11))
		s := sim.New(sim.Config{Seed: seed, DefaultLink: sim.LinkConfig{Delay: 200 * time.Microsecond, Jitter: time.Millisecond, Loss: 0.05}})
		cfg := DefaultLANConfig()
		ids := []uint32{1, 2, 3, 4, 5}
		for _, id := range ids {
			s.AddNode(id, netip.AddrPort{}, func(env core.Env) core.Core {
				c, err := New(env, cfg)
				if err != nil {
					t.Fatalf("New: %v", err)
				}
				return c
			}, clock.SimConfig{})
		}
		s.Run(time.Second)
		for _, id := range ids {
			s.SetDiskFaults(id, 0.3)
		}
		holds := func(id uint32, k uint64) bool {
			c, err := New(core.Env{ID: id, Members: ids, Lamport: &clock.Lamport{}, State: s.Disk(id), Log: s.DiskLog(id)}, cfg)
			if err != nil {
				t.Fatalf("member %d's disk: %v", id, err)
			}
			return k <= c.st.Log.Base || k <= c.st.Log.last()
		}
		checked := map[uint64]bool{}
		s.OnReady(func(r sim.Ready) {
			for _, d := range r.Core.(*Core).Deliveries() {
				if d.Order != TotalOrder || checked[d.Seq] {
					continue
				}
				checked[d.Seq] = true
				n := 0
				for _, id := range ids {
					if holds(id, d.Seq) {
						n++
					}
				}
				if n < 3 {
					t.Fatalf("member %d delivered number %d, held on %d disks of 5\n%s", r.Node, d.Seq, n, s.Log())
				}
			}
		})
		for k := range 40 {
			id := ids[rng.IntN(len(ids))]
			_ = s.Do(id, func(c core.Core) {
				_ = c.(*Core).Multicast(s.Clock(id).Now(), TotalOrder, []byte(fmt.Sprintf("m%d", k)))
			})
			s.Run(time.Duration(rng.IntN(10)) * time.Millisecond)
		}
		for _, id := range ids {
			s.SetDiskFaults(id, 0)
		}
		s.Run(3 * time.Second)
		if len(checked) < 30 {
			t.Fatalf("only %d numbers delivered", len(checked))
		}
	})
}

// The relay costs nothing per multicast while nothing fails: on a
// lossless network each FIFO or causal multicast costs its N-1 records
// and N-1 acknowledgements, as before the relay; a member's stream is
// said stable once per quiet period after it multicast (N-1 frames, not
// per multicast; under steady traffic at most once per 3/4 RelayAfter),
// after which no member keeps a record for the relay; nothing is ever
// relayed or asked.
func TestSimRelayFailureFreeCost(t *testing.T) {
	const n, msgs = 5, 20
	s := sim.New(sim.Config{Seed: 1, DefaultLink: sim.LinkConfig{Delay: 200 * time.Microsecond}})
	cfg := DefaultLANConfig()
	addMembers(t, s, n, cfg)
	s.Run(2 * time.Second)
	sent := func(k wire.Kind) uint64 { return s.Sent(k) }
	rec0, ack0, hold0 := sent(wire.KindOrderRecord), sent(wire.KindOrderStreamAck), sent(wire.KindOrderHolding)
	for i := range msgs {
		id := uint32(1 + i%n)
		ord := []Order{FIFO, Causal}[i%2]
		_ = s.Do(id, func(c core.Core) {
			if err := c.(*Core).Multicast(s.Clock(id).Now(), ord, []byte(fmt.Sprintf("m%d", i))); err != nil {
				t.Fatal(err)
			}
		})
		s.Run(50 * time.Millisecond)
	}
	s.Run(cfg.RelayAfter / 4)
	if got, want := sent(wire.KindOrderRecord)-rec0, uint64(msgs*(n-1)); got != want {
		t.Errorf("%d records for %d multicasts, want %d (N-1 each)", got, msgs, want)
	}
	if got, want := sent(wire.KindOrderStreamAck)-ack0, uint64(msgs*(n-1)); got != want {
		t.Errorf("%d stream acks for %d multicasts, want %d (N-1 each)", got, msgs, want)
	}
	if got := sent(wire.KindOrderHolding) - hold0; got != 0 {
		t.Errorf("%d holdings while the members multicast, want none", got)
	}
	s.Run(3 * cfg.RelayAfter)
	if got, want := sent(wire.KindOrderHolding)-hold0, uint64(n*(n-1)); got != want {
		t.Errorf("%d holdings after a quiet period, want %d (each member's stability, to N-1 members, once)", got, want)
	}
	if got := sent(wire.KindOrderRelay); got != 0 {
		t.Errorf("%d records relayed without a failure", got)
	}
	for id := uint32(1); id <= n; id++ {
		c := s.Core(id).(*Core)
		if k := c.st.Stream.Kept; len(k) != 0 {
			t.Errorf("member %d still keeps records for the relay after they were announced stable: %v", id, k)
		}
		if a := c.counters["relay_asks"]; a != 0 {
			t.Errorf("member %d asked %d times without a failure", id, a)
		}
	}
}

// addMembers adds members 1..n running New(cfg), on perfect clocks.
func addMembers(t *testing.T, s *sim.Sim, n int, cfg Config) {
	t.Helper()
	for id := uint32(1); id <= uint32(n); id++ {
		s.AddNode(id, netip.AddrPort{}, func(env core.Env) core.Core {
			c, err := New(env, cfg)
			if err != nil {
				t.Fatal(err)
			}
			return c
		}, clock.SimConfig{})
	}
}

// A sender alive but cut off from one member for good (its frames to it
// lost, the member's to it passing): its stream can never reach that
// member, so the others relay it, under loss and duplication; every
// member delivers every message, in causal order, once.
func TestSimRelayPastOneWayCut(t *testing.T) {
	sim.SoakSeeds(t, 10, 200, func(t *testing.T, seed int64) {
		rng := rand.New(rand.NewPCG(uint64(seed), 13))
		s := sim.New(sim.Config{Seed: seed, DefaultLink: sim.LinkConfig{Delay: 200 * time.Microsecond,
			Jitter: time.Millisecond, Loss: 0.1, Duplicate: 0.05}})
		addMembers(t, s, 4, DefaultLANConfig())
		o := newOracle(t, s)
		s.Run(time.Second)
		s.Cut(1, 4)
		for i := range 40 {
			id := uint32(1 + rng.IntN(4))
			if i%3 == 0 {
				id = 1
			}
			o.send(id, []Order{FIFO, Causal}[rng.IntN(2)], fmt.Sprintf("m%d-%d", id, i))
			s.Run(time.Duration(rng.IntN(30)) * time.Millisecond)
		}
		if !s.RunUntil(o.complete, 30*time.Second) {
			t.Fatalf("not every member delivered every message with 1->4 cut:\n%s", o.missing())
		}
		if n := s.Core(4).(*Core).counters["relayed_in"]; n == 0 {
			t.Fatal("member 4 got everything without a relay: the cut did not cut")
		}
	})
}
