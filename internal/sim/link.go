package sim

import (
	"fmt"
	"time"
)

// LinkConfig is the behaviour of one directed link (from one node to
// another). Asymmetric paths are two different directed configs.
//
// A packet's one-way delay is Delay plus a uniform draw in [0, Jitter]:
// Delay is the floor (propagation, serialisation), Jitter the queueing on
// top. Datagrams draw independently, so jitter larger than the gap between
// two sends reorders them; stream frames keep their order (a TCP
// connection) and are never lost or duplicated by the link, only by a reset
// (a crash at either end, or a partition cutting the link).
type LinkConfig struct {
	Delay  time.Duration // minimum one-way delay
	Jitter time.Duration // extra delay, uniform in [0, Jitter]
	// Loss is the probability that a datagram is dropped (0..1).
	Loss float64
	// Duplicate is the probability that a delivered datagram arrives a
	// second time, with its own delay (0..1).
	Duplicate float64
	// Retransmit is the probability that a stream frame's segment is lost
	// once and sent again by TCP after its retransmission timeout
	// (RetransmitTimeout, Linux's minimum RTO): the frame, and every frame
	// behind it on the connection, arrives that much later (0..1). What
	// loss on a link does to a TCP connection.
	Retransmit float64
	// RetransmitDelay is what such a retransmission costs; zero:
	// RetransmitTimeout. A lost SYN costs a new connection 1 s (Linux's
	// initial RTO), and a segment lost twice 600 ms: what a link that
	// loses 20% does to a connection opened for one election's messages.
	RetransmitDelay time.Duration
}

// RetransmitTimeout is the delay a retransmitted stream frame takes on top
// of its link's (LinkConfig.Retransmit): Linux's minimum RTO.
const RetransmitTimeout = 200 * time.Millisecond

// LANLink is the link profile used when Config.DefaultLink is left zero: a
// switched lab LAN, 100 us one way with 50 us of jitter, nothing lost.
func LANLink() LinkConfig {
	return LinkConfig{Delay: 100 * time.Microsecond, Jitter: 50 * time.Microsecond}
}

// MaxDelay is the largest one-way delay the link can produce.
func (c LinkConfig) MaxDelay() time.Duration { return c.Delay + c.Jitter }

func (c LinkConfig) validate() error {
	switch {
	case c.Delay < 0 || c.Jitter < 0:
		return fmt.Errorf("sim: negative link delay %v or jitter %v", c.Delay, c.Jitter)
	case c.Loss < 0 || c.Loss > 1:
		return fmt.Errorf("sim: link loss %v outside 0..1", c.Loss)
	case c.Duplicate < 0 || c.Duplicate > 1:
		return fmt.Errorf("sim: link duplication %v outside 0..1", c.Duplicate)
	case c.Retransmit < 0 || c.Retransmit > 1:
		return fmt.Errorf("sim: link retransmission %v outside 0..1", c.Retransmit)
	case c.RetransmitDelay < 0:
		return fmt.Errorf("sim: negative retransmission delay %v", c.RetransmitDelay)
	}
	return nil
}

// link is the state of one directed link.
type link struct {
	cfg    LinkConfig
	custom bool // set by SetLink: not replaced by SetDefaultLink
	cut    bool // partitioned: nothing passes
	// epoch counts the cuts: a stream frame sent before a cut is never
	// delivered after it, even if the link healed meanwhile (the TCP
	// connection it travelled on was reset).
	epoch uint64
	// lastStream is the arrival time of the last stream frame, so the next
	// one never overtakes it: the transport keeps a link's frames in order
	// across its reconnects too (a superseded connection's backlog is
	// dropped, never delivered late: internal/transport, Streams). What
	// it loses then, the frames in flight, the cuts model (epoch); a
	// paused receiver here keeps every stream frame, where the transport
	// loses those in flight once the sender's write times out.
	lastStream time.Duration
}

type linkKey struct{ from, to uint32 }

