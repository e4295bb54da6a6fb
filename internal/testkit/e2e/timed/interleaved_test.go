package timed

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/synclab/synclab/pkg/wire"
)

// TestTimedServerInterleaved: timed's server answers a request in
// chrony's interleaved form that names its previous answer with that
// answer's kernel transmit stamp: later than the T3 the answer carried (by
// the send path), by less than a plausible send path; and only once.
func TestTimedServerInterleaved(t *testing.T) {
	conn := dialServer(t)
	exchange := func(org, rx, tx uint64) (aOrg, aRx, aTx uint64) {
		t.Helper()
		req := make([]byte, wire.NTPHeaderLen)
		req[0] = 4<<3 | byte(wire.ModeClient)
		binary.BigEndian.PutUint64(req[24:], org)
		binary.BigEndian.PutUint64(req[32:], rx)
		binary.BigEndian.PutUint64(req[40:], tx)
		if _, err := conn.Write(req); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 512)
		conn.SetReadDeadline(time.Now().Add(3 * time.Second))
		n, err := conn.Read(buf)
		if err != nil || n < wire.NTPHeaderLen {
			t.Fatalf("no answer: %v", err)
		}
		return binary.BigEndian.Uint64(buf[24:]), binary.BigEndian.Uint64(buf[32:]), binary.BigEndian.Uint64(buf[40:])
	}
	for round := range 5 {
		// A request in interleaved form naming no answer of the server's:
		// a basic answer, whose stamp the server keeps.
		tx1 := rand.Uint64()
		org, rx1, t3 := exchange(rand.Uint64()|1, rand.Uint64(), tx1)
		if org != tx1 || rx1&1 != 1 {
			t.Fatalf("round %d: first answer origin %x (want our transmit %x), receive %x (want odd)", round, org, tx1, rx1)
		}
		nonce, tx2 := rand.Uint64(), rand.Uint64()
		org, _, t3k := exchange(rx1, nonce, tx2)
		if org != nonce {
			t.Fatalf("round %d: second answer origin %x, want our nonce %x (interleaved)", round, org, nonce)
		}
		lag := time.Duration(float64(int64(t3k-t3)) / (1 << 32) * 1e9)
		if lag < 0 || lag > 50*time.Millisecond {
			t.Fatalf("round %d: kernel transmit stamp %v after the T3 the answer carried", round, lag)
		}
		t.Logf("round %d: the answer left %v after its T3", round, lag)
		// The same request again: the stamp was given out already.
		if org, _, _ := exchange(rx1, nonce+1, tx2+1); org != tx2+1 {
			t.Fatalf("round %d: a stamp given out twice (origin %x)", round, org)
		}
	}
}
