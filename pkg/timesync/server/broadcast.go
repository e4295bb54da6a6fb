package server

import (
	"fmt"
	"math"
	"net/netip"
	"time"

	"github.com/synclab/synclab/pkg/timesync/ntp"
	"github.com/synclab/synclab/pkg/wire"
)

// Broadcast defaults and limits (BroadcastConfig).
const (
	// DefaultBroadcastInterval is the time between two broadcasts: 16 s,
	// four times a LAN client's poll at start, a quarter of its longest.
	// ntpd's broadcast default is 64 s; a lab's clients follow faster.
	DefaultBroadcastInterval = 16 * time.Second
	// MinBroadcastInterval and MaxBroadcastInterval bound it: 1 s to
	// 2^17 s, the range chrony's broadcast directive accepts (its
	// interval is clamped to 1..2^MAX_POLL s).
	MinBroadcastInterval = time.Second
	MaxBroadcastInterval = 1 << ntp.MaxPollLimit * time.Second
)

// BroadcastConfig makes the server an RFC 5905 broadcast server: every
// Interval it sends a mode-5 packet (its system variables, a zero origin
// and receive timestamp, the transmit time written at the write) to Addr,
// a broadcast address or a multicast group, as chronyd's `broadcast
// INTERVAL ADDRESS [PORT]` directive does. The server answers its
// broadcast clients' calibration requests as it answers any client.
type BroadcastConfig struct {
	// Addr is where the packets go (a subnet broadcast address or an
	// IPv4 multicast group, with the clients' port, normally 123). The
	// zero AddrPort sends none.
	Addr netip.AddrPort
	// Interval is the time between packets (default 16 s, 1 s to 2^17 s).
	Interval time.Duration
	// KeyID is the key of Config.Keys that signs every packet. RFC 8633
	// deprecates unauthenticated broadcast: zero is refused unless
	// Insecure is set.
	KeyID uint32
	// Insecure sends the packets unsigned (chronyd's broadcasts are):
	// any host on the LAN can then forge them, and a client must be told
	// to follow them anyway.
	Insecure bool
}

func (b *BroadcastConfig) enabled() bool { return b.Addr.IsValid() }

func (b *BroadcastConfig) validate(keys []wire.NTPKey) error {
	if !b.enabled() {
		if b.Interval != 0 || b.KeyID != 0 || b.Insecure {
			return fmt.Errorf("%w: broadcast interval, key or insecure without a broadcast address", ErrConfig)
		}
		return nil
	}
	a := b.Addr.Addr().Unmap()
	switch {
	case b.Addr.Port() == 0:
		return fmt.Errorf("%w: broadcast address %v: need a port (123 for NTP clients)", ErrConfig, b.Addr)
	case !a.Is4():
		return fmt.Errorf("%w: broadcast address %v: want an IPv4 broadcast address or multicast group", ErrConfig, b.Addr)
	case a.IsUnspecified() || a.IsLoopback() && !a.IsMulticast():
		return fmt.Errorf("%w: broadcast address %v: nobody would hear it", ErrConfig, b.Addr)
	}
	if b.Interval == 0 {
		b.Interval = DefaultBroadcastInterval
	}
	if b.Interval < MinBroadcastInterval || b.Interval > MaxBroadcastInterval {
		return fmt.Errorf("%w: broadcast interval %v: want %v to %v", ErrConfig, b.Interval, MinBroadcastInterval, MaxBroadcastInterval)
	}
	switch {
	case b.KeyID == 0 && !b.Insecure:
		return fmt.Errorf("%w: broadcasts are signed (RFC 8633 deprecates unauthenticated broadcast): give a key, or insecure to send them unsigned", ErrConfig)
	case b.KeyID != 0 && b.Insecure:
		return fmt.Errorf("%w: broadcast key %d and insecure: choose one", ErrConfig, b.KeyID)
	case b.KeyID != 0 && !hasKey(keys, b.KeyID):
		return fmt.Errorf("%w: broadcast key %d is not in the key file", ErrConfig, b.KeyID)
	}
	return nil
}

