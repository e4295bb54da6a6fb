package node

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/wire"
)

// reporting is a config of member id (the test key, every member) whose
// driver says its version.
func reporting(id uint32, mutate func(*Config)) Config {
	return keyed(id, func(c *Config) {
		c.Report = func(r *wire.StatusReport) {
			r.Version, r.Role = "v-test", "follower"
			r.Flags |= wire.StatusWallClock
			r.Facts = []wire.StatusFact{{Tag: wire.FactLeader, Value: 2}}
		}
		if mutate != nil {
			mutate(c)
		}
	})
}

// TestClusterQueryAnswers: member 1 asks; member 2 (agrees) and member 3
// (its member list lacks 2: it differs and stepped back) both answer, the
// one that differs included, each with its standing and fingerprint.
func TestClusterQueryAnswers(t *testing.T) {
	l := newAgreeLAN(t, reporting(1, nil), reporting(2, nil), reporting(3, func(c *Config) { delete(c.Members, 2) }))
	l.run(2 * time.Second)
	n1 := l.nodes[1]
	id, err := n1.QueryCluster(l.now)
	if err != nil {
		t.Fatal(err)
	}
	l.flush(n1)
	if !n1.ClusterQueryDone(id) {
		t.Fatalf("query not done: %+v", n1.queries.pending[id])
	}
	if news := n1.ClusterNews(); len(news) != 1 || news[0] != id {
		t.Fatalf("news %v", news)
	}
	answers := n1.EndClusterQuery(id)
	if len(answers) != 2 || answers[0].Member != 2 || answers[1].Member != 3 {
		t.Fatalf("answers %+v", answers)
	}
	own := n1.SelfReport()
	a2, a3 := answers[0].Report, answers[1].Report
	if a2.Digest != own.Digest || a2.Standing != uint8(StandingAgreed) || a2.Version != "v-test" || a2.QueryID != id || a2.Flags&wire.StatusAgreement == 0 {
		t.Fatalf("member 2's answer %+v (own digest %x)", a2, own.Digest)
	}
	if a3.Digest == own.Digest || a3.Standing != uint8(StandingSteppedBack) || a3.Incarnation != 1 {
		t.Fatalf("member 3's answer %+v", a3)
	}
	if v, _ := a3.Fact(wire.FactLeader); v != 2 || a3.Role != "follower" || a3.Algorithm != "bully" {
		t.Fatalf("member 3's facts %+v", a3)
	}
	if !answers[0].Timed || answers[0].Delay != 0 || answers[0].Offset != 0 {
		t.Fatalf("timing %+v", answers[0])
	}
	if n1.EndClusterQuery(id) != nil || n1.ClusterQueryDone(id) {
		t.Fatal("an ended query is still known")
	}
	if st := n1.Status(); st.FramesIn["status_report"] != 2 || st.FramesOut["status_query"] != 2 {
		t.Fatalf("frames %v %v", st.FramesIn, st.FramesOut)
	}
}

// TestClusterQueryOtherKey: a member with another key cannot answer
// authentically (nor take the query): no answer, the query not done.
func TestClusterQueryOtherKey(t *testing.T) {
	other := wire.Key{ID: 9, Secret: []byte("fedcba9876543210fedcba9876543210")}
	l := newAgreeLAN(t, reporting(1, nil), reporting(2, nil), reporting(3, func(c *Config) { c.Keys = []wire.Key{other} }))
	l.run(time.Second)
	id, _ := l.nodes[1].QueryCluster(l.now)
	l.flush(l.nodes[1])
	if l.nodes[1].ClusterQueryDone(id) {
		t.Fatal("done without member 3")
	}
	if a := l.nodes[1].EndClusterQuery(id); len(a) != 1 || a[0].Member != 2 {
		t.Fatalf("answers %+v", a)
	}
	if st := l.nodes[3].Status(); st.FramesIn["status_query"] != 0 || st.FramesOut["status_report"] != 0 {
		t.Fatalf("member 3 took the query: in %v, out %v, dropped %v", st.FramesIn, st.FramesOut, st.Dropped)
	}
}

// TestClusterQueryTimes: the offset and delay of an answer are NTP's
// arithmetic over the query's and the answer's times.
func TestClusterQueryTimes(t *testing.T) {
	a, _ := newNode(t, 1, nil)
	b, _ := newNode(t, 2, nil)
	id, err := a.QueryCluster(t0)
	if err != nil {
		t.Fatal(err)
	}
	// b's clock is 5 ms ahead; each way takes 1 ms; b answers 2 ms after
	// the query came (its clock).
	var q []byte
	for _, s := range a.Ready().Sends {
		if s.To == members[2] {
			q = a.Finalize(s, t0)
		}
	}
	if err := b.Receive(Inbound{From: members[1], Data: q, Time: t0.Add(6 * time.Millisecond)}); err != nil {
		t.Fatal(err)
	}
	for _, s := range b.Ready().Sends {
		if err := a.Receive(Inbound{From: members[2], Data: b.Finalize(s, t0.Add(8*time.Millisecond)), Time: t0.Add(4 * time.Millisecond)}); err != nil {
			t.Fatal(err)
		}
	}
	ans := a.EndClusterQuery(id)
	if len(ans) != 1 || !ans[0].Timed || ans[0].Offset != 5*time.Millisecond || ans[0].Delay != 2*time.Millisecond {
		t.Fatalf("answers %+v", ans)
	}
}

