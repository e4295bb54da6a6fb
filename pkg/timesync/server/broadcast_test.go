package server

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/wire"
)

var (
	bcastTo  = netip.MustParseAddrPort("239.77.0.5:123")
	bcastKey = wire.NTPKey{ID: 7, Type: "SHA1", Secret: []byte("broadcast")}
)

// broadcasts ticks s at the given offsets from t0 and returns what it
// sent at each, decoded.
func broadcasts(t *testing.T, s *Server, at ...time.Duration) [][]core.Datagram {
	t.Helper()
	var out [][]core.Datagram
	for _, d := range at {
		s.Tick(t0.Add(d))
		out = append(out, s.Ready().Datagrams)
	}
	return out
}

// TestBroadcastSchedule: the first broadcast at the first tick, then one
// per interval on a fixed schedule (a late tick does not shift it), each a
// mode-5 packet to the address with the system variables, no origin or
// receive timestamp, the poll of the interval, stamped and signed at the
// write; Deadline names the next.
func TestBroadcastSchedule(t *testing.T) {
	s := newServer(t, Config{LocalStratum: 8, Keys: []wire.NTPKey{bcastKey},
		Broadcast: BroadcastConfig{Addr: bcastTo, Interval: 16 * time.Second, KeyID: 7}})
	got := broadcasts(t, s, 0, time.Second, 16*time.Second+20*time.Millisecond, 31*time.Second, 32*time.Second)
	want := []int{1, 0, 1, 0, 1}
	for i, ds := range got {
		if len(ds) != want[i] {
			t.Fatalf("tick %d: %d datagrams, want %d", i, len(ds), want[i])
		}
	}
	d := got[0][0]
	if d.Addr != bcastTo || !d.NTPStamp || d.NTPSign == nil || d.NTPSign.Key.ID != 7 || d.NTPSign.Whole {
		t.Fatalf("broadcast %+v: want to %v, stamped, signed with key 7", d, bcastTo)
	}
	var p wire.NTPPacket
	if err := p.UnmarshalBinary(d.Data); err != nil {
		t.Fatal(err)
	}
	if p.Mode != wire.ModeBroadcast || p.Version != 4 || p.Stratum != 8 || p.Leap != 0 || p.Poll != 4 ||
		p.Origin != 0 || p.Receive != 0 || p.Transmit.IsZero() || len(d.Data) != wire.NTPHeaderLen {
		t.Fatalf("broadcast packet %+v (%d bytes)", p, len(d.Data))
	}
	if dl := s.Deadline(); !dl.Equal(t0.Add(48 * time.Second)) {
		t.Fatalf("deadline %v, want the next broadcast at +48s", dl.Sub(t0))
	}
	st := s.Report().Broadcast
	if st == nil || st.Sent != 3 || st.Address != bcastTo.String() || st.KeyID != 7 || st.Advertising != "stratum 8" || st.IntervalMS != 16000 {
		t.Fatalf("status %+v", st)
	}
}

// TestBroadcastUnsynchronised: a server with nothing to advertise still
// broadcasts (clients refuse the packets and say so), and its status says
// what the packets advertise; unsigned with Insecure.
func TestBroadcastUnsynchronised(t *testing.T) {
	s := newServer(t, Config{Broadcast: BroadcastConfig{Addr: netip.MustParseAddrPort("10.77.0.255:123"), Insecure: true}})
	d := broadcasts(t, s, 0)[0]
	if len(d) != 1 || d[0].NTPSign != nil {
		t.Fatalf("datagrams %+v: want one, unsigned", d)
	}
	var p wire.NTPPacket
	if err := p.UnmarshalBinary(d[0].Data); err != nil {
		t.Fatal(err)
	}
	if p.Leap != wire.LeapNotInSync || p.Stratum != wire.StratumUnsynchronized || p.Poll != 4 {
		t.Fatalf("packet %+v", p)
	}
	if st := s.Report().Broadcast; !strings.HasPrefix(st.Advertising, "unsynchronised") || !st.Insecure || st.IntervalMS != DefaultBroadcastInterval.Milliseconds() {
		t.Fatalf("status %+v", st)
	}
	if s.Deadline().IsZero() {
		t.Fatal("no deadline for the next broadcast")
	}
}

// TestBroadcastConfig: the mistakes an administrator makes are refused
// with what to do.
func TestBroadcastConfig(t *testing.T) {
	keys := []wire.NTPKey{bcastKey}
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"unsigned without insecure", Config{Broadcast: BroadcastConfig{Addr: bcastTo}}, "RFC 8633"},
		{"key not in the file", Config{Keys: keys, Broadcast: BroadcastConfig{Addr: bcastTo, KeyID: 9}}, "not in the key file"},
		{"key and insecure", Config{Keys: keys, Broadcast: BroadcastConfig{Addr: bcastTo, KeyID: 7, Insecure: true}}, "choose one"},
		{"no port", Config{Broadcast: BroadcastConfig{Addr: netip.AddrPortFrom(bcastTo.Addr(), 0), Insecure: true}}, "need a port"},
		{"IPv6", Config{Broadcast: BroadcastConfig{Addr: netip.MustParseAddrPort("[ff02::101]:123"), Insecure: true}}, "IPv4"},
		{"unspecified", Config{Broadcast: BroadcastConfig{Addr: netip.MustParseAddrPort("0.0.0.0:123"), Insecure: true}}, "nobody would hear"},
		{"interval too short", Config{Broadcast: BroadcastConfig{Addr: bcastTo, Interval: time.Millisecond, Insecure: true}}, "broadcast interval"},
		{"interval without address", Config{Broadcast: BroadcastConfig{Interval: time.Second}}, "without a broadcast address"},
	} {
		if _, err := New(tc.cfg); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want ErrConfig saying %q", tc.name, err, tc.want)
		}
	}
}
