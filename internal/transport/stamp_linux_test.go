package transport

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"net/netip"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// cmsg is one control message in the native layout.
func cmsg(level, typ int32, data []byte) []byte {
	b := make([]byte, unix.CmsgSpace(len(data)))
	ne := binary.NativeEndian
	if unix.SizeofCmsghdr == 16 {
		ne.PutUint64(b, uint64(unix.CmsgLen(len(data))))
		ne.PutUint32(b[8:], uint32(level))
		ne.PutUint32(b[12:], uint32(typ))
	} else {
		ne.PutUint32(b, uint32(unix.CmsgLen(len(data))))
		ne.PutUint32(b[4:], uint32(level))
		ne.PutUint32(b[8:], uint32(typ))
	}
	copy(b[unix.CmsgLen(0):], data)
	return b
}

func TestParseRxTimestamp(t *testing.T) {
	ts := make([]byte, 16)
	binary.NativeEndian.PutUint64(ts, 1_700_000_000)
	binary.NativeEndian.PutUint64(ts[8:], 123_456_789)
	want := time.Unix(1_700_000_000, 123_456_789)

	other := cmsg(unix.SOL_IP, unix.IP_TTL, []byte{64, 0, 0, 0})
	stamp := cmsg(unix.SOL_SOCKET, unix.SCM_TIMESTAMPNS, ts)
	for name, oob := range map[string][]byte{"alone": stamp, "after another": append(other, stamp...)} {
		if got, ok := parseRxTimestamp(oob); !ok || !got.Equal(want) {
			t.Errorf("%s: %v %v", name, got, ok)
		}
	}
	for name, oob := range map[string][]byte{
		"empty":     nil,
		"other":     other,
		"truncated": stamp[:len(stamp)-4],
		"short hdr": stamp[:unix.SizeofCmsghdr-1],
	} {
		if got, ok := parseRxTimestamp(oob); ok {
			t.Errorf("%s: parsed %v", name, got)
		}
	}
}

// TestTxTimestamps: every datagram sent through a UDPConn comes back with
// the kernel's transmit stamp, taken after the Finalizer ran and before
// the send returned, matched to its own datagram across many sends (Send
// and SendStamped share the counter).
func TestTxTimestamps(t *testing.T) {
	rx, tx := udpPair(t)
	for i := range 50 {
		if i%5 == 4 {
			if err := tx.Send(rx.LocalAddr(), []byte("plain"), nil); err != nil {
				t.Fatal(err)
			}
			continue
		}
		var before time.Time
		st, err := tx.SendStamped(rx.LocalAddr(), []byte("stamped"), func(b []byte) []byte { before = time.Now(); return b })
		after := time.Now()
		if err != nil {
			t.Fatal(err)
		}
		if !st.Kernel || st.Missed {
			t.Fatalf("send %d: no kernel transmit stamp (%+v)", i, st)
		}
		if st.Time.Before(before) || st.Time.After(after) {
			t.Fatalf("send %d: stamp %v outside [%v, %v]", i, st.Time, before, after)
		}
	}
	// Every stamped send counted as stamped (40), none missed.
	if st := tx.Stats(); st.TxKernelStamps != 40 {
		t.Errorf("stats: %d transmit stamps, want 40", st.TxKernelStamps)
	}
	// The receiver got them all: draining the error queue never ate data.
	for range 50 {
		select {
		case <-rx.Packets():
		case <-time.After(hangGuard):
			t.Fatal("a datagram did not arrive")
		}
	}
}

// TestPlainSendsAreNotStamped: a datagram sent with Send asks for no
// transmit stamp (an NTP server's replies cost no error-queue read): after
// many, the socket's error queue is empty, and the next stamped send still
// gets its own stamp.
func TestPlainSendsAreNotStamped(t *testing.T) {
	rx, tx := udpPair(t)
	for range 20 {
		if err := tx.Send(rx.LocalAddr(), []byte("plain"), nil); err != nil {
			t.Fatal(err)
		}
	}
	if queued := queuedTxStamps(tx.sock.rc); queued != 0 {
		t.Fatalf("%d transmit stamps queued by plain sends", queued)
	}
	if st, err := tx.SendStamped(rx.LocalAddr(), []byte("stamped"), nil); err != nil || !st.Kernel {
		t.Fatalf("stamped send after plain ones: %+v, %v", st, err)
	}
}

