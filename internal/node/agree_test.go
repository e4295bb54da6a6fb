package node

import (
	"cmp"
	"errors"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/wire"
)

// agreeLAN is a few nodes with configuration agreement on, each with its
// own view of the cluster (a misconfigured one has another), exchanging
// frames by address as real sockets would: a frame leaves from the
// sender's own listen address to the address its member list names.
type agreeLAN struct {
	t     *testing.T
	nodes map[uint32]*Node
	cores map[uint32]*recorder
	now   time.Time
	// quiet: the cores send nothing (as Ω's followers at rest), so
	// that only the announcements say a member is up.
	quiet bool
	// configs counts each node's announcements sent, pairs the
	// announcements and refreshes from one node to another, refreshes
	// each node's refreshes sent.
	configs   map[uint32]int
	pairs     map[[2]uint32]int
	refreshes map[uint32]int
	// step is the time between ticks (default 100 ms).
	step time.Duration
	// legacy are nodes of an older build, which does not know
	// KindConfigRefresh nor KindConfigTimings: refreshes and timings to
	// them are dropped (unknown_kind, counted in unknown), and they send
	// none.
	legacy  map[uint32]bool
	unknown map[uint32]int
	// timings counts the timings (KindConfigTimings) from one node to
	// another.
	timings map[[2]uint32]int
	// forged counts the frames forged (their sequence numbers).
	forged uint32
	// drop, if set, says which frames are lost on the way.
	drop func(from, to uint32, k wire.Kind) bool
	// off is each node's clock offset: a node reads l.now plus its
	// offset (a clock stepped by a Berkeley master, or by date -s).
	off map[uint32]time.Duration
}

func newAgreeLAN(t *testing.T, cfgs ...Config) *agreeLAN {
	l := &agreeLAN{t: t, nodes: map[uint32]*Node{}, cores: map[uint32]*recorder{}, now: t0, configs: map[uint32]int{},
		pairs: map[[2]uint32]int{}, refreshes: map[uint32]int{}, step: 100 * time.Millisecond, legacy: map[uint32]bool{}, unknown: map[uint32]int{},
		timings: map[[2]uint32]int{}, off: map[uint32]time.Duration{}}
	for _, c := range cfgs {
		if c.Cluster == "" {
			c.Cluster = "lab"
		}
		if c.Incarnation == 0 {
			c.Incarnation = 1
		}
		if c.Agreement == nil {
			c.Agreement = &Agreement{Algorithm: "bully", Params: map[string]string{"priorities": ""}}
		}
		if c.Service == "" {
			c.Service = "electd"
		}
		r := &recorder{}
		n, err := New(c, r)
		if err != nil {
			t.Fatal(err)
		}
		l.nodes[c.ID], l.cores[c.ID] = n, r
	}
	return l
}

// keyed is a config of member id with the test key and every member.
func keyed(id uint32, mutate func(*Config)) Config {
	c := Config{ID: id, Members: maps.Clone(members), Keys: []wire.Key{testKey}}
	if mutate != nil {
		mutate(&c)
	}
	return c
}

// run ticks every node every step (100 ms) for d, delivering every frame
// at once, each node's core sending one heartbeat to every member per
// tick (unless quiet).
func (l *agreeLAN) run(d time.Duration) {
	for end := l.now.Add(d); l.now.Before(end); l.now = l.now.Add(l.step) {
		for _, id := range slices.Sorted(maps.Keys(l.nodes)) {
			n := l.nodes[id]
			n.Tick(l.now.Add(l.off[id]))
			for _, other := range n.others {
				if l.quiet {
					break
				}
				l.cores[id].rd.Messages = append(l.cores[id].rd.Messages, core.Message{To: other, Kind: wire.KindHeartbeat, Payload: make([]byte, 8)})
			}
			l.flush(n)
		}
	}
}

