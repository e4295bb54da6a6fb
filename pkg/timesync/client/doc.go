// Package client is timed's NTP client and symmetric-peer core: a sans-IO
// state machine (core.Core) that polls NTP servers (mode 3) and symmetric
// peers (mode 1), answers its peers' polls (mode 2), and disciplines the
// local clock from what they say. It wires the pure algorithms of
// pkg/timesync/ntp (on-wire checks, clock filter, poll control, selection)
// to the discipline of pkg/timesync/servo, and does no I/O: packets and
// their timestamps arrive as data, adjustments and packets leave in Ready.
//
// # Walk-through
//
// The driver (internal/daemon on a host, internal/sim in tests) builds the
// client, restores the frequency saved by the previous run, and then feeds
// it ticks and packets:
//
//	cfg := client.DefaultLANConfig()
//	cfg.Servers = []netip.AddrPort{netip.MustParseAddrPort("10.77.0.1:123")}
//	cfg.Rand = rand.New(rand.NewPCG(seed1, seed2))
//	c, err := client.New(cfg)
//	...
//	if saved != nil {
//		err = c.Restore(saved) // ErrState: log it and go on without
//	}
//	timer := time.NewTimer(10 * time.Millisecond) // the first tick
//	for {
//		select {
//		case <-timer.C:
//			c.Tick(clk.Now())
//		case pkt := <-ntpSocket:
//			c.StepDatagram(core.Datagram{Addr: pkt.From, Data: pkt.Data, Time: pkt.KernelRxTime})
//		}
//		rd := c.Ready()
//		// 1. persist rd.State atomically (the frequency, ppm)
//		// 2. clock.Apply each of rd.Adjustments, then tell the client
//		//    when the clock took them: c.Adjusted(clk.Now())
//		// 3. for each of rd.Datagrams (all NTPStamp): patch the transmit
//		//    timestamp (bytes 40-47) with the local clock right before
//		//    the write, then report what was written:
//		//    c.StepDatagram(core.Datagram{Addr: d.Addr, Data: written, Time: xmt, Local: true})
//		// 4. log and count rd.Events
//		// 5. sleep until the client needs Tick again (core.Scheduler):
//		timer.Reset(c.Deadline().Sub(clk.Now())) // (capped, and at once if due)
//	}
//
// What happens inside, per source and then across sources:
//
//	Tick ──► poll due? ──► Association.Request ──► Datagram{NTPStamp} ──► wire
//	          (Poller: burst, 2^poll s, reach; RATE raises the floor;
//	           DENY/RSTR stop polling)
//	                    Sent report ──► Association.Sent (exact T1)
//	wire ──► StepDatagram ──► Association.Receive (on-wire checks, §8)
//	          ──► Sample, offset − servo.Pending(T4) ──► Filter.Add (§10)
//	          new estimate: mark for selection
//	next Tick ──► MakeCandidate per source (≥ MinSamples samples)
//	          ──► Select (§11.2: falsetickers, clustering, combining)
//	          ──► system peer's estimate new? servo.Update(now, Θ, Distance)
//	          ──► Ready.Adjustments (slew/step/frequency/sync)
//	          ──► Filter.Shift(Correction) on every source; Poller.Update
//	          ──► NextSystem: stratum, root delay/dispersion we advertise
//
// Selection and the servo run at the tick after a new estimate, not at the
// packet: servo.Update needs "now" as the clock reads when its slew is
// applied, which only a tick provides (a packet brings its receive stamp,
// which is earlier). The cost is at most one tick of latency.
//
// # Rules that keep the error bound truthful
//
//   - A source is a selection candidate only once its filter holds
//     MinSamples samples (default 5): before that its root distance is
//     dominated by the empty stages (about 0.94 s with 4 samples), wide
//     enough for a server a second off to pass for a truechimer.
//   - Selection waits until a majority of the sources that answer are
//     candidates: one early candidate of three could be the falseticker.
//   - The clock is never stepped backwards (servo); a forward step is
//     allowed only in the first updates and only if StepThreshold is set.
//     An answer to a request sent before a step is dropped (ErrClockStepped).
//   - The root distance of every candidate grows with the servo's
//     frequency uncertainty (MakeCandidate's localPPM), so estimates made
//     before the drift is known are not trusted beyond what they can show.
//   - A candidate's root delay and dispersion, and the system variables
//     served from it, are the larger of the chosen sample's packet's and
//     the newest packet's (ntp.Estimate.Root): the filter may pick an older
//     sample, taken while the server said it was less sure (every path
//     keeps the header with its sample: client, symmetric, interleaved,
//     whose exchange spans two answers, broadcast and Cristian).
//   - What we serve downstream (System) is never tighter than our own
//     bound: the root dispersion is raised so that root delay / 2 + root
//     dispersion reaches the far side of the servo's bound. RFC 5905's
//     accumulation assumes a disciplined clock (PHI, 15 ppm); before the
//     frequency is learned the servo's bound, which grows at PHI plus the
//     frequency error and holds the offset not yet slewed out, can be
//     milliseconds wider (simulated, a host 100-400 ppm off served 2.099 ms
//     while 2.101 ms off, its own bound ±6.1 ms).
//
// # Interleaved mode
//
// With Config.Interleaved the servers are polled in chrony's interleaved
// client/server mode (ntp.Association.EnableInterleaved): a server that
// speaks it (chronyd) answers with the kernel's transmit stamp of its
// previous answer, which completes the previous exchange; such a sample's
// Time and Sent are that exchange's T4 and T1, and the slew and step checks
// above use them. A server that answers in basic mode is used as such.
// Events: interleaved (a source answered in interleaved mode, the first
// time or after basic answers) and at WARN interleaved_basic (4 basic
// answers in a row to interleaved requests). SourceStatus.Interleaved
// says which, with the counts of each kind of answer.
//
// # Symmetric peers
//
// A configured peer has one association, in symmetric active mode (RFC 5905
// sections 8 and 9): we send it mode-1 packets at our own poll interval
// (the shorter of ours and the one it advertises, never below MinPoll),
// each carrying our system state and, as origin and receive timestamps,
// its latest packet and when it came. Its packets, mode 1 from a peer that
// polls us too (chronyd, ntpd) or mode 2 from an ntpd-style passive
// association, give a sample when they answer our latest packet, once per
// packet of ours; packets that crossed ours (counted as peer_crossed) give
// none, but their timestamps go back in our next packet, which answers
// them. Nothing is sent in answer to a peer's packet: the peer's sample
// comes from our next poll, as the RFC has it. Mode-1 packets from
// addresses not configured are dropped and counted (stranger_peer): nobody
// can make this host serve time as a peer by asking. A peer is polled from
// and reached at a fixed port (the daemon's NTP socket: 123, or --serve's).
// Two hosts that list each other synchronise each other; a host that
// should anchor them sets LocalStratum (chrony's "local stratum N"), and
// sources at or above that stratum are never selected by it. Address
// enables loop detection (a source whose reference ID is our address
// synchronises to us).
//
// # Broadcast client
//
// With Config.Broadcast the client also follows RFC 5905 broadcast servers
// (mode 5; BroadcastConfig, broadcast.go). A broadcast that passes the
// checks a server's answer gets (version, leap, stratum, root distance, a
// non-zero transmit time), is signed with one of Broadcast.Keys (unless
// Insecure) and is newer than its sender's last makes its sender a source
// (at most MaxBroadcasters), mode "broadcast". Its packets are held until a
// calibration measured the delay: Calibration client requests to it (signed
// with its key), half before the broadcast expected next and half after,
// whose samples go into its filter like a server's; the delay is what that
// broadcast's T3 - T4 lacks to give the offset the exchanges measure at its
// arrival (the weighted line through them), as ntpd's broadcast client
// computes it. Then each broadcast is a sample with offset T3 + delay - T4,
// the calibration's smallest round trip as delay and the precisions as
// dispersion.
//
// A broadcast sample's own error is asymmetric, and is added to the
// source's root distance beside the filter (whose dispersion averages its
// register's and would halve it). The sample is off by δ - delay, δ what
// this broadcast took from the broadcaster's reading of T3 to our T4: its
// send path's lag, which varies with its load, and the wire. A packet can
// be late but never early relative to its true one-way delay, and never
// arrives before it is sent (δ ≥ 0): early, the sample is at most the
// calibrated delay too high, however late the calibration's broadcast
// left, and nothing after the calibration can show that (the servo
// follows the broadcasts, whose apparent delay then settles on the
// calibrated one). Late, nothing bounds it but what is seen: the
// calibration's error (Σ|c_i|·rtt_i/2 of the line through its exchanges)
// plus the most a broadcast came later than the calibrated delay since
// the calibration (its apparent delay: the lag's jitter). The error added
// is the larger side, the servo's bound being symmetric: at least the
// calibrated delay. JumpCount broadcasts
// in a row whose apparent delay (the calibrated one plus the servo's
// prediction minus the sample) is more than DelayJump off start a new
// calibration; so does Refine (the delay is then the median of the last
// five), and a calibration that ran while the clock slewed is repeated.
// Events: broadcaster_heard, broadcast_calibrated, broadcast_path_changed,
// and at WARN broadcast_silent (nothing followed for Timeout, or a
// broadcaster silent), broadcast_calibration_failed, broadcaster_reset (a
// broadcaster whose broadcasts went back in time, followed afresh).
//
// # State and status
//
// Ready.State carries the frequency correction and its error (a 17-byte
// record with a version byte, see state.go; timed keeps it as the "client"
// section of its state, see timedcore) when the servo has estimated it and
// it moved by StateMinChangePPM since the last save, at most once per
// StateInterval. Status (and Report) is the view of `timed status`: the
// tracking part (synchronised, stratum, system peer, offset, frequency,
// root distance, error bound [earliest, latest] at the last tick, with
// error_bound_ns) and one line per source (address, mode, stratum, reach in
// octal, poll, offset, delay, dispersion, jitter, verdict and why).
package client