// udpPair opens two UDPConns on 127.0.0.1, closed when the test ends.
func udpPair(t *testing.T) (rx, tx *UDPConn) {
	t.Helper()
	for _, c := range []**UDPConn{&rx, &tx} {
		u, err := ListenUDP(netip.MustParseAddrPort("127.0.0.1:0"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { u.Close() })
		*c = u
	}
	return rx, tx
}

// TestParseTxTimestampLayouts: the transmit stamp is read from three
// struct timespec of 8-byte longs (48 bytes) and, as a 32-bit kernel
// sends them, of 4-byte ones (24 bytes), which were read as 8-byte ones:
// a time decades off, every stamp refused as implausible.
func TestParseTxTimestampLayouts(t *testing.T) {
	want := time.Unix(1_700_000_000, 123_456_789)
	ee := make([]byte, sizeofSockExtendedErr)
	binary.NativeEndian.PutUint32(ee, uint32(unix.ENOMSG))
	ee[4] = unix.SO_EE_ORIGIN_TIMESTAMPING
	binary.NativeEndian.PutUint32(ee[12:], 7)
	recverr := cmsg(unix.SOL_IP, unix.IP_RECVERR, ee)
	for _, long := range []int{8, 4} {
		ts := make([]byte, 6*long) // ts[1], ts[2] zero
		if long == 8 {
			binary.NativeEndian.PutUint64(ts, uint64(want.Unix()))
			binary.NativeEndian.PutUint64(ts[8:], uint64(want.Nanosecond()))
		} else {
			binary.NativeEndian.PutUint32(ts, uint32(want.Unix()))
			binary.NativeEndian.PutUint32(ts[4:], uint32(want.Nanosecond()))
		}
		oob := append(cmsg(unix.SOL_SOCKET, unix.SCM_TIMESTAMPING, ts), recverr...)
		if got, id, ok := parseTxTimestamp(oob); !ok || !got.Equal(want) || id != 7 {
			t.Errorf("%d-byte longs: %v id %d ok %v, want %v id 7", long, got, id, ok, want)
		}
		if _, _, ok := parseTxTimestamp(append(cmsg(unix.SOL_SOCKET, unix.SCM_TIMESTAMPING, ts[:len(ts)-1]), recverr...)); ok {
			t.Errorf("%d-byte longs: a truncated SCM_TIMESTAMPING parsed", long)
		}
	}
}

func TestParseTxTimestampRefusesOtherMessages(t *testing.T) {
	if _, _, ok := parseTxTimestamp(nil); ok {
		t.Error("empty control data parsed")
	}
	if _, _, ok := parseTxTimestamp(make([]byte, 7)); ok {
		t.Error("truncated header parsed")
	}
}

// TestEndpointTxTimestamps: the member socket stamps its unicast and
// multicast sends too; a plain send between them asks for no stamp (it
// would cost an error-queue read for nothing) and keeps the counter in
// step.
func TestEndpointTxTimestamps(t *testing.T) {
	group := netip.MustParseAddrPort("239.77.9.9:7391")
	open := func(addr string) Endpoint {
		ep, err := Open(Config{Listen: netip.MustParseAddrPort(addr),
			Multicast: &MulticastConfig{Group: group, Interface: "lo", TTL: 0, Loopback: true}})
		if err != nil {
			t.Skipf("multicast on lo: %v", err)
		}
		t.Cleanup(func() { ep.Close() })
		return ep
	}
	a, b := open("127.0.0.61:0"), open("127.0.0.62:0")
	for i := range 30 {
		var before time.Time
		fin := func(p []byte) []byte { before = time.Now(); return p }
		var st TxStamp
		var err error
		switch i % 3 {
		case 0:
			st, err = a.SendStamped(b.LocalAddr(), []byte("u"), fin)
		case 1:
			st, err = a.SendMulticastStamped([]byte("m"), fin)
		case 2:
			err = a.Send(b.LocalAddr(), []byte("plain"), nil)
			st.Kernel, before = true, time.Time{}
		}
		after := time.Now()
		if err != nil {
			t.Fatal(err)
		}
		if !st.Kernel {
			t.Fatalf("send %d: no kernel transmit stamp", i)
		}
		if !before.IsZero() && (st.Time.Before(before) || st.Time.After(after)) {
			t.Fatalf("send %d: stamp %v outside [%v, %v]", i, st.Time, before, after)
		}
	}
	// The stamps asked for: the stamped sends' alone.
	if u := a.(*endpoint).fab.(*sockets).ucast; u.txSent != 20 {
		t.Fatalf("%d transmit stamps asked for by 20 stamped and 10 plain sends", u.txSent)
	}
}

// queuedTxStamps drains the socket's error queue and counts what it held.
func queuedTxStamps(rc syscall.RawConn) int {
	queued := 0
	oob := make([]byte, txOOBSize)
	var buf [1]byte
	rc.Control(func(fd uintptr) {
		for {
			if _, _, _, _, err := unix.Recvmsg(int(fd), buf[:], oob, unix.MSG_ERRQUEUE|unix.MSG_DONTWAIT); err != nil {
				return
			}
			queued++
		}
	})
	return queued
}

// TestTxStampsRefusedAreMissed: a socket whose SO_TIMESTAMPING could not
// be set (a sandbox, an old kernel: enableTx leaves rc nil) misses every
// transmit stamp, and says so in the send's result and the counters, as
// a stamp not found does, so that the daemon warns; it used to send
// without a word, every T1 taken early. The miss is the daemon's to count
// (tx_stamp_missed, where the stamp would be used): the socket's stats,
// shown in the same status, do not count it a second time.
func TestTxStampsRefusedAreMissed(t *testing.T) {
	rx, tx := udpPair(t)
	tx.sock.rc = nil // as if enableTx's setsockopt had failed
	st, err := tx.SendStamped(rx.LocalAddr(), []byte("stamped"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if st.Kernel || !st.Missed {
		t.Errorf("send without transmit stamps turned on: %+v, want Missed", st)
	}
	s := tx.Stats()
	if s.TxKernelStamps != 0 {
		t.Errorf("stats: %d transmit stamps, want 0", s.TxKernelStamps)
	}
	if b, _ := json.Marshal(s); bytes.Contains(b, []byte("miss")) {
		t.Errorf("the socket's stats count the missed stamp too: %s", b)
	}
	select {
	case <-rx.Packets():
	case <-time.After(hangGuard):
		t.Fatal("the datagram did not arrive")
	}
}

// TestWriteBatchStamped: a batch's datagrams with Stamp come back with
// their own kernel transmit stamps, taken during the write, in order; the
// others have none; stamped sends interleaved with batches keep their own
// (the counter is shared).
func TestWriteBatchStamped(t *testing.T) {
	rx, tx := udpPair(t)
	ds := make([]Datagram, 40)
	for i := range ds {
		ds[i] = Datagram{To: rx.LocalAddr(), Data: []byte{byte(i)}, Stamp: i%3 != 1}
	}
	stamps := make([]TxStamp, len(ds))
	for round := range 3 {
		before := time.Now()
		n, err := tx.WriteBatchStamped(ds, stamps)
		after := time.Now()
		if err != nil || n != len(ds) {
			t.Fatalf("round %d: %d written, %v", round, n, err)
		}
		var last time.Time
		for i, st := range stamps {
			switch {
			case !ds[i].Stamp && (st.Kernel || st.Missed):
				t.Fatalf("round %d: datagram %d asked for no stamp and has %+v", round, i, st)
			case ds[i].Stamp && (!st.Kernel || st.Missed):
				t.Fatalf("round %d: datagram %d has no stamp: %+v", round, i, st)
			case ds[i].Stamp && (st.Time.Before(before) || st.Time.After(after) || st.Time.Before(last)):
				t.Fatalf("round %d: datagram %d stamped %v, outside [%v, %v] or before the one before (%v)", round, i, st.Time, before, after, last)
			}
			if st.Kernel {
				last = st.Time
			}
		}
		if st, err := tx.SendStamped(rx.LocalAddr(), []byte("one"), nil); err != nil || !st.Kernel || st.Time.Before(last) {
			t.Fatalf("round %d: stamped send after the batch: %+v, %v", round, st, err)
		}
	}
	if queued := queuedTxStamps(tx.sock.rc); queued != 0 {
		t.Fatalf("%d transmit stamps left queued", queued)
	}
	if n, err := tx.WriteBatchStamped(ds, stamps[:1]); err == nil || n != 0 {
		t.Errorf("stamps of the wrong length: %d, %v", n, err)
	}
	for range 3 * (len(ds) + 1) {
		select {
		case <-rx.Packets():
		case <-time.After(hangGuard):
			t.Fatal("a datagram did not arrive")
		}
	}
}