// flush delivers n's sends, and what they make the receivers send.
func (l *agreeLAN) flush(n *Node) {
	from := n.cfg.Members[n.cfg.ID]
	for _, s := range n.Ready().Sends {
		switch s.Kind {
		case wire.KindConfig:
			l.configs[n.cfg.ID]++
		case wire.KindConfigRefresh:
			l.refreshes[n.cfg.ID]++
		}
		for _, to := range l.nodes {
			if to.cfg.Members[to.cfg.ID] != s.To {
				continue
			}
			if s.Kind == wire.KindConfig || s.Kind == wire.KindConfigRefresh {
				l.pairs[[2]uint32{n.cfg.ID, to.cfg.ID}]++
			}
			if s.Kind == wire.KindConfigTimings {
				l.timings[[2]uint32{n.cfg.ID, to.cfg.ID}]++
			}
			if l.drop != nil && l.drop(n.cfg.ID, to.cfg.ID, s.Kind) {
				continue
			}
			if (s.Kind == wire.KindConfigRefresh || s.Kind == wire.KindConfigTimings) && (l.legacy[n.cfg.ID] || l.legacy[to.cfg.ID]) {
				if l.legacy[to.cfg.ID] {
					l.unknown[to.cfg.ID]++
				}
				continue
			}
			to.Receive(Inbound{From: from, Data: n.Finalize(s, l.now.Add(l.off[n.cfg.ID])), Time: l.now.Add(l.off[to.cfg.ID])})
			l.flush(to)
		}
	}
}

// notices drains node id's notices into one text.
func (l *agreeLAN) notices(id uint32) string {
	var b strings.Builder
	for _, nt := range l.nodes[id].Notices() {
		b.WriteString(nt.Msg + "\n")
	}
	return b.String()
}

func (l *agreeLAN) standing(id uint32) Standing { return l.nodes[id].Standing() }

func TestAgreementAgreedClusterRuns(t *testing.T) {
	l := newAgreeLAN(t, keyed(1, nil), keyed(2, nil), keyed(3, nil))
	if l.standing(1) != StandingStarting {
		t.Fatalf("before any tick: %v, want starting", l.standing(1))
	}
	l.run(300 * time.Millisecond)
	for id := range l.nodes {
		if l.standing(id) != StandingAgreed {
			t.Fatalf("node %d: %v (%s)", id, l.standing(id), l.nodes[id].StandingReason())
		}
		st := l.nodes[id].Status()
		if st.Agreement == nil || len(st.Agreement.Agree) != 3 || len(st.Agreement.Differ) != 0 {
			t.Fatalf("node %d agreement %+v", id, st.Agreement)
		}
		if n := st.Dropped["config_differs"]; n != 0 {
			t.Fatalf("node %d refused %d frames of agreeing members", id, n)
		}
		if l.cores[id].ticks == 0 || len(l.cores[id].steps) == 0 {
			t.Fatalf("node %d's core did not run: %d ticks, %d frames", id, l.cores[id].ticks, len(l.cores[id].steps))
		}
		for _, m := range l.cores[id].steps {
			if !m.Checked {
				t.Fatalf("node %d: a frame of member %d, whose configuration matches, not marked checked", id, m.From)
			}
		}
		if got := l.notices(id); got != "" {
			t.Fatalf("node %d noticed %q", id, got)
		}
	}
}

// TestAgreementQuietWhileAgreed: while every member agrees, a node's
// announcements space out from Interval to QuietInterval, and members
// whose cores send nothing still count as agreeing between them; the
// first difference (member 3 restarts with another algorithm) brings
// every node back to announcing each Interval to it, and the difference
// is seen at once, not a QuietInterval later.
func TestAgreementQuietWhileAgreed(t *testing.T) {
	l := newAgreeLAN(t, keyed(1, nil), keyed(2, nil), keyed(3, nil))
	l.quiet = true
	l.run(10 * time.Second)
	// Both counted from here (refreshes were counted from the start:
	// the 2 of the first round fitted the bound's margin until the
	// first refresh after it came at the member's slot, before the
	// spacing was over).
	clear(l.configs)
	clear(l.refreshes)
	const rest = 80 * time.Second
	l.run(rest)
	for id := range l.nodes {
		// Two members every 8 s (the default QuietInterval), give or
		// take one: against 160 at the Interval.
		if got, most := l.configs[id]+l.refreshes[id], 2*(int(rest/(8*time.Second))+1); got > most {
			t.Errorf("node %d sent %d announcements in %v of rest, want at most %d (one to each member every 8 s)", id, got, rest, most)
		}
		st := l.nodes[id].Status().Agreement
		if l.standing(id) != StandingAgreed || len(st.Agree) != 3 {
			t.Fatalf("node %d after %v quiet: %v, agree %v (%s)", id, rest, l.standing(id), st.Agree, l.nodes[id].StandingReason())
		}
		if got := l.notices(id); got != "" {
			t.Errorf("node %d noticed %q while all agreed", id, got)
		}
	}
	// Member 3 restarts with another algorithm.
	c := keyed(3, nil)
	c.Cluster, c.Service, c.Incarnation = "lab", "electd", 2
	c.Agreement = &Agreement{Algorithm: "ring", Params: map[string]string{"priorities": ""}}
	n3, err := New(c, l.cores[3])
	if err != nil {
		t.Fatal(err)
	}
	l.nodes[3] = n3
	l.run(200 * time.Millisecond)
	if got := l.notices(1); !strings.Contains(got, "member 3's algorithm differs") || l.standing(3) != StandingSteppedBack {
		t.Fatalf("200ms after member 3's restart: node 1's notices %q; node 3 %v", got, l.standing(3))
	}
	clear(l.pairs)
	l.run(5 * time.Second)
	if got := l.pairs[[2]uint32{1, 3}]; got < 4 {
		t.Errorf("node 1 sent member 3 %d announcements in the 5 s after it differed, want one every %v", got, DefaultAnnounceInterval)
	}
}

