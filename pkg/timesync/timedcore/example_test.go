package timedcore_test

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/liveness"
	"github.com/synclab/synclab/pkg/timesync/server"
	"github.com/synclab/synclab/pkg/timesync/timedcore"
	"github.com/synclab/synclab/pkg/wire"
)

// timed with --serve: the liveness detector for the members and the NTP
// server in one core.
func Example() {
	live, err := liveness.New(core.Env{ID: 1, Members: []uint32{1, 2}}, liveness.DefaultLANConfig())
	if err != nil {
		panic(err)
	}
	srv, err := server.New(server.Config{LocalStratum: 8})
	if err != nil {
		panic(err)
	}
	c, err := timedcore.New(timedcore.Config{Cluster: live, Server: srv})
	if err != nil {
		panic(err)
	}

	req := wire.NTPPacket{Version: 4, Mode: wire.ModeClient, Transmit: 42}
	b, _ := req.AppendBinary(nil)
	now := time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)
	if err := c.StepDatagram(core.Datagram{Addr: netip.MustParseAddrPort("10.77.0.9:123"), Data: b, Time: now}); err != nil {
		panic(err)
	}
	for _, d := range c.Ready().Datagrams {
		var p wire.NTPPacket
		_ = p.UnmarshalBinary(d.Data)
		fmt.Printf("reply to %v: mode %d stratum %d\n", d.Addr, p.Mode, p.Stratum)
	}
	fmt.Println("requests served:", c.Status().(timedcore.Status).Server.Replies)
	// Output:
	// reply to 10.77.0.9:123: mode 4 stratum 8
	// requests served: 1
}
