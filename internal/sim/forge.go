package sim

import (
	"encoding"
	"fmt"

	"github.com/synclab/synclab/internal/forge"
	"github.com/synclab/synclab/internal/node"
	"github.com/synclab/synclab/pkg/wire"
)

// Forge hands node to, at the current virtual instant, a frame of kind in
// member from's name, from from's address, with term, Lamport stamp
// lamport and payload p, unsealed, and a sequence number just above the
// newest to has taken from from: what a host on the LAN sends a cluster
// that runs without a key (internal/forge). It returns to's verdict (nil:
// taken), after carrying out what to's core then wants done.
func (s *Sim) Forge(from, to uint32, kind wire.Kind, term, lamport uint64, p encoding.BinaryAppender) error {
	n := s.mustNode(to)
	seq := n.node.Peer(from).Seq + 64
	b, err := forge.Frame(wire.Header{Kind: kind, Cluster: wire.ServiceClusterID("", s.cfg.Cluster), Sender: from, Receiver: to,
		Term: term, Seq: seq, Lamport: lamport}, p, nil)
	if err != nil {
		return err
	}
	s.Start()
	if !n.up || n.paused {
		return fmt.Errorf("%w: %d", ErrNotRunning, to)
	}
	rerr := n.node.Receive(node.Inbound{From: s.mustNode(from).addr, Data: b, Time: n.clk.Now()})
	s.drain(n)
	return rerr
}