// TestAgreementMemberMissing: the bully case at node level: node
// 3's list lacks member 2. Node 1 refuses node 3 and says why; node 3 is
// tied (itself against node 1) and steps back: its core is held.
func TestAgreementMemberMissing(t *testing.T) {
	l := newAgreeLAN(t, keyed(1, nil), keyed(2, nil), keyed(3, func(c *Config) { delete(c.Members, 2) }))
	l.run(2 * time.Second)
	if l.standing(1) != StandingAgreed || l.standing(2) != StandingAgreed {
		t.Fatalf("majority: %v %v", l.standing(1), l.standing(2))
	}
	if l.standing(3) != StandingSteppedBack {
		t.Fatalf("node 3: %v, want stepped back", l.standing(3))
	}
	if got := l.notices(1); !strings.Contains(got, "member 3's member list lacks member 2") {
		t.Fatalf("node 1's notices: %q", got)
	}
	if got := l.notices(3); !strings.Contains(got, "member 1's member list has member 2 (127.0.0.12:7000), ours does not") {
		t.Fatalf("node 3's notices: %q", got)
	}
	for _, m := range l.cores[1].steps {
		if m.From == 3 {
			t.Fatalf("node 1's core heard node 3: %+v", m)
		}
	}
	ticks := l.cores[3].ticks
	l.run(time.Second)
	if l.cores[3].ticks != ticks {
		t.Fatal("a stepped-back node's core is still ticked")
	}
	// A core frame of node 3 (its core is held: sent here as the node's
	// own) is refused by node 1.
	l.nodes[3].own = append(l.nodes[3].own, core.Message{To: 1, Kind: wire.KindHeartbeat, Payload: make([]byte, 8)})
	l.flush(l.nodes[3])
	st := l.nodes[1].Status()
	if st.Dropped["config_differs"] == 0 || st.Agreement.Members[1].State != "differs" || st.Agreement.Members[1].Agrees {
		t.Fatalf("node 1: dropped %v, members %+v", st.Dropped, st.Agreement.Members)
	}
	if st3 := l.nodes[3].Status(); st3.Agreement.Standing != "stepped_back" || !strings.Contains(st3.Agreement.Reason, "minority") {
		t.Fatalf("node 3 status %+v", st3.Agreement)
	}
}

func TestAgreementOtherKey(t *testing.T) {
	other := wire.Key{ID: 7, Secret: []byte("fedcba9876543210fedcba9876543210")}
	l := newAgreeLAN(t, keyed(1, nil), keyed(2, nil), keyed(3, func(c *Config) { c.Keys = []wire.Key{other} }))
	l.run(2 * time.Second)
	if l.standing(3) != StandingSteppedBack || l.standing(1) != StandingAgreed {
		t.Fatalf("standings %v %v %v", l.standing(1), l.standing(2), l.standing(3))
	}
	ours, theirs := short(wire.KeyFingerprint(testKey.Secret)), short(wire.KeyFingerprint(other.Secret))
	if got := l.notices(1); !strings.Contains(got, "member 3's key differs (key id "+ours+" here, "+theirs+" there)") {
		t.Fatalf("node 1's notices: %q", got)
	}
	st := l.nodes[2].Status().Agreement.Members[1]
	if st.State != "differs" || st.Authenticated || st.KeyID != wire.FingerprintText(wire.KeyFingerprint(other.Secret)) || st.AuthFailures == 0 {
		t.Fatalf("node 2's view of 3: %+v", st)
	}
}

