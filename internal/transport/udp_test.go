package transport

import (
	"bytes"
	"fmt"
	"net/netip"
	"testing"
	"time"
)

// TestReadLoopDeliversBatches: more datagrams than a batch, members' and
// a stranger's interleaved, all queued before the reader runs: every
// member's datagram is delivered, in order, each with bytes of its own
// (a later batch does not overwrite an earlier packet's Data); every
// stranger's is dropped and counted.
func TestReadLoopDeliversBatches(t *testing.T) {
	eachImpl(t, func(t *testing.T, k *kit) {
		member := k.open(Config{Listen: k.addr(0)})
		stranger := k.open(Config{Listen: k.addr(2)})
		b := k.open(Config{Listen: k.addr(1), Peers: []netip.AddrPort{member.LocalAddr()}})
		const n = 5*readBatch + 3
		want := make([][]byte, n)
		for i := range n {
			want[i] = []byte(fmt.Sprintf("member %d %s", i, bytes.Repeat([]byte{'x'}, i)))
			mustSend(t, member.Send(b.LocalAddr(), want[i], nil))
			if i%3 == 0 {
				mustSend(t, stranger.Send(b.LocalAddr(), []byte("forged"), nil))
			}
		}
		var got []Packet
		for range n {
			got = append(got, recv(t, b, hangGuard))
		}
		quiet(t, b, 50*time.Millisecond)
		for i, p := range got {
			if p.From != member.LocalAddr() || !bytes.Equal(p.Data, want[i]) {
				t.Fatalf("packet %d: %q from %v, want %q from the member", i, p.Data, p.From, want[i])
			}
		}
		if st := b.Stats(); st.UDPStrangers != (n+2)/3 || st.UDP.PacketsIn != n {
			t.Fatalf("strangers %d (want %d), in %d (want %d)", st.UDPStrangers, (n+2)/3, st.UDP.PacketsIn, n)
		}
	})
}
