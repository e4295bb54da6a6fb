// Package ntp holds the pure algorithms of NTPv4 (RFC 5905) and of
// Cristian's algorithm that timed runs: no sockets, no goroutines, no
// time.Now, no logging. Time arrives as data (timestamps taken by the
// transport, as close to the wire as the kernel allows) and decisions leave
// as values, so the same code runs under the daemon and the simulator.
//
// The pieces, in the order a packet meets them:
//
//	packet ──► Association.Receive ──► Sample ──► Filter.Add ──► Estimate
//	           on-wire checks (§8)     θ δ ε t    clock filter (§10)  θ δ ε ψ
//	                                                                  │
//	          Poller (poll interval, burst, reach)  ◄──────────────── │
//	                                                                  ▼
//	   Candidate per source (θ, ψ, λ = RootDistance) ──► Select (§11.2)
//	     fitness ─► intersection (falsetickers) ─► cluster (outliers)
//	     ─► combine: system offset Θ, system jitter, system peer
//	                                                                  │
//	                                            servo.Servo.Update ◄──┘
//
// A client association, per source:
//
//	a, _ := ntp.NewAssociation(wire.ModeClient, ntp.Precision(-20))
//	f := ntp.NewFilter(ntp.Precision(-20))
//	p, _ := ntp.NewPoller(ntp.PollConfig{})
//
//	pkt := a.Request(now, p.Poll(), sys)  // encode and send; wait p.Sent()
//	...
//	s, err := a.Receive(&reply, rxTime)   // a typed error says why not
//	if err == nil {
//		p.Received()
//		s.Offset -= disc.Pending(s.Time)    // disc: the servo.Servo (slew in progress)
//		if f.Add(s, ntp.PollInterval(p.Poll())) == ntp.FilterUpdated {
//			est, _ := f.Estimate()
//			// est and the source's root delay/dispersion make a Candidate
//		}
//	}
//
// Then, across sources, MakeCandidate turns each source's estimate into a
// Candidate, Select gives the system offset to hand to the servo, and
// NextSystem the stratum, root delay and root dispersion to advertise. Both
// take the source's root delay and dispersion as the larger of the newest
// packet's and those of the packet that carried the chosen sample
// (Sample.Header, Estimate.Root): the source's error when that sample was
// taken is bounded only by what it said then.
// Every correction the servo commands must be reported back to every Filter
// with Shift, so that stored samples stay comparable with new ones.
//
// Serving is one function: ServerReply answers a mode-3 request (KissReply
// refuses one, e.g. RATE), leaving the transmit timestamp for the transport
// to stamp just before the write.
//
// Cristian's algorithm (the course notes' "request-driven" time service)
// is a burst of request/response rounds: Cristian keeps the minimum
// round-trip reply and estimates server time + RTT/2 with accuracy
// ±(RTT/2 - min).
//
// Departures from RFC 5905, each for a reason given where it is made:
// root distances are not floored at MINDISP (5 ms would swamp a LAN's
// bounds); the spike suppressor waits for a jitter computed from at least
// four samples; poll exponents go down to -4 for LAN tests; the
// intersection algorithm is ntpd's endpoint-only form (the RFC's
// midpoint-counting form can fail to find a majority that exists).
package ntp
