package transport

import (
	"bytes"
	"net"
	"testing"
	"time"
)

// TestBatchReadTakesEveryQueuedDatagram: one read takes every datagram
// already queued at the socket (up to the batch), so that answers that
// arrive together cost the reader one wake-up, and none of them is lost
// or cut, the largest datagram included.
func TestBatchReadTakesEveryQueuedDatagram(t *testing.T) {
	srv, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(mustAP("127.0.0.1:0")))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	srv.SetReadDeadline(time.Now().Add(hangGuard)) // a lost datagram fails, not hangs
	cli, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(mustAP("127.0.0.1:0")))
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	in, err := newBatchIO(srv, false, readBatch, readSlot)
	if err != nil {
		t.Fatal(err)
	}
	sizes := []int{1, 48, 2049, MaxDatagram, 300}
	datagram := func(i int) []byte { return bytes.Repeat([]byte{byte('a' + i)}, sizes[i]) }
	var c counters
	// A loopback datagram is queued by the time sendto returns, unless
	// the host defers its softirq; the attempt is repeated then.
	var most int
	for attempt := 0; attempt < 5 && most < len(sizes); attempt++ {
		for i := range sizes {
			if _, err := cli.WriteToUDPAddrPort(datagram(i), mustAP(srv.LocalAddr().String())); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(20 * time.Millisecond)
		got := 0
		for got < len(sizes) {
			batch, err := in.read(&c, ViaUDP, "kernel stamps off in this test", nil)
			if err != nil {
				t.Fatal(err)
			}
			if got == 0 {
				most = max(most, len(batch))
			}
			for _, p := range batch {
				if !bytes.Equal(p.Data, datagram(got)) || p.From.Port() != uint16(cli.LocalAddr().(*net.UDPAddr).Port) {
					t.Fatalf("datagram %d: %d bytes from %v, want %d bytes of %q", got, len(p.Data), p.From, sizes[got], rune('a'+got))
				}
				got++
			}
		}
	}
	if most != len(sizes) {
		t.Errorf("one read took at most %d of %d queued datagrams", most, len(sizes))
	}
	if st := c.snapshot(); st.Truncated != 0 || st.UDP.PacketsIn%uint64(len(sizes)) != 0 {
		t.Errorf("stats %+v", st)
	}
}
