package transport

import (
	"net/netip"
	"sync/atomic"
	"testing"
)

// BenchmarkStreamPingPongMembers is BenchmarkStreamPingPong as a daemon
// configures its endpoint: the members known (Config.Peers), so that
// each end orders its member's connections (peerOrder), and
// Config.Supersedes set. It reports how often Supersedes ran: for a
// connection's frames until it first superseded (its first), never for a
// steady stream.
func BenchmarkStreamPingPongMembers(b *testing.B) {
	var asked atomic.Int64
	supersedes := func(netip.AddrPort, []byte) bool { asked.Add(1); return true }
	streamPingPong(b,
		Config{Listen: mustAP("127.0.0.10:0"), Seed: 1, Peers: []netip.AddrPort{mustAP("127.0.0.11:1")}, Supersedes: supersedes},
		Config{Listen: mustAP("127.0.0.11:0"), Seed: 2, Peers: []netip.AddrPort{mustAP("127.0.0.10:1")}, Supersedes: supersedes},
		func() { b.ReportMetric(float64(asked.Load()), "supersedes-calls") })
}
