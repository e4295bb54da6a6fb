package wire_test

import (
	"fmt"
	"time"

	"github.com/synclab/synclab/pkg/wire"
)

// A heartbeat from member 2 to the cluster "lab", built, timestamped and
// sealed by the sender, then decoded and validated by member 5.
func Example() {
	key := wire.Key{ID: 1, Secret: []byte("0123456789abcdef0123456789abcdef")}
	cluster := wire.ClusterID("lab")

	// Sender.
	payload, _ := wire.Heartbeat{Interval: 100, Alive: 3}.AppendBinary(nil)
	out := wire.Frame{
		Header: wire.Header{
			Kind:    wire.KindHeartbeat,
			Cluster: cluster,
			Sender:  2,
			Seq:     3<<32 | 1, // incarnation 3, first frame
			Lamport: 42,
		},
		Payload: payload,
	}
	b, err := out.AppendBinary(make([]byte, 0, wire.HeaderLen+len(payload)+wire.AuthTrailerLen))
	if err != nil {
		panic(err)
	}
	sent := time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC) // clock.Now() in a daemon
	wire.PatchXmt(b, wire.NTPTimeFromTime(sent))
	b = wire.Seal(b, key)

	// Receiver.
	v := wire.NewValidator(cluster, 5, []wire.Key{key})
	var in wire.Frame
	if err := in.UnmarshalBinary(b); err != nil {
		fmt.Println("drop:", wire.Reason(err))
		return
	}
	if err := v.Validate(&in, b); err != nil {
		fmt.Println("drop:", wire.Reason(err))
		return
	}
	var hb wire.Heartbeat
	if err := hb.UnmarshalBinary(in.Payload); err != nil {
		fmt.Println("drop:", wire.Reason(err))
		return
	}
	fmt.Printf("%d bytes, %v from %d, sent %v: every %d ms, %d alive\n",
		len(b), in.Kind, in.Sender, in.Xmt.Time().Format(time.RFC3339), hb.Interval, hb.Alive)

	// The same bytes again are a replay.
	fmt.Println("again:", wire.Reason(v.Validate(&in, b)))
	// Output:
	// 80 bytes, heartbeat from 2, sent 2026-11-22T08:00:00Z: every 100 ms, 3 alive
	// again: replay
}

// Checking an NTP server's authenticated reply with keys shared with chrony.
func ExampleVerifyNTPMAC() {
	keys, err := wire.ParseChronyKeys([]byte("# chrony.keys\n7 SHA1 HEX:00112233445566778899AABBCCDDEEFF00112233\n"))
	if err != nil {
		panic(err)
	}
	reply := wire.NTPPacket{Version: 4, Mode: wire.ModeServer, Stratum: 2}
	b, _ := reply.AppendBinary(nil)
	b = wire.AppendNTPMAC(b, keys[0]) // what the server does

	pkt, keyID, digest, err := wire.SplitNTPMAC(b)
	if err != nil {
		fmt.Println(wire.Reason(err))
		return
	}
	fmt.Println(len(b), keyID, len(digest), wire.VerifyNTPMAC(pkt, keyID, digest, keys))
	b[1] = 1 // stratum tampered with in flight
	fmt.Println(wire.Reason(wire.VerifyNTPMAC(pkt, keyID, digest, keys)))
	// Output:
	// 72 7 20 <nil>
	// ntp_bad_mac
}

func ExampleNTPTime_Sub() {
	t1 := wire.NTPTimeFromTime(time.Date(2036, 2, 7, 6, 28, 15, 0, time.UTC)) // end of era 0
	t2 := wire.NTPTimeFromTime(time.Date(2036, 2, 7, 6, 28, 17, 0, time.UTC)) // era 1
	fmt.Printf("%#x %#x %v %v\n", uint64(t1), uint64(t2), t2.Sub(t1), t2.Time())
	// Output: 0xffffffff00000000 0x100000000 2s 2036-02-07 06:28:17 +0000 UTC
}