// TestStatusAnswersLimited: a member that asks faster than the budget is
// refused, counted, and answered again once the budget refills.
func TestStatusAnswersLimited(t *testing.T) {
	a, _ := newNode(t, 1, nil)
	b, _ := newNode(t, 2, nil)
	answered, limited := 0, 0
	ask := func(now time.Time) {
		a.queries.asking = answerBudget{} // a asks faster than it would: b's budget is under test
		id, err := a.QueryCluster(now)
		if err != nil {
			t.Fatal(err)
		}
		defer a.EndClusterQuery(id)
		for _, err := range deliver(t, a, b, now) {
			switch {
			case errors.Is(err, ErrStatusLimited):
				limited++
			case err == nil:
			default:
				t.Fatal(err)
			}
		}
		for _, s := range b.Ready().Sends {
			if s.Kind == wire.KindStatusReport {
				answered++
			}
		}
	}
	for i := range 20 {
		ask(t0.Add(time.Duration(i) * time.Millisecond))
	}
	if answered != statusAnswerBurst || limited != 20-statusAnswerBurst {
		t.Fatalf("answered %d, limited %d", answered, limited)
	}
	if b.Status().Dropped["status_limited"] != uint64(limited) {
		t.Fatalf("dropped %v", b.Status().Dropped)
	}
	ask(t0.Add(20*time.Millisecond + statusAnswerEvery))
	if answered != statusAnswerBurst+1 {
		t.Fatalf("after a pause: answered %d", answered)
	}
}

// TestStatusReportUnsolicited: an answer to no query (or a second one) is
// refused and counted.
func TestStatusReportUnsolicited(t *testing.T) {
	a, _ := newNode(t, 1, nil)
	b, _ := newNode(t, 2, nil)
	r := wire.StatusReport{QueryID: 99}
	payload, _ := r.AppendBinary(nil)
	b.own = append(b.own, core.Message{To: 1, Kind: wire.KindStatusReport, Payload: payload})
	errs := deliver(t, b, a, t0)
	if len(errs) != 1 || !errors.Is(errs[0], ErrStatusUnsolicited) || a.Status().Dropped["status_unsolicited"] != 1 {
		t.Fatalf("errors %v, dropped %v", errs, a.Status().Dropped)
	}
	// A second answer (b's bug: it answers twice, with new numbers).
	id, _ := a.QueryCluster(t0)
	deliver(t, a, b, t0)
	sends := b.Ready().Sends
	b.own = append(b.own, core.Message{To: 1, Kind: wire.KindStatusReport, Payload: sends[0].Data[wire.HeaderLen:]})
	sends = append(sends, b.Ready().Sends...)
	for _, s := range sends {
		a.Receive(Inbound{From: members[2], Data: b.Finalize(s, t0), Time: t0})
	}
	if a.Status().Dropped["status_unsolicited"] != 2 || len(a.EndClusterQuery(id)) != 1 {
		t.Fatalf("a second answer: dropped %v", a.Status().Dropped)
	}
}

// TestClusterQueriesBounded: a node asks at the pace members answer (a
// burst, then one per statusAnswerEvery); at most MaxClusterQueries wait;
// a query no driver ended is forgotten after clusterQueryTTL.
func TestClusterQueriesBounded(t *testing.T) {
	a, _ := newNode(t, 1, nil)
	a.Tick(t0)
	now := t0
	for i := range MaxClusterQueries {
		if i >= statusAnswerBurst {
			now = now.Add(statusAnswerEvery)
		}
		if _, err := a.QueryCluster(now); err != nil {
			t.Fatalf("query %d: %v", i, err)
		}
		if i == statusAnswerBurst-1 {
			if _, err := a.QueryCluster(now); !errors.Is(err, ErrClusterBusy) || !strings.Contains(err.Error(), "one per 250ms") {
				t.Fatalf("faster than the members answer: %v", err)
			}
		}
	}
	now = now.Add(time.Minute)
	if _, err := a.QueryCluster(now); !errors.Is(err, ErrClusterBusy) {
		t.Fatalf("one more than MaxClusterQueries: %v", err)
	}
	a.Tick(now.Add(clusterQueryTTL))
	if _, err := a.QueryCluster(now.Add(clusterQueryTTL)); err != nil {
		t.Fatalf("after the TTL: %v", err)
	}
	alone, _ := newNode(t, 1, func(c *Config) { c.Members = map[uint32]netip.AddrPort{1: members[1]} })
	if _, err := alone.QueryCluster(t0); !errors.Is(err, ErrNoMembers) {
		t.Fatalf("alone: %v", err)
	}
}

