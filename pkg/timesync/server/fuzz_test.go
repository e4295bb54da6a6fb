package server

import (
	"encoding/hex"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/wire"
)

// FuzzStepDatagram feeds arbitrary packets from arbitrary sources to a
// server with keys, a local stratum and a tight rate limit: it must never
// panic, never send more than one datagram per packet, never answer with
// more bytes than it was sent, and only ever answer mode 4.
func FuzzStepDatagram(f *testing.F) {
	k, err := wire.ParseChronyKeys([]byte(chronyKeys))
	if err != nil {
		f.Fatal(err)
	}
	seed := func(b []byte) { f.Add(b, uint32(0x0a4d0002), uint16(123), int64(0)) }
	seed(request(4, wire.ModeClient))
	seed(request(3, wire.ModeClient))
	seed(request(4, wire.ModeControl))
	seed(wire.AppendNTPMAC(request(4, wire.ModeClient), k[0]))
	seed(wire.AppendNTPMAC(request(3, wire.ModeClient), k[1]))
	seed(append(request(4, wire.ModeClient), 0, 0, 0, 0))
	seed(append(request(4, wire.ModeClient), make([]byte, 28)...))
	xl := wire.NTPPacket{Version: 4, Mode: wire.ModeClient, Origin: 0xeead2d9000000001, Receive: 7, Transmit: t1}
	if b, err := xl.AppendBinary(nil); err == nil {
		seed(b) // interleaved form
	}
	// Golden vectors of package wire (captured from and checked against
	// chrony and ntpdig).
	for _, name := range []string{"ntp_client_request.hex", "ntp_reply_md5.hex", "ntp_reply_sha256_v3.hex"} {
		b, err := os.ReadFile("../../wire/testdata/" + name)
		if err != nil {
			f.Fatal(err)
		}
		var digits strings.Builder
		for _, line := range strings.Split(string(b), "\n") {
			line, _, _ = strings.Cut(line, "#")
			digits.WriteString(strings.Join(strings.Fields(line), ""))
		}
		raw, err := hex.DecodeString(digits.String())
		if err != nil {
			f.Fatalf("%s: %v", name, err)
		}
		seed(raw)
	}
	s, err := New(Config{LocalStratum: 8, Keys: k, RateLimit: RateLimit{Interval: time.Second, Burst: 2, MaxClients: 16}})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte, ip uint32, port uint16, at int64) {
		addr := netip.AddrPortFrom(netip.AddrFrom4([4]byte{byte(ip >> 24), byte(ip >> 16), byte(ip >> 8), byte(ip)}), port)
		now := t0.Add(time.Duration(at))
		in := append([]byte(nil), data...)
		err := s.StepDatagram(core.Datagram{Addr: addr, Data: in, Time: now})
		out := s.Ready().Datagrams
		if len(out) > 1 || (err != nil && len(out) != 0) {
			t.Fatalf("%d datagrams, err %v", len(out), err)
		}
		for _, d := range out {
			if len(d.Data) > len(data) {
				t.Fatalf("answered %d bytes with %d", len(data), len(d.Data))
			}
			if len(d.Data) < wire.NTPHeaderLen || d.Data[0]&7 != wire.ModeServer || d.Addr != addr {
				t.Fatalf("bad reply %x to %v", d.Data, d.Addr)
			}
			if d.TxStamp {
				// Interleaved mode: the driver reports when it left.
				s.AnswerSent(core.Datagram{Addr: d.Addr, Data: d.Data, Time: now.Add(time.Duration(port)), Local: true})
			}
		}
		if string(in) != string(data) {
			t.Fatal("StepDatagram modified its input")
		}
		s.Tick(now)
		if n := len(s.lim.table); n > 16 {
			t.Fatalf("rate-limit table grew to %d", n)
		}
		if n := len(s.xl.index); n > InterleavedStamps {
			t.Fatalf("interleaved table grew to %d", n)
		}
	})
}
