package node

import (
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/synclab/synclab/pkg/core"
)

// ErrHintNotMember: a transport's hint names an address that is no other
// member's (counted "hint_not_member").
var ErrHintNotMember = errors.New("node: hint about an address that is no other member's")

// Hint hands the core a transport's hint that the member listening at addr
// closed its port (core.Hint): its TCP link closed or reset, a connection
// to it refused, an ICMP error for a datagram to it. The node counts it by
// cause (Stats.Hints), keeps the member's latest for status
// (PeerSeq.HintAt), and steps the core with it if it acts on hints
// (core.Hinter) and configuration agreement lets it run (else counted
// "hint_not_agreed"); the driver drains Ready after, as after a Receive. It
// returns the member named, or ErrHintNotMember (counted, the core not
// told).
func (n *Node) Hint(addr netip.AddrPort, cause core.HintCause, at time.Time) (uint32, error) {
	addr = netip.AddrPortFrom(addr.Addr().Unmap(), addr.Port())
	var member uint32
	for _, id := range n.others {
		if a := n.cfg.Members[id]; netip.AddrPortFrom(a.Addr().Unmap(), a.Port()) == addr {
			member = id
			break
		}
	}
	if member == 0 {
		n.stats.drop("hint_not_member")
		return 0, fmt.Errorf("%w: %v (%v)", ErrHintNotMember, addr, cause)
	}
	if n.stats.Hints == nil {
		n.stats.Hints = map[string]uint64{}
	}
	n.stats.Hints[cause.String()]++
	p := n.peers[member]
	if p == nil {
		p = &peer{}
		n.peers[member] = p
	}
	p.hints++
	p.hintCause, p.hintAt = cause, at
	if at.After(n.now) {
		n.now = at
	}
	// A core that configuration agreement holds back (starting, stepped
	// back) is not stepped, as Receive and Tick do not step it: it could
	// start an episode the member's refused frames could never cancel.
	if n.Standing() != StandingAgreed {
		n.stats.drop("hint_not_agreed")
		return member, nil
	}
	if h, ok := n.core.(core.Hinter); ok {
		n.coreRan = true
		h.Hint(core.Hint{Member: member, Cause: cause, Time: at})
	}
	return member, nil
}