// linkFor returns the directed link from -> to, creating it with the
// default config.
func (s *Sim) linkFor(from, to uint32) *link {
	k := linkKey{from, to}
	l, ok := s.links[k]
	if !ok {
		l = &link{cfg: s.cfg.DefaultLink}
		s.links[k] = l
	}
	return l
}

// delay draws one packet's delay on l.
func (s *Sim) delay(l *link) time.Duration {
	d := l.cfg.Delay
	if l.cfg.Jitter > 0 {
		d += time.Duration(s.rnd.Int64N(int64(l.cfg.Jitter) + 1))
	}
	return d
}

// chance draws true with probability p (without consuming randomness when
// p is 0, so adding a lossless link does not perturb other draws).
func (s *Sim) chance(p float64) bool {
	if p <= 0 {
		return false
	}
	return s.rnd.Float64() < p
}

// SetLink sets the directed link from -> to. It does not heal a cut.
func (s *Sim) SetLink(from, to uint32, cfg LinkConfig) {
	if err := cfg.validate(); err != nil {
		panic(err)
	}
	l := s.linkFor(from, to)
	l.cfg, l.custom = cfg, true
}

// SetLinkBoth sets both directions between a and b.
func (s *Sim) SetLinkBoth(a, b uint32, cfg LinkConfig) {
	s.SetLink(a, b, cfg)
	s.SetLink(b, a, cfg)
}

// SetDefaultLink changes every link not set with SetLink, and the links
// created later.
func (s *Sim) SetDefaultLink(cfg LinkConfig) {
	if err := cfg.validate(); err != nil {
		panic(err)
	}
	s.cfg.DefaultLink = cfg
	for _, l := range s.links {
		if !l.custom {
			l.cfg = cfg
		}
	}
}

// Link returns the directed link's config.
func (s *Sim) Link(from, to uint32) LinkConfig { return s.linkFor(from, to).cfg }

// MaxDelay is the largest one-way delay of any link (the configured ones
// and the default), for bounds in oracles.
func (s *Sim) MaxDelay() time.Duration {
	m := s.cfg.DefaultLink.MaxDelay()
	for _, l := range s.links {
		m = max(m, l.cfg.MaxDelay())
	}
	return m
}

// Cut breaks the directed link from -> to until Heal: a one-way partition
// (from's packets to to are lost; to's packets to from still pass).
func (s *Sim) Cut(from, to uint32) {
	s.cut(from, to)
	s.simEvent(from, "sim.cut", fmt.Sprintf("link %d->%d cut", from, to), "to", to)
}

func (s *Sim) cut(from, to uint32) {
	l := s.linkFor(from, to)
	if !l.cut {
		l.cut = true
		l.epoch++
	}
}

// Partition cuts every link between a member of groupA and a member of
// groupB, both ways. Links inside each group are untouched. Partitions
// accumulate until Heal.
func (s *Sim) Partition(groupA, groupB []uint32) {
	for _, a := range groupA {
		for _, b := range groupB {
			if a == b {
				panic(fmt.Sprintf("sim: node %d is on both sides of a partition", a))
			}
			s.cut(a, b)
			s.cut(b, a)
		}
	}
	s.simEvent(0, "sim.partition", fmt.Sprintf("partition %v | %v", groupA, groupB), "a", groupA, "b", groupB)
}

// Isolate cuts every link to and from id.
func (s *Sim) Isolate(id uint32) {
	for _, o := range s.order {
		if o != id {
			s.cut(id, o)
			s.cut(o, id)
		}
	}
	s.simEvent(id, "sim.isolate", fmt.Sprintf("node %d isolated", id))
}

// Heal restores every cut link. Stream frames sent before a cut stay lost.
func (s *Sim) Heal() {
	for _, l := range s.links {
		l.cut = false
	}
	s.simEvent(0, "sim.heal", "all links healed")
}

// Connected reports whether the directed link from -> to passes packets.
func (s *Sim) Connected(from, to uint32) bool { return !s.linkFor(from, to).cut }
