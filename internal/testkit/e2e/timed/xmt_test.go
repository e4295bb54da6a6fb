package timed

import (
	"encoding/binary"
	"net"
	"testing"
	"time"

	"github.com/synclab/synclab/pkg/wire"
)

// TestTimedServerTransmitTimesDistinct: a burst of NTP requests reaches
// timed's server in batches, and the answers of a batch are written
// together; each must still carry its own transmit timestamp. Two answers
// with one transmit time are one "frame" to a trace ("frame ntp:... sent
// twice", seen in TestDemoShort and TestTimedNTPTraced under load) and,
// to one client, a duplicate it must drop.
func TestTimedServerTransmitTimesDistinct(t *testing.T) {
	conn := dialServer(t)
	const bursts, per = 5, 32
	seen := map[uint64]bool{}
	buf := make([]byte, 512)
	for b := range bursts {
		for i := range per {
			req := make([]byte, wire.NTPHeaderLen)
			req[0] = 4<<3 | byte(wire.ModeClient)
			binary.BigEndian.PutUint64(req[wire.NTPXmtOffset:], uint64(b*per+i+1)) // our own origin, distinct
			if _, err := conn.Write(req); err != nil {
				t.Fatal(err)
			}
		}
		for i := range per {
			conn.SetReadDeadline(time.Now().Add(3 * time.Second))
			n, err := conn.Read(buf)
			if err != nil {
				t.Fatalf("burst %d: %d of %d answers: %v", b, i, per, err)
			}
			if n < wire.NTPHeaderLen {
				t.Fatalf("a %d-byte answer", n)
			}
			xmt := binary.BigEndian.Uint64(buf[wire.NTPXmtOffset:])
			if seen[xmt] {
				t.Fatalf("burst %d: two answers with transmit time %016x", b, xmt)
			}
			seen[xmt] = true
		}
	}
}

// dialServer starts a timed serving stratum 8 without a rate limit and
// returns a socket connected to it, closed when the test ends.
func dialServer(t *testing.T) *net.UDPConn {
	t.Helper()
	c := newCluster(t, "timed", 1)
	addr := serveTimed(t, c, 1, 0, "--stratum", "8", "--rate-limit", "0")
	conn, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(addr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}
