package server

import (
	"errors"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/wire"
)

// outcome steps one request from addr at now and says what came back:
// "reply", "RATE" (a kiss-o'-death), or "drop".
func outcome(t *testing.T, s *Server, addr netip.AddrPort, now time.Time) string {
	t.Helper()
	err := s.StepDatagram(core.Datagram{Addr: addr, Data: request(4, wire.ModeClient), Time: now})
	out := s.Ready().Datagrams
	switch {
	case errors.Is(err, ErrRateLimited) && len(out) == 0:
		return "drop"
	case err != nil || len(out) != 1:
		t.Fatalf("StepDatagram: %v, %d datagrams", err, len(out))
	}
	var p wire.NTPPacket
	_ = p.UnmarshalBinary(out[0].Data)
	if p.Stratum == 0 {
		if p.Leap != wire.LeapNotInSync || p.Origin != t1 || p.Mode != wire.ModeServer || len(out[0].Data) != wire.NTPHeaderLen {
			t.Errorf("kiss-o'-death %+v", p)
		}
		return p.KissCode()
	}
	return "reply"
}

func TestRateLimitBurstThenKiss(t *testing.T) {
	s := newServer(t, Config{LocalStratum: 8, RateLimit: RateLimit{Interval: time.Second, Burst: 4, KissInterval: 3 * time.Second}})
	now := t0
	var got []string
	// 8 requests 10 ms apart: the burst of 4 is answered, then one RATE,
	// then silence.
	for range 8 {
		got = append(got, outcome(t, s, clientAddr, now))
		now = now.Add(10 * time.Millisecond)
	}
	want := "[reply reply reply reply RATE drop drop drop]"
	if fmt.Sprint(got) != want {
		t.Fatalf("burst: %v, want %s", got, want)
	}
	// Another client is not affected.
	other := netip.MustParseAddrPort("10.77.0.3:123")
	if o := outcome(t, s, other, now); o != "reply" {
		t.Errorf("other client: %s", o)
	}
	// Neither is the same address from another port.
	if o := outcome(t, s, netip.AddrPortFrom(clientAddr.Addr(), 999), now); o != "drop" {
		t.Errorf("same address, other port: %s, want drop", o)
	}
	// One interval later one token is back.
	now = now.Add(time.Second)
	if o := outcome(t, s, clientAddr, now); o != "reply" {
		t.Errorf("after an interval: %s", o)
	}
	if o := outcome(t, s, clientAddr, now); o != "drop" {
		t.Errorf("second request after an interval: %s (kissed %v ago)", o, time.Second)
	}
	// After the kiss interval an over-limit request is kissed again.
	now = now.Add(2 * time.Second)
	for range 2 { // the two tokens refilled since
		if o := outcome(t, s, clientAddr, now); o != "reply" {
			t.Errorf("refilled token: %s", o)
		}
	}
	if o := outcome(t, s, clientAddr, now); o != "RATE" {
		t.Errorf("after the kiss interval: %s, want RATE", o)
	}
	st := s.Report()
	if st.KoDRate != 2 || st.Dropped["rate_limited"] == 0 || st.RateLimit.Clients != 2 {
		t.Errorf("status %+v %+v", st, st.RateLimit)
	}
}

// A client polling at exactly the average interval forever is never limited,
// even after starting with a full burst.
func TestRateLimitSteadyClient(t *testing.T) {
	s := newServer(t, Config{LocalStratum: 8, RateLimit: RateLimit{Interval: time.Second, Burst: 8}})
	now := t0
	for i := range 8 { // an iburst: 8 polls 500 ms apart
		if o := outcome(t, s, clientAddr, now); o != "reply" {
			t.Fatalf("burst poll %d: %s", i, o)
		}
		now = now.Add(500 * time.Millisecond)
	}
	for i := range 200 {
		if o := outcome(t, s, clientAddr, now); o != "reply" {
			t.Fatalf("steady poll %d: %s", i, o)
		}
		now = now.Add(time.Second)
	}
}