func TestAgreementOtherCluster(t *testing.T) {
	l := newAgreeLAN(t, keyed(1, nil), keyed(2, nil), keyed(3, func(c *Config) { c.Cluster = "lab2" }))
	l.run(2 * time.Second)
	if l.standing(3) != StandingSteppedBack || l.standing(2) != StandingAgreed {
		t.Fatalf("standings %v %v %v", l.standing(1), l.standing(2), l.standing(3))
	}
	if got := l.notices(2); !strings.Contains(got, `member 3's cluster name differs (lab here, lab2 there)`) {
		t.Fatalf("node 2's notices: %q", got)
	}
	if st := l.nodes[2].Status().Agreement.Members[1]; !st.Authenticated || st.State != "differs" {
		t.Fatalf("node 2's view of 3: %+v", st)
	}
}

func TestAgreementOtherAlgorithmAndAddress(t *testing.T) {
	l := newAgreeLAN(t, keyed(1, nil), keyed(2, nil), keyed(3, func(c *Config) {
		c.Agreement = &Agreement{Algorithm: "ring", Params: map[string]string{"priorities": ""}}
	}))
	l.run(2 * time.Second)
	if got := l.notices(1); !strings.Contains(got, "member 3's algorithm differs (bully here, ring there)") || l.standing(3) != StandingSteppedBack {
		t.Fatalf("node 1's notices: %q; node 3 %v", got, l.standing(3))
	}
	moved := netip.MustParseAddrPort("127.0.0.99:7000")
	l = newAgreeLAN(t, keyed(1, nil), keyed(2, nil), keyed(3, func(c *Config) { c.Members[2] = moved }))
	l.run(2 * time.Second)
	if got := l.notices(1); !strings.Contains(got, "member 3's member list has member 2 at 127.0.0.99:7000, ours at 127.0.0.12:7000") || l.standing(3) != StandingSteppedBack {
		t.Fatalf("node 1's notices: %q; node 3 %v", got, l.standing(3))
	}
}

// TestAgreementTwoMembersBothStepBack: with two members that disagree
// neither has a majority: both step back (safety first).
func TestAgreementTwoMembersBothStepBack(t *testing.T) {
	two := map[uint32]netip.AddrPort{1: members[1], 2: members[2]}
	l := newAgreeLAN(t,
		Config{ID: 1, Members: two, Keys: []wire.Key{testKey}},
		Config{ID: 2, Members: two, Keys: []wire.Key{testKey}, Agreement: &Agreement{Algorithm: "bully", Params: map[string]string{"priorities": "2=5"}}})
	l.run(2 * time.Second)
	if l.standing(1) != StandingSteppedBack || l.standing(2) != StandingSteppedBack {
		t.Fatalf("standings %v %v", l.standing(1), l.standing(2))
	}
	if got := l.notices(1); !strings.Contains(got, `member 2's priorities differs (none here, 2=5 there)`) {
		t.Fatalf("notices %q", got)
	}
}

// TestAgreementStartWaitsThenRuns: a node alone (the others down) holds
// its core StartGrace, then runs; a node that hears a majority agree runs
// at once.
func TestAgreementStartWaitsThenRuns(t *testing.T) {
	l := newAgreeLAN(t, keyed(1, nil))
	l.run(300 * time.Millisecond)
	if l.standing(1) != StandingStarting || l.cores[1].ticks != 0 {
		t.Fatalf("alone after 300ms: %v, %d ticks", l.standing(1), l.cores[1].ticks)
	}
	l.run(400 * time.Millisecond)
	if l.standing(1) != StandingAgreed || l.cores[1].ticks == 0 {
		t.Fatalf("alone after 700ms: %v, %d ticks", l.standing(1), l.cores[1].ticks)
	}
}

