package server_test

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/timesync/server"
	"github.com/synclab/synclab/pkg/wire"
)

// A lab master without an upstream serves its own clock at stratum 8, like
// chrony's `local stratum 8`.
func Example() {
	srv, err := server.New(server.Config{LocalStratum: 8})
	if err != nil {
		panic(err)
	}
	client := netip.MustParseAddrPort("10.77.0.2:40000")
	sent := time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)
	req := wire.NTPPacket{Version: 4, Mode: wire.ModeClient, Transmit: wire.NTPTimeFromTime(sent)}
	b, _ := req.AppendBinary(nil)

	// The daemon steps the request with its kernel receive time...
	received := sent.Add(150 * time.Microsecond)
	if err := srv.StepDatagram(core.Datagram{Addr: client, Data: b, Time: received}); err != nil {
		panic(err)
	}
	// ...and writes the reply, patching the transmit time in.
	for _, d := range srv.Ready().Datagrams {
		var p wire.NTPPacket
		_ = p.UnmarshalBinary(d.Data)
		fmt.Printf("to %v: mode %d, stratum %d, leap %d, refid %s\n", d.Addr, p.Mode, p.Stratum, p.Leap,
			server.RefIDString(p.Stratum, p.ReferenceID))
		fmt.Printf("origin = request's transmit: %v; receive: %v; patch transmit: %v\n",
			p.Origin == req.Transmit, p.Receive.Time().Sub(sent), d.NTPStamp)
	}
	// A control query (ntpq, mode 6) gets nothing.
	ctl := wire.NTPPacket{Version: 2, Mode: wire.ModeControl}
	b, _ = ctl.AppendBinary(nil)
	fmt.Println(srv.StepDatagram(core.Datagram{Addr: client, Data: b, Time: received}))
	// Output:
	// to 10.77.0.2:40000: mode 4, stratum 8, leap 0, refid LOCL
	// origin = request's transmit: true; receive: 150µs; patch transmit: true
	// server: not a client request: mode 6 (mode_control)
}