func TestRateLimitOff(t *testing.T) {
	s := newServer(t, Config{LocalStratum: 8, RateLimit: RateLimit{Interval: -1}})
	for i := range 100 {
		if o := outcome(t, s, clientAddr, t0); o != "reply" {
			t.Fatalf("request %d: %s", i, o)
		}
	}
	if st := s.Report(); st.RateLimit != nil {
		t.Errorf("rate limit status %+v with limiting off", st.RateLimit)
	}
}

// A flood from many (spoofed) addresses cannot grow the table past its
// bound, and idle entries go away on Tick.
func TestRateLimitTableBounded(t *testing.T) {
	s := newServer(t, Config{LocalStratum: 8, RateLimit: RateLimit{Interval: time.Second, Burst: 2, MaxClients: 100}})
	now := t0
	for i := range 10_000 {
		a := netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}), 123)
		outcome(t, s, a, now)
		now = now.Add(time.Microsecond)
	}
	st := s.Report().RateLimit
	if st.Clients != 100 || st.Evicted != 10_000-100 {
		t.Fatalf("table %d entries, %d evicted", st.Clients, st.Evicted)
	}
	// Still full buckets' worth of state one interval on: each of the last
	// 100 clients spent one token, refilled after Interval.
	s.Tick(now.Add(time.Second / 2))
	if n := s.Report().RateLimit.Clients; n != 100 {
		t.Errorf("%d entries after half an interval, want 100", n)
	}
	for k := 1; k <= 2; k++ { // expiry works in bounded steps per tick
		s.Tick(now.Add(2 * time.Second))
	}
	if n := s.Report().RateLimit.Clients; n != 0 {
		t.Errorf("%d entries after the buckets refilled, want 0", n)
	}
}

// Expiry per tick is bounded, and entries that still matter (a recent kiss)
// survive it.
func TestRateLimitExpiryKeepsKissedClients(t *testing.T) {
	s := newServer(t, Config{LocalStratum: 8, RateLimit: RateLimit{Interval: time.Second, Burst: 1, KissInterval: 10 * time.Second}})
	outcome(t, s, clientAddr, t0)
	if o := outcome(t, s, clientAddr, t0); o != "RATE" {
		t.Fatalf("second request: %s", o)
	}
	s.Tick(t0.Add(5 * time.Second))
	if n := s.Report().RateLimit.Clients; n != 1 {
		t.Fatalf("kissed client expired early (%d entries)", n)
	}
	if o := outcome(t, s, clientAddr, t0.Add(5*time.Second)); o != "reply" {
		t.Errorf("refilled client: %s", o)
	}
	s.Tick(t0.Add(11 * time.Second))
	if n := s.Report().RateLimit.Clients; n != 0 {
		t.Errorf("%d entries, want 0", n)
	}
}

// A clock stepped backwards does not lock a client out.
func TestRateLimitClockBackwards(t *testing.T) {
	s := newServer(t, Config{LocalStratum: 8, RateLimit: RateLimit{Interval: time.Second, Burst: 2}})
	for range 3 {
		outcome(t, s, clientAddr, t0)
	}
	if o := outcome(t, s, clientAddr, t0.Add(-time.Hour)); o != "reply" {
		t.Errorf("after the clock went back an hour: %s", o)
	}
}

// TestRateLimitReusesEntries: entries that expire (at every tick, with a
// short interval) or are evicted are reused: clients coming and going cost
// no allocation once the table has grown, and the table stays bounded.
func TestRateLimitReusesEntries(t *testing.T) {
	l := newLimiter(RateLimit{Interval: 2 * time.Microsecond, Burst: 8, KissInterval: time.Millisecond, MaxClients: 64})
	addrs := make([]netip.Addr, 100)
	for i := range addrs {
		addrs[i] = netip.AddrFrom4([4]byte{10, 0, byte(i / 250), byte(i%250 + 1)})
	}
	now := t0
	round := func() {
		for _, a := range addrs {
			now = now.Add(time.Microsecond)
			l.check(a, now)
		}
		now = now.Add(10 * time.Millisecond)
		l.expire(now)
	}
	round() // grow the table and the free list
	if allocs := testing.AllocsPerRun(100, round); allocs != 0 {
		t.Errorf("%v allocations per round of 100 clients, want 0", allocs)
	}
	if len(l.table) > 64 {
		t.Errorf("table of %d entries, bound 64", len(l.table))
	}
}
