package sim

import (
	"fmt"

	"github.com/synclab/synclab/pkg/core"
)

// Hint hands node to, at the current virtual instant, the transport's hint
// that member about's port closed (node.Node.Hint), as a daemon's
// transport reports its link to a member closed or reset, or a connection
// to it refused, and carries out what the core wants done. Nothing checks
// that it is true: a hint about a live member is a forged TCP reset or
// ICMP error (the attack tests), or a link that closed for a reason of its
// own. A crashed member's hint comes to every member with a link to it
// about a link delay after the crash (the kernel's FIN): a test says when
// (Crash does not send it, so that the tests of timeouts keep timing
// silence alone).
func (s *Sim) Hint(to, about uint32, cause core.HintCause) error {
	s.Start()
	n := s.mustNode(to)
	if !n.up || n.paused {
		return fmt.Errorf("%w: %d", ErrNotRunning, to)
	}
	if _, err := n.node.Hint(s.mustNode(about).addr, cause, n.clk.FromKernel(s.Now())); err != nil {
		return err
	}
	s.simEvent(to, "sim.hint", fmt.Sprintf("node %d: member %d's port closed (%v)", to, about, cause), "member", about, "cause", cause.String())
	s.drain(n)
	return nil
}
