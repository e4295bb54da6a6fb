package node

import (
	"encoding/binary"
	"net/netip"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/trace"
	"github.com/synclab/synclab/pkg/wire"
)

// TestNTPTransmitStampsDistinct: NTP packets a node stamps with one clock
// reading (the answers of one datagram batch share it; a simulated node's
// sends of one instant too) leave with distinct transmit timestamps, each
// within a few units of the reading, so no two of them share a trace frame
// ID ("frame ntp:... sent twice") and no client drops one as a duplicate.
// A reading far behind the last stamp (the clock set back) is used as it
// is: the stamps never run ahead of the clock.
func TestNTPTransmitStampsDistinct(t *testing.T) {
	n, _ := newNode(t, 1, nil)
	stamp := func(at time.Time) wire.NTPTime {
		t.Helper()
		req := make([]byte, wire.NTPHeaderLen)
		req[0] = 4<<3 | byte(wire.ModeServer)
		b := n.FinishAnswer(Send{To: netip.MustParseAddrPort("127.0.0.50:40000"), Data: req, Datagram: true, NTPStamp: true}, at)
		return wire.NTPTime(binary.BigEndian.Uint64(b[wire.NTPXmtOffset:]))
	}
	seen := map[string]bool{}
	reading := wire.NTPTimeFromTime(t0)
	for i := range 64 {
		xmt := stamp(t0)
		if id := trace.NTPFrameID(xmt); seen[id] {
			t.Fatalf("answer %d of one batch: frame %s again", i, id)
		} else {
			seen[id] = true
		}
		if d := xmt - reading; d > 64 {
			t.Fatalf("answer %d: transmit time %d units after the reading, want at most 64", i, d)
		}
	}
	if later := t0.Add(time.Microsecond); stamp(later) != wire.NTPTimeFromTime(later) {
		t.Errorf("a later reading is not used as it is")
	}
	if back := t0.Add(-time.Second); stamp(back) != wire.NTPTimeFromTime(back) {
		t.Errorf("a clock set back by 1 s: stamp not the reading (stamps must not run ahead of the clock)")
	}
}
