package daemon

import (
	"net/netip"
	"testing"

	"github.com/synclab/synclab/pkg/wire"
)

// TestMemberAtSkipsSelf (review-supersede): this node and one other member on one IP (a lab
// host running two members, the rest elsewhere). Peers excludes self, so
// the transport gives that IP to member 2 alone (its connections ordered,
// its supersedes kept under 127.0.0.1:0); memberAt counts self too and
// says no member has that IP alone: the WARN says "member 0 (127.0.0.1)"
// member=0, status "127.0.0.1 (members share it)".
func TestMemberAtSkipsSelf(t *testing.T) {
	d := &Daemon{cfg: Config{ID: 1, Members: map[uint32]netip.AddrPort{
		1: netip.MustParseAddrPort("127.0.0.1:7001"),
		2: netip.MustParseAddrPort("127.0.0.1:7002"),
		3: netip.MustParseAddrPort("127.0.0.3:7003"),
	}}}
	if got := d.memberAt(netip.MustParseAddrPort("127.0.0.1:0")); got != 2 {
		t.Fatalf("memberAt(127.0.0.1:0) = %d, want 2 (the only other member on that IP)", got)
	}
}

// TestMemberFrameBranches (review-supersede): memberFrame's branches the merge's tests do not reach
// (they send only another cluster's frames): another member's name from
// member 2's IP, no MAC, a wrong key, misaddressed, this node's own name;
// and member 2's own sealed frame passes (from a v4-mapped address too).
func TestMemberFrameBranches(t *testing.T) {
	d := &Daemon{cfg: Config{ID: 1, Name: "mutexd", Cluster: "lab", Keys: []wire.Key{testKey}, Members: map[uint32]netip.AddrPort{
		1: netip.MustParseAddrPort("127.0.0.71:7001"),
		2: netip.MustParseAddrPort("127.0.0.72:7002"),
		3: netip.MustParseAddrPort("127.0.0.73:7003"),
	}}}
	check := d.memberFrame()
	ours := wire.ServiceClusterID("mutexd", "lab")
	from := netip.MustParseAddrPort("127.0.0.72:40000")
	mk := func(sender, receiver uint32, key *wire.Key) []byte {
		f := wire.Frame{Header: wire.Header{Kind: wire.KindHeartbeat, Cluster: ours, Sender: sender, Receiver: receiver, Seq: wire.Seq(1, 0, 1)}}
		raw, err := f.AppendBinary(nil)
		if err != nil {
			t.Fatal(err)
		}
		if key != nil {
			raw = wire.NewSealer(*key).Seal(raw)
		}
		return raw
	}
	other := wire.Key{ID: 1, Secret: []byte("another secret, another cluster")}
	for _, c := range []struct {
		name string
		from netip.AddrPort
		b    []byte
		want bool
	}{
		{"member 2, sealed", from, mk(2, 1, &testKey), true},
		{"member 2, to all", from, mk(2, 0, &testKey), true},
		{"member 2, v4-mapped source", netip.MustParseAddrPort("[::ffff:127.0.0.72]:40000"), mk(2, 1, &testKey), true},
		{"member 3's name from 2's IP", from, mk(3, 1, &testKey), false},
		{"no MAC", from, mk(2, 1, nil), false},
		{"another key", from, mk(2, 1, &other), false},
		{"to member 3", from, mk(2, 3, &testKey), false},
		{"this node's name", from, mk(1, 1, &testKey), false},
		{"garbage", from, []byte("xyz"), false},
	} {
		if got := check(c.from, c.b); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
