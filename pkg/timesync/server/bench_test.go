package server

import (
	"net/netip"
	"testing"
	"time"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/wire"
)

// BenchmarkStepDatagram measures the core's cost per request: decode, rate
// limit (many clients, so the table is exercised), reply, drain.
func BenchmarkStepDatagram(b *testing.B) {
	for _, bc := range []struct {
		name string
		req  []byte
		keys bool
	}{
		{"plain", request(4, wire.ModeClient), false},
		{"md5", wire.AppendNTPMAC(request(4, wire.ModeClient), wire.NTPKey{ID: 1, Type: "MD5", Secret: []byte("0123456789abcdef")}), true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			cfg := Config{LocalStratum: 8}
			if bc.keys {
				cfg.Keys = []wire.NTPKey{{ID: 1, Type: "MD5", Secret: []byte("0123456789abcdef")}}
			}
			s, err := New(cfg)
			if err != nil {
				b.Fatal(err)
			}
			now := t0
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				addr := netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 77, byte(i >> 8), byte(i)}), 123)
				now = now.Add(time.Microsecond)
				if err := s.StepDatagram(core.Datagram{Addr: addr, Data: bc.req, Time: now}); err != nil {
					b.Fatal(err)
				}
				if len(s.Ready().Datagrams) != 1 {
					b.Fatal("no reply")
				}
			}
		})
	}
}