// TestAgreementStartTie: at the start, member 1 (configured right) hears
// only member 3 (other priorities): a tie with member 2 unheard is the
// order the announcements came in, not a minority. Member 1 waits,
// neither running nor stepped back (which it used to say at WARN), and
// once member 2 agrees with it, member 1 runs and member 3 steps back.
func TestAgreementStartTie(t *testing.T) {
	l := newAgreeLAN(t, keyed(1, nil), keyed(2, nil),
		keyed(3, func(c *Config) {
			c.Agreement = &Agreement{Algorithm: "bully", Params: map[string]string{"priorities": "1=5"}}
		}))
	two := l.nodes[2]
	delete(l.nodes, 2)
	l.run(300 * time.Millisecond)
	if got := l.standing(1); got != StandingStarting || l.cores[1].ticks != 0 {
		t.Fatalf("node 1 at 300ms, member 2 unheard: %v, %d core ticks; want starting, none", got, l.cores[1].ticks)
	}
	if got := l.notices(1); strings.Contains(got, "minority") {
		t.Fatalf("node 1 noticed %q before member 2 was heard", got)
	}
	l.nodes[2] = two
	l.run(300 * time.Millisecond)
	if l.standing(1) != StandingAgreed || l.standing(2) != StandingAgreed || l.standing(3) != StandingSteppedBack {
		t.Fatalf("with member 2: standings %v %v %v, want agreed, agreed, stepped back", l.standing(1), l.standing(2), l.standing(3))
	}
}

// TestAgreementUnannouncedIsUnverified: a member that never announces (an
// older build) is refused while it may still announce, then followed
// unchecked, and said so.
func TestAgreementUnannouncedIsUnverified(t *testing.T) {
	a, ra := newNode(t, 1, func(c *Config) {
		c.Keys = []wire.Key{testKey}
		c.Agreement = &Agreement{Algorithm: "bully"}
	})
	old, rold := newNode(t, 2, func(c *Config) { c.Keys = []wire.Key{testKey} })
	a.Tick(t0)
	a.Ready()
	now := t0
	var refused, taken int
	for i := range 50 {
		now = t0.Add(time.Duration(i) * 100 * time.Millisecond)
		a.Tick(now)
		a.Ready()
		rold.rd.Messages = []core.Message{{To: 1, Kind: wire.KindHeartbeat, Payload: make([]byte, 8)}}
		for _, err := range deliver(t, old, a, now) {
			switch {
			case errors.Is(err, ErrConfigUnverified), errors.Is(err, ErrStarting):
				refused++
			case err == nil:
				taken++
			default:
				t.Fatal(err)
			}
		}
	}
	if refused == 0 || taken == 0 || len(ra.steps) != taken {
		t.Fatalf("refused %d, taken %d, stepped %d", refused, taken, len(ra.steps))
	}
	for _, m := range ra.steps {
		if m.Checked {
			// A core would bound what the member claims by this
			// member's configuration, which it never compared.
			t.Fatal("a frame of member 2, which announces no configuration, marked checked")
		}
	}
	var said bool
	for _, nt := range a.Notices() {
		said = said || nt.Key == "unverified" && strings.Contains(nt.Msg, "member 2 announces no configuration")
	}
	if !said || a.Status().Agreement.Members[0].State != "unverified" {
		t.Fatalf("no unverified notice; status %+v", a.Status().Agreement.Members)
	}
}

// TestAgreementForgedFramesToldApart: frames in member 2's name with a
// MAC that fails, while member 2 is heard with our key, are forgeries,
// not a disagreement: nobody steps back.
func TestAgreementForgedFramesToldApart(t *testing.T) {
	l := newAgreeLAN(t, keyed(1, nil), keyed(2, nil), keyed(3, nil))
	l.run(500 * time.Millisecond)
	forger, _ := New(Config{ID: 2, Members: members, Cluster: "lab", Service: "electd", Incarnation: 9,
		Keys: []wire.Key{{ID: 7, Secret: []byte("this is not the cluster's key!!!")}}}, &recorder{})
	forger.own = append(forger.own, core.Message{To: 1, Kind: wire.KindHeartbeat, Payload: make([]byte, 8)})
	for _, s := range forger.Ready().Sends {
		l.nodes[1].Receive(Inbound{From: members[2], Data: forger.Finalize(s, l.now), Time: l.now})
	}
	l.run(300 * time.Millisecond)
	got := l.notices(1)
	if !strings.Contains(got, "frames from member 2's address fail authentication (bad_mac) while its own frames authenticate: forged") {
		t.Fatalf("notices %q", got)
	}
	if l.standing(1) != StandingAgreed || l.nodes[1].Status().Agreement.Members[0].State != "agrees" {
		t.Fatalf("node 1 %v, view of 2 %+v", l.standing(1), l.nodes[1].Status().Agreement.Members[0])
	}
}

