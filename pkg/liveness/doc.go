// Package liveness is a heartbeat failure detector: the first core every
// synclab daemon runs, and the one they keep running underneath their own
// protocol so that `X status` always says which members are alive.
//
// It is a sans-IO core (pkg/core). Every member broadcasts a heartbeat
// (wire.KindHeartbeat, payload wire.Heartbeat: its interval in ms and how
// many members it believes alive) every HeartbeatTicks ticks. A member not
// heard for SuspectTicks ticks is suspected; a heartbeat makes it alive
// again, and the recovery is counted as a flap:
//
//	           heartbeat                       heartbeat
//	unknown ---------------> alive <------------------------+
//	   |                       |                             |
//	   | SuspectTicks          | SuspectTicks without one    |
//	   | without one           v                             |
//	   +-----------------> suspect --------------------------+
//	                                   (flaps++)
//
// Each transition into alive reports a "member_up" event and each into
// suspect a "member_down" event, with Args "member", ID first. The first
// heartbeat leaves after a random phase drawn from Config.Rand, so hosts
// booted together do not send in step.
//
// The detector is a perfect failure detector only in a synchronous network.
// On a real LAN it is eventually accurate: with SuspectTicks = 5 x
// HeartbeatTicks, a live member is wrongly suspected only if four
// heartbeats in a row are lost or delayed by more than four intervals; a
// crashed member is suspected by every live one within SuspectTicks ticks
// plus one network delay of its last heartbeat.
//
// Use:
//
//	cfg := liveness.DefaultLANConfig()
//	cfg.ID, cfg.Members, cfg.Rand = 2, []uint32{1, 2, 3}, rnd
//	c, err := liveness.New(cfg)
//	// driver loop (internal/daemon on a host, internal/sim in tests):
//	c.Tick(now)              // every TickInterval
//	c.Step(msg)              // every heartbeat received
//	rd := c.Ready()          // heartbeats to broadcast, events to log
//
// c.Alive(id) and c.StatusView() give the verdicts; Status() is what the
// control API serves. The detector keeps no durable state: after a restart it
// relearns the cluster within SuspectTicks.
package liveness
