// Package l2switch is a user-space Ethernet switch for lab networks that
// need what the kernel bridge cannot give on machines without the netem
// qdisc: per-directed-link delay, jitter, loss, duplication and link-down.
//
// It forwards frames between network interfaces (in labnet, the switch-side
// ends of the hosts' veth pairs, left unbridged), learning source MAC
// addresses like a bridge and flooding broadcast, multicast and unknown
// destinations:
//
//	          +------------------------------ Switch ------------------------------+
//	port 1 -->| read (AF_PACKET, vnet hdr) -> learn src MAC -> pick egress ports   |
//	          |   per egress port j: Link[1][j]: down? loss? duplicate? delay      |
//	          |     delay 0  -> write to port j now                                |
//	          |     delay >0 -> queue by deadline -> transmit thread -> port j     |
//	          +--------------------------------------------------------------------+
//
// Two details make it usable for timing work. Frames are read and written
// with PACKET_VNET_HDR, so the checksum-offload state (CHECKSUM_PARTIAL)
// and TCP segmentation of veth frames cross the switch unchanged; without it
// every UDP datagram would arrive with an unfinished checksum and be
// dropped. Delayed frames are sent by one goroutine locked to an OS thread
// whose timer slack is 1 ns, sleeping in ppoll until shortly before each
// deadline and then spinning, because Go timers round sub-millisecond sleeps
// up to about a millisecond.
//
// Open must run on a thread inside the namespace that holds the interfaces
// (labnet does that with setns; the labswitch command is started with
// `ip netns exec`). Random draws come from a seeded source (Config.Seed).
//
//	sw, err := l2switch.Open([]string{"p1", "p2", "p3"}, l2switch.Config{Seed: 1})
//	...
//	sw.SetLink(1, 2, l2switch.Link{Delay: 2 * time.Millisecond, Jitter: 200 * time.Microsecond})
//	sw.SetLink(2, 1, l2switch.Link{Delay: 5 * time.Millisecond}) // asymmetric
//	sw.SetPortLoss(3, l2switch.PortLoss{Percent: 10})
//	st, _ := sw.Stats(1, 2)
//	sw.Close()
package l2switch
