package server

import (
	"errors"
	"fmt"
	"time"

	"github.com/synclab/synclab/pkg/timesync/ntp"
	"github.com/synclab/synclab/pkg/wire"
)

// SystemState is what the server advertises about its own clock: leap
// indicator, stratum, reference ID and time, root delay and dispersion,
// precision (RFC 5905 system variables). It is ntp.System, so that the
// discipline's ntp.NextSystem result can be handed to SetSystem as is.
type SystemState = ntp.System

// Defaults of Config.
const (
	// DefaultPrecision is the precision exponent advertised when Config
	// leaves it zero: 2^-20 s, about 1 us, what the client core assumes
	// too. cmd/timed measures the clock's resolution instead.
	DefaultPrecision int8 = -20
	// DefaultRateInterval is the average interval a client may keep up:
	// 1 s, the LAN client's minimum poll (2^0 s), so timed's own clients
	// are never limited in steady state.
	DefaultRateInterval = time.Second
	// DefaultRateBurst is how many requests a client may send back to back
	// before the average applies: 8, like chrony's ratelimit burst, enough
	// for an iburst of 8 polls.
	DefaultRateBurst = 8
	// DefaultMaxClients bounds the rate-limit table: 8192 entries of about
	// 100 bytes, under 1 MB however many addresses a spoofed flood uses.
	DefaultMaxClients = 8192
)

// LocalRefID is the reference ID advertised at a local stratum when
// Config.RefID is zero: "LOCL", as timed's client core uses for the same
// situation.
var LocalRefID = wire.RefIDFromText("LOCL")

// RateLimit configures the per-client limiter: a token bucket of Burst
// tokens refilled one every Interval, per source address (the port is
// ignored, so a client cannot escape it by changing ports).
type RateLimit struct {
	// Interval is the average interval between a client's requests that
	// is answered indefinitely. Default DefaultRateInterval; negative
	// disables rate limiting.
	Interval time.Duration
	// Burst is the bucket's depth: how many requests a quiet client may
	// send at once. Default DefaultRateBurst.
	Burst int
	// KissInterval is the shortest time between two RATE kiss-o'-death
	// replies to one client; over-limit requests in between are dropped.
	// A KoD is as large as the request, so this is not about amplification
	// but about not answering a flood at all. Default: Interval × Burst.
	KissInterval time.Duration
	// MaxClients bounds the table; the least recently heard client is
	// evicted when a new one arrives at a full table. Default
	// DefaultMaxClients.
	MaxClients int
}

// Config configures a Server. The zero value serves an unsynchronised
// clock (stratum 16, leap 3) without authentication, rate-limited with the
// defaults.
type Config struct {
	// LocalStratum, in 1..15, makes the server a reference of that stratum
	// whenever the advertised state is unsynchronised (chrony's "local
	// stratum N"): leap 0, that stratum, reference ID RefID, reference
	// time the time of each request. A lab master without an upstream sets
	// it (e.g. 8). Zero: an unsynchronised server says so (stratum 16,
	// leap 3), and clients refuse its time.
	LocalStratum uint8
	// RefID is the reference ID advertised at LocalStratum. Zero: LocalRefID
	// ("LOCL").
	RefID uint32
	// LocalError is how far, at most, the time served at LocalStratum is
	// from true time, as the administrator vouches for it (a clock set
	// from a reference, and how far it may have drifted since): it is
	// advertised as the root dispersion, so that the clients' error
	// bounds, relative to the primary reference (RFC 5905's root
	// distance), cover it. Zero: this clock is declared the reference
	// (chronyd's "local": root delay and dispersion 0), and its clients'
	// bounds are relative to it. Below MaxLocalError.
	LocalError time.Duration
	// Group says that the local clock keeps a group's agreed time
	// (Berkeley mode): the average of the members' clocks, which nobody
	// declared a reference. Served at LocalStratum only with a LocalError
	// (which must then cover the group's offset from true time) and while
	// SetGroupError gives this member's bound relative to the group (added
	// to the root dispersion); otherwise unsynchronised (leap 3, stratum
	// 16): nothing bounds the group's time from true time, and a client
	// that took it for a reference would report a bound that does not
	// hold.
	Group bool
	// Precision is the precision exponent (log2 s) of the local clock.
	// Zero: DefaultPrecision.
	Precision int8
	// Keys are the symmetric keys (a chrony key file, wire.ParseChronyKeys)
	// that authenticate requests. Without keys every MAC is unknown.
	Keys []wire.NTPKey
	// RateLimit configures the per-client rate limiter.
	RateLimit RateLimit

	// Cristian answers Cristian's time requests (synclab TimeRequest
	// frames on the same socket) when its ID is set.
	Cristian CristianConfig
	// Broadcast, when its address is set, also sends mode-5 packets
	// (BroadcastConfig).
	Broadcast BroadcastConfig
}

