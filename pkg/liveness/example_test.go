package liveness_test

import (
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/liveness"
	"github.com/synclab/synclab/pkg/wire"
)

// A detector on member 1 of {1, 2}: member 2's heartbeat makes it alive,
// and its silence makes it suspect SuspectAfter later. The driver ticks the
// core when its Deadline comes.
func Example() {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	cfg := liveness.Config{Heartbeat: 20 * time.Millisecond, SuspectAfter: 60 * time.Millisecond}
	c, err := liveness.New(core.Env{ID: 1, Members: []uint32{1, 2}, Now: now}, cfg)
	if err != nil {
		panic(err)
	}
	// What a driver does after every Tick and Step: act on Ready.
	drain := func() {
		rd := c.Ready()
		for _, m := range rd.Messages {
			fmt.Println("send", m.Kind, "to broadcast:", m.To == core.Broadcast)
		}
		for _, e := range rd.Events {
			fmt.Println(e.Name, e.Args[1])
		}
	}
	tick := func() {
		now = c.Deadline()
		c.Tick(now)
		drain()
	}

	tick()
	hb := wire.Heartbeat{Interval: 20, Alive: 2}
	payload, _ := hb.AppendBinary(nil)
	if err := c.Step(core.Message{From: 2, Kind: wire.KindHeartbeat, Payload: payload, Time: now}); err != nil {
		panic(err)
	}
	drain()
	for range 3 {
		tick()
	}
	fmt.Println("member 2:", c.State(2))
	// Output:
	// send heartbeat to broadcast: true
	// member_up 2
	// send heartbeat to broadcast: true
	// send heartbeat to broadcast: true
	// send heartbeat to broadcast: true
	// member_down 2
	// member 2: suspect
}

// The status table `X status` prints, from the JSON the control API serves.
func ExampleStatus_WriteTable() {
	js := `{"id":1,"interval_ms":100,"suspect_after_ns":500000000,
	  "now":"2026-03-01T12:00:12.1Z","heartbeats_sent":121,"alive":2,"members":[
	  {"id":2,"state":"alive","alive":true,"last_heard":"2026-03-01T12:00:12.06Z","heard":120,
	   "since":"2026-03-01T12:00:00.05Z","flaps":0,"their_alive":2,"their_interval_ms":100},
	  {"id":3,"state":"suspect","alive":false,"last_heard":"2026-03-01T12:00:10.89Z","heard":57,
	   "since":"2026-03-01T12:00:11.39Z","flaps":1,"their_alive":1,"their_interval_ms":100},
	  {"id":4,"state":"suspect","alive":false,"heard":0,"since":"2026-03-01T12:00:00.5Z"}]}`
	var st liveness.Status
	if err := json.Unmarshal([]byte(js), &st); err != nil {
		panic(err)
	}
	if err := st.WriteTable(os.Stdout); err != nil {
		panic(err)
	}
	// Output:
	// member 1: 2 of 4 alive, heartbeat every 100ms, suspect after 500ms, 121 sent
	// ID  STATE    LAST HEARD  HEARD  FLAPS  SEES  SINCE
	// 2   alive    40ms ago    120    0      2     12.05s ago
	// 3   suspect  1.21s ago   57     1      1     710ms ago
	// 4   suspect  -           0      0      0     11.6s ago
}
