package l2switch

import (
	"errors"
	"fmt"
	"time"
)

// Link is how frames travel over one directed link, from one port to another.
// The zero Link is a perfect cable: no delay, no loss.
type Link struct {
	// Delay is added to every frame on top of the switch's own latency
	// (a few tens of microseconds).
	Delay time.Duration
	// Jitter spreads the delay uniformly over [Delay-Jitter, Delay+Jitter],
	// clamped at zero.
	Jitter time.Duration
	// Reorder lets a frame overtake an earlier one when jitter draws it a
	// shorter delay. Off, a frame is held until the previous one on the link
	// has gone, as on a real cable, and the delay distribution gets a longer
	// tail under load.
	Reorder bool
	// Loss is the percentage (0-100) of IPv4 frames dropped at random. ARP
	// is spared so that hosts keep resolving each other.
	Loss float64
	// Duplicate is the percentage (0-100) of IPv4 frames sent twice.
	Duplicate float64
	// Down drops every frame, ARP included: a pulled cable.
	Down bool
}

// Validate checks the ranges of a Link.
func (l Link) Validate() error {
	switch {
	case l.Delay < 0 || l.Jitter < 0:
		return fmt.Errorf("%w: negative delay %v or jitter %v", ErrBadLink, l.Delay, l.Jitter)
	case l.Delay > MaxDelay || l.Jitter > MaxDelay:
		return fmt.Errorf("%w: delay %v or jitter %v above %v", ErrBadLink, l.Delay, l.Jitter, MaxDelay)
	case !(l.Loss >= 0 && l.Loss <= 100) || !(l.Duplicate >= 0 && l.Duplicate <= 100):
		return fmt.Errorf("%w: loss %v%% or duplicate %v%% outside 0-100", ErrBadLink, l.Loss, l.Duplicate)
	}
	return nil
}

// MaxDelay bounds Delay and Jitter: frames wait in memory, and a lab link
// slower than this is a mistake rather than an emulation.
const MaxDelay = 10 * time.Second

// PortLoss drops frames to and from one port (one host) at random, each
// direction drawn on its own, like the nftables loss rule of a bridged lab.
type PortLoss struct {
	Percent float64 // 0-100
	AllIP   bool    // every IPv4 frame; false: UDP only
}

// Stats counts what happened on one directed link since the switch started.
type Stats struct {
	Forwarded  uint64 // frames handed to the egress port (duplicates included)
	Dropped    uint64 // frames dropped by Down, Loss or PortLoss
	Duplicated uint64 // extra copies sent
	TxErrors   uint64 // frames the egress port refused (full queue)
}

var (
	// ErrBadLink is returned for link parameters out of range.
	ErrBadLink = errors.New("l2switch: bad link parameters")
	// ErrBadPort is returned for a port number the switch does not have.
	ErrBadPort = errors.New("l2switch: no such port")
	// ErrClosed is returned after Close.
	ErrClosed = errors.New("l2switch: switch closed")
)