// CristianConfig is what the server needs to answer Cristian's requests:
// they are synclab frames, checked like a member's but without replay
// windows (wire.Validator.Authenticate).
type CristianConfig struct {
	// ID is the sender ID of the replies (the daemon's member ID). Zero:
	// requests are dropped ("cristian_disabled").
	ID uint32
	// Cluster is the wire.ClusterID requests must carry.
	Cluster uint32
	// Keys, if any, must authenticate every request (the daemon seals the
	// replies with its first key).
	Keys []wire.Key
}

// MaxLocalError bounds Config.LocalError: clients refuse a server whose
// root distance is beyond RFC 5905's MAXDIST (1 s).
const MaxLocalError = ntp.MaxDistance

// ErrConfig is wrapped by New for an invalid Config.
var ErrConfig = errors.New("server: invalid config")

func (c *Config) validate() error {
	if c.LocalStratum >= wire.StratumUnsynchronized {
		return fmt.Errorf("%w: local stratum %d: want 1..15 (0 for none)", ErrConfig, c.LocalStratum)
	}
	if c.LocalError < 0 || c.LocalError >= MaxLocalError {
		return fmt.Errorf("%w: local error %v: want 0 up to below %v (a root dispersion clients still accept)", ErrConfig, c.LocalError, MaxLocalError)
	}
	if c.RefID == 0 {
		c.RefID = LocalRefID
	}
	if c.Precision == 0 {
		c.Precision = DefaultPrecision
	}
	if c.Precision < -32 || c.Precision > 0 {
		// A precision of 1 s or worse is not a clock a server should
		// offer; below 2^-32 s the wire format cannot tell.
		return fmt.Errorf("%w: precision 2^%d s out of range 2^-32..2^0", ErrConfig, c.Precision)
	}
	seen := make(map[uint32]bool, len(c.Keys))
	for _, k := range c.Keys {
		if k.ID == 0 || seen[k.ID] {
			return fmt.Errorf("%w: key ID %d is zero or repeated", ErrConfig, k.ID)
		}
		seen[k.ID] = true
	}
	if err := c.Broadcast.validate(c.Keys); err != nil {
		return err
	}
	r := &c.RateLimit
	if r.Interval == 0 {
		r.Interval = DefaultRateInterval
	}
	if r.Burst == 0 {
		r.Burst = DefaultRateBurst
	}
	if r.Burst < 0 || r.Burst > 1<<16 {
		return fmt.Errorf("%w: rate-limit burst %d: want 1..65536", ErrConfig, r.Burst)
	}
	if r.KissInterval == 0 && r.limited() {
		r.KissInterval = r.Interval * time.Duration(r.Burst)
	}
	if r.KissInterval < 0 {
		return fmt.Errorf("%w: kiss interval %v is negative", ErrConfig, r.KissInterval)
	}
	if r.MaxClients == 0 {
		r.MaxClients = DefaultMaxClients
	}
	if r.MaxClients < 1 {
		return fmt.Errorf("%w: max clients %d: want at least 1", ErrConfig, r.MaxClients)
	}
	return nil
}

// limited reports whether rate limiting is on.
func (r *RateLimit) limited() bool { return r.Interval > 0 }