// FuzzReceiveAgreement: with configuration agreement on, no input from a
// member's address (announcements of any cluster, with or without a MAC
// that verifies, status queries) makes the node panic, steps the core
// before the node agreed, or goes uncounted; whatever it notices is said
// in bounded text.
func FuzzReceiveAgreement(f *testing.F) {
	other := wire.Key{ID: 7, Secret: []byte("fedcba9876543210fedcba9876543210")}
	for _, c := range []Config{
		keyed(1, nil),
		keyed(1, func(c *Config) { c.Keys = []wire.Key{other} }),
		keyed(1, func(c *Config) { c.Cluster = "lab2" }),
		keyed(1, func(c *Config) { delete(c.Members, 3) }),
	} {
		c.Cluster = cmp.Or(c.Cluster, "lab")
		c.Service, c.Incarnation = "electd", 1
		c.Agreement = &Agreement{Algorithm: "bully"}
		a, err := New(c, &recorder{})
		if err != nil {
			f.Fatal(err)
		}
		a.Tick(t0)
		a.QueryCluster(t0) // status queries among the seeds
		for _, s := range a.Ready().Sends {
			f.Add(a.Finalize(s, t0))
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg := keyed(2, nil)
		cfg.Cluster, cfg.Service, cfg.Incarnation = "lab", "electd", 1
		cfg.Agreement = &Agreement{Algorithm: "bully"}
		r := &recorder{}
		b, err := New(cfg, r)
		if err != nil {
			t.Fatal(err)
		}
		err = b.Receive(Inbound{From: members[1], Data: data, Time: t0})
		if len(r.steps) != 0 {
			t.Fatalf("a node still starting stepped its core (err %v)", err)
		}
		if err != nil && b.Status().TotalDropped() != 1 {
			t.Fatalf("refused without being counted: %v", err)
		}
		for _, nt := range b.Notices() {
			if len(nt.Msg) > 8192 {
				t.Fatalf("notice of %d bytes", len(nt.Msg))
			}
		}
		b.Tick(t0.Add(time.Second))
		_ = b.Status()
	})
}

// TestAgreementRefusedMemberWithheld: while a node refuses a member's
// frames (an older build, unannounced, for three announce intervals), its
// core's frames to that member are withheld, a broadcast going to the
// others one by one instead of to the multicast group: a cut both ways.
// Once the member is admitted unchecked it is sent to again (multicast).
func TestAgreementRefusedMemberWithheld(t *testing.T) {
	a, ra := newNode(t, 1, func(c *Config) {
		c.Keys = []wire.Key{testKey}
		c.Agreement = &Agreement{Algorithm: "bully"}
		c.Multicast = true
	})
	old, rold := newNode(t, 2, func(c *Config) { c.Keys = []wire.Key{testKey} })
	refusing := false
	var withheldSteps, sentWhileRefused, sentAfter, toThree int
	for i := range 50 {
		now := t0.Add(time.Duration(i) * 100 * time.Millisecond)
		a.Tick(now)
		ra.rd.Messages = append(ra.rd.Messages,
			core.Message{To: core.Broadcast, Kind: wire.KindHeartbeat, Payload: make([]byte, 8)},
			core.Message{To: 2, Kind: wire.KindHeartbeat, Payload: make([]byte, 8)})
		out := a.Ready()
		if !out.Held {
			reached := 0
			for _, s := range out.Sends {
				if s.Kind != wire.KindHeartbeat {
					continue
				}
				if s.Multicast || s.To == members[2] {
					reached++
				}
				if s.To == members[3] {
					toThree++
				}
			}
			if refusing {
				withheldSteps++
				sentWhileRefused += reached
			} else if withheldSteps > 0 {
				sentAfter += reached
			}
		}
		rold.rd.Messages = []core.Message{{To: 1, Kind: wire.KindHeartbeat, Payload: make([]byte, 8)}}
		for _, err := range deliver(t, old, a, now) {
			switch {
			case errors.Is(err, ErrConfigUnverified):
				refusing = true
			case errors.Is(err, ErrStarting):
			case err == nil:
				refusing = false
			default:
				t.Fatal(err)
			}
		}
	}
	if withheldSteps == 0 || sentWhileRefused != 0 {
		t.Fatalf("%d core frames reached member 2 over %d steps while its frames were refused", sentWhileRefused, withheldSteps)
	}
	if sentAfter == 0 || toThree == 0 {
		t.Fatalf("after member 2's admission %d core frames reached it; %d went to member 3 by unicast", sentAfter, toThree)
	}
	if d := a.Status().Dropped["withheld_"+wire.KindHeartbeat.String()]; d == 0 {
		t.Fatal("no withheld frame counted")
	}
}
