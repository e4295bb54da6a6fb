// Package liveness is failure detection for synclab's cores, in two layers.
//
// Detector is the mechanism every protocol embeds: it is told when a member
// showed a sign of life (Heard), suspects a member silent for its timeout
// (global or per member), says when it next needs to look (Deadline, for
// core.Scheduler), and reports up/down transitions with flap counts. It
// sends nothing: what counts as a sign of life is the protocol's business
// (bully's frames of the current term, any frame of a token ring member, a
// heartbeat). CheckTimeout is the one validation of protocol timeouts that
// bully, the token ring, the heartbeat core and Berkeley share: a duration
// is used as given, never rounded to a tick.
//
// Core is a heartbeat failure detector built on a Detector: a sans-IO core
// (pkg/core) that a daemon runs when it has no protocol of its own to run
// (internal/app.LivenessCore; timed runs it beside its NTP and Berkeley
// parts). electd and mutexd do not run it: their protocols detect failures
// with their own Detector. Every member broadcasts a heartbeat
// (wire.KindHeartbeat, payload wire.Heartbeat: its interval in ms and how
// many members it believes alive) every Config.Heartbeat. A member not heard
// for Config.SuspectAfter is suspected; a heartbeat makes it alive again,
// and the recovery is counted as a flap:
//
//	           heartbeat                       heartbeat
//	unknown ---------------> alive <------------------------+
//	   |                       |                             |
//	   | SuspectAfter          | SuspectAfter without one    |
//	   | without one           v                             |
//	   +-----------------> suspect --------------------------+
//	                                   (flaps++)
//
// With Config.Probe (QuietLANConfig, what timed's members run), heartbeats
// are sparse (every 300 ms) and a member that missed one is asked for one:
// from Heartbeat + Probe of silence, a heartbeat probe
// (wire.KindHeartbeatProbe, itself a sign of life) every Probe until the
// member answers with a heartbeat to the prober alone or its SuspectAfter
// passes. A crashed member is suspected as soon as without probes; the
// cluster's idle frames and wake-ups are a third of DefaultLANConfig's.
//
// Each transition into alive reports a "member_up" event and each into
// suspect a "member_down" event, with Args "member", ID first. The first
// heartbeat leaves after a random phase drawn from core.Env.Rand, so hosts
// booted together do not send in step.
//
// The detector is a perfect failure detector only in a synchronous network.
// On a real LAN it is eventually accurate: with SuspectAfter = 5 x
// Heartbeat, a live member is wrongly suspected only if four heartbeats in
// a row are lost or delayed by more than four intervals (with
// QuietLANConfig: its heartbeat and the answers to 19 probes lost, or the
// member silent for more than 200 ms, which on a host where every loop
// runs late is about 110 ms of lateness: the sender's and the prober's
// both eat into it); a crashed member is suspected by
// every live one within SuspectAfter plus one network delay of its last
// heartbeat, with or without probes.
//
// Use:
//
//	c, err := liveness.New(env, liveness.DefaultLANConfig())
//	// driver loop (internal/daemon on a host, internal/sim in tests):
//	c.Tick(now)              // when c.Deadline() comes (any time is correct)
//	c.Step(msg)              // every heartbeat received
//	rd := c.Ready()          // heartbeats to broadcast, events to log
//
// c.Alive(id) and c.StatusView() give the verdicts; Status() is what the
// control API serves. The detector keeps no durable state: after a restart it
// relearns the cluster within SuspectAfter.
package liveness