func hasKey(keys []wire.NTPKey, id uint32) bool {
	for _, k := range keys {
		if k.ID == id {
			return true
		}
	}
	return false
}

// broadcastPoll is the poll exponent a broadcast advertises: log2 of the
// interval, rounded, as chronyd computes it.
func broadcastPoll(interval time.Duration) int8 {
	p := math.Round(math.Log2(interval.Seconds()))
	return int8(min(max(p, ntp.MinPollLimit), ntp.MaxPollLimit))
}

// BroadcastPacket is the mode-5 packet a broadcast server sends at local
// time now with the system variables sys and poll exponent poll: the
// header of a server's reply without origin and receive timestamps
// (nothing is answered), the transmit timestamp now as a placeholder the
// transport overwrites at the write.
func BroadcastPacket(sys SystemState, poll int8, now time.Time) wire.NTPPacket {
	return wire.NTPPacket{
		Leap:           sys.Leap,
		Version:        wire.NTPVersion,
		Mode:           wire.ModeBroadcast,
		Stratum:        sys.Stratum,
		Poll:           poll,
		Precision:      sys.Precision,
		RootDelay:      wire.NTPShortFromDuration(sys.RootDelay),
		RootDispersion: wire.NTPShortFromDuration(sys.RootDispersion),
		ReferenceID:    sys.ReferenceID,
		Reference:      wire.NTPTimeFromTime(sys.Reference),
		Transmit:       wire.NTPTimeFromTime(now),
	}
}

// broadcast sends the packet due at now, if one is, and schedules the
// next one Interval after the last (a late tick does not shift the
// schedule; a tick more than an interval late skips what it missed).
func (s *Server) broadcast(now time.Time) {
	b := &s.cfg.Broadcast
	if !b.enabled() || (!s.bcastNext.IsZero() && now.Before(s.bcastNext)) {
		return
	}
	p := BroadcastPacket(s.System(now), broadcastPoll(b.Interval), now)
	var sign *wire.NTPSigner
	if b.KeyID != 0 {
		sign = s.signer(b.KeyID, false)
	}
	if d := s.reply(b.Addr, &p, nil, nil, sign); d.Data != nil {
		s.out = append(s.out, d)
		s.bcastSent++
		s.bcastLast = now
	}
	next := s.bcastNext.Add(b.Interval)
	if s.bcastNext.IsZero() || !next.After(now) {
		next = now.Add(b.Interval)
	}
	s.bcastNext = next
}

// BroadcastStatus describes the broadcasts (Status.Broadcast).
type BroadcastStatus struct {
	Address    string `json:"address"`
	IntervalMS int64  `json:"interval_ms"`
	// KeyID signs every packet; 0 with Insecure: unsigned.
	KeyID    uint32 `json:"key_id,omitempty"`
	Insecure bool   `json:"insecure,omitempty"`
	// Sent counts packets handed to the socket; LastSent is the local
	// time of the last one (RFC 3339, empty before the first).
	Sent     uint64 `json:"sent"`
	LastSent string `json:"last_sent,omitempty"`
	// Advertising is what the packets say: "stratum 8" or "unsynchronised
	// (clients refuse them)".
	Advertising string `json:"advertising"`
}

func (s *Server) broadcastStatus() *BroadcastStatus {
	b := s.cfg.Broadcast
	if !b.enabled() {
		return nil
	}
	st := &BroadcastStatus{Address: b.Addr.String(), IntervalMS: b.Interval.Milliseconds(), KeyID: b.KeyID, Insecure: b.Insecure, Sent: s.bcastSent}
	if !s.bcastLast.IsZero() {
		st.LastSent = s.bcastLast.UTC().Format(time.RFC3339Nano)
	}
	if sys := s.System(s.now); unsynchronised(sys) {
		st.Advertising = "unsynchronised (clients refuse them)"
	} else {
		st.Advertising = fmt.Sprintf("stratum %d", sys.Stratum)
	}
	return st
}