// TestStatusAnswerNoAmplifier: an answer never reaches twice its query's
// size, even when the driver's strings are too long to carry (then they
// are dropped, counted, and the node's own parts still answer).
func TestStatusAnswerNoAmplifier(t *testing.T) {
	a, _ := newNode(t, 1, func(c *Config) { c.Keys = []wire.Key{testKey} })
	b, _ := newNode(t, 2, func(c *Config) {
		c.Keys = []wire.Key{testKey}
		c.Report = func(r *wire.StatusReport) {
			r.Version = strings.Repeat("v", 500)
			r.Role = "leader"
		}
	})
	id, _ := a.QueryCluster(t0)
	var qlen int
	for _, s := range a.Ready().Sends {
		if s.To == members[2] {
			q := a.Finalize(s, t0)
			qlen = len(q)
			if err := b.Receive(Inbound{From: members[1], Data: q, Time: t0}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, s := range b.Ready().Sends {
		ans := b.Finalize(s, t0)
		if len(ans) >= 2*qlen {
			t.Fatalf("answer of %d bytes to a query of %d", len(ans), qlen)
		}
		if err := a.Receive(Inbound{From: members[2], Data: ans, Time: t0}); err != nil {
			t.Fatal(err)
		}
	}
	got := a.EndClusterQuery(id)
	if len(got) != 1 || got[0].Report.Version != "" || got[0].Report.Incarnation != 1 || b.Status().Dropped["status_report_trimmed"] != 1 {
		t.Fatalf("answers %+v, dropped %v", got, b.Status().Dropped)
	}
}

// TestStandingNumbers: the wire's standing numbers are node.Standing's.
func TestStandingNumbers(t *testing.T) {
	if StandingAgreed != 0 || StandingStarting != 1 || StandingSteppedBack != wire.MaxStatusStanding {
		t.Fatal("wire.StatusReport.Standing no longer matches node.Standing")
	}
}

// TestClusterQueryAbsurdTimes: times no exchange can have (an origin that
// is not the query's, an answer sent before the query came) are not
// measured; a member's clock decades off is, without overflow.
func TestClusterQueryAbsurdTimes(t *testing.T) {
	for _, c := range []struct {
		name              string
		origin, received  wire.NTPTime
		sent              time.Time
		timed             bool
		offsetAtLeastDays int
	}{
		{"origin a year back", wire.NTPTimeFromTime(t0.AddDate(-1, 0, 0)), wire.NTPTimeFromTime(t0), t0, false, 0},
		{"sent before received", wire.NTPTimeFromTime(t0), wire.NTPTimeFromTime(t0.Add(time.Second)), t0, false, 0},
		{"clock 60 years ahead", wire.NTPTimeFromTime(t0), wire.NTPTimeFromTime(t0.AddDate(60, 0, 0)), t0.AddDate(60, 0, 0), true, 60 * 365},
	} {
		a, _ := newNode(t, 1, nil)
		b, _ := newNode(t, 2, nil)
		id, _ := a.QueryCluster(t0)
		a.Ready()
		r := wire.StatusReport{QueryID: id, Origin: c.origin, Received: c.received}
		payload, _ := r.AppendBinary(nil)
		b.own = append(b.own, core.Message{To: 1, Kind: wire.KindStatusReport, Payload: payload})
		for _, s := range b.Ready().Sends {
			if err := a.Receive(Inbound{From: members[2], Data: b.Finalize(s, c.sent), Time: t0.Add(time.Millisecond)}); err != nil {
				t.Fatal(err)
			}
		}
		ans := a.EndClusterQuery(id)
		if len(ans) != 1 || ans[0].Timed != c.timed || ans[0].Offset < time.Duration(c.offsetAtLeastDays)*24*time.Hour-24*time.Hour {
			t.Errorf("%s: %+v", c.name, ans)
		}
	}
}

// TestStatusReportCarriesNoVector: a member that traces (vectors on)
// answers a status query without its vector clock, which grows by 12
// bytes a member and would make the answer more than twice the query.
func TestStatusReportCarriesNoVector(t *testing.T) {
	key := func(c *Config) { c.Keys = []wire.Key{testKey} }
	a, _ := newNode(t, 1, key)
	b, _ := newNode(t, 2, func(c *Config) { key(c); c.Vectors = true })
	if _, err := a.QueryCluster(t0); err != nil {
		t.Fatal(err)
	}
	var qlen int
	for _, s := range a.Ready().Sends {
		if s.To != members[2] {
			continue
		}
		q := a.Finalize(s, t0)
		qlen = len(q)
		if err := b.Receive(Inbound{From: members[1], Data: q, Time: t0}); err != nil {
			t.Fatal(err)
		}
	}
	reports := 0
	for _, s := range b.Ready().Sends {
		if s.Kind != wire.KindStatusReport {
			continue
		}
		reports++
		ans := b.Finalize(s, t0)
		var f wire.Frame
		if err := f.UnmarshalBinary(ans); err != nil || f.Vector != nil {
			t.Fatalf("the status report carries a vector: %v %v", f.Vector, err)
		}
		if len(ans) >= 2*qlen {
			t.Fatalf("a report of %d bytes to a query of %d", len(ans), qlen)
		}
	}
	if reports != 1 {
		t.Fatalf("%d status reports sent, want 1", reports)
	}
}
