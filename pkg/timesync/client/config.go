package client

import (
	"fmt"
	"math"
	"math/rand/v2"
	"net/netip"
	"slices"
	"time"

	"github.com/synclab/synclab/pkg/clock"
	"github.com/synclab/synclab/pkg/timesync/ntp"
	"github.com/synclab/synclab/pkg/wire"
)

// LAN defaults (DefaultLANConfig). RFC 5905 polls every 64 s to 36 h because
// public servers are shared by millions of clients; a lab LAN's server is
// one hop away and ours, so timed polls much faster: a 48-byte packet per
// second per source is nothing, and short polls keep the error small when
// the oscillator wanders (temperature) instead of averaging stale samples.
const (
	// DefaultMinPoll is 2^0 = 1 s: the filter sees a new sample every
	// second while the offset moves (start, wander), enough to reach
	// tens of microseconds within a minute.
	DefaultMinPoll int8 = 0
	// DefaultMaxPoll is 2^6 = 64 s: once the frequency is known the poll
	// grows while offsets stay in the noise; 64 s keeps the bound's
	// drift term (15 ppm × 64 s ≈ 1 ms worst case) modest.
	DefaultMaxPoll int8 = 6
	// DefaultBurst is the number of requests of the initial burst (and of
	// the burst after a source becomes reachable again): eight, so the
	// 8-stage clock filter is full after the burst.
	DefaultBurst = ntp.NStage
	// DefaultBurstInterval spaces the burst: 500 ms fills the filter in
	// 4 s (the target is 1 ms within 10 s of start) while staying
	// under a LAN server's rate limit.
	DefaultBurstInterval = 500 * time.Millisecond
	// MaxPollSamples bounds Config.PollSamples: a poll of more requests
	// than the clock filter has stages adds load and no choice worth it.
	MaxPollSamples = ntp.NStage
	// DefaultMinSamples is Config.MinSamples' default.
	DefaultMinSamples = ntp.NStage/2 + 1
	// DefaultTickInterval is the daemons' tick period.
	DefaultTickInterval = 10 * time.Millisecond
	// DefaultPrecision is the precision exponent advertised and assumed
	// for the local clock: 2^-20 s ≈ 1 µs, what a kernel software
	// timestamp is good for (it floors every sample's delay and adds to
	// its dispersion).
	DefaultPrecision int8 = -20
	// DefaultStateInterval is the shortest time between two saves of the
	// frequency to the state directory.
	DefaultStateInterval = time.Minute
	// DefaultStateMinChangePPM is how far the frequency must move from the
	// saved value before it is saved again, ppm.
	DefaultStateMinChangePPM = 0.1
	// DefaultSyncInterval is how often the clock's maximum-error field is
	// refreshed between updates (AdjustSync from the servo's bound), so
	// the kernel reports the servo's bound rather than its own 500 ppm
	// growth.
	DefaultSyncInterval = time.Second

	// DefaultCristianBurst, DefaultCristianSpacing, DefaultCristianTimeout:
	// see Config.
	DefaultCristianBurst   = 4
	DefaultCristianSpacing = 10 * time.Millisecond
	DefaultCristianTimeout = time.Second
)

// Config configures a Client. The zero value of every field but the sources
// means its default; DefaultLANConfig spells them out.
type Config struct {
	// Servers are polled in client mode (we send mode 3, they answer mode
	// 4). At least one server, peer or Cristian server is required.
	Servers []netip.AddrPort
	// CristianServers are timed servers followed with Cristian's algorithm
	// (timed run --mode cristian; package cristian): each poll is a burst
	// of CristianBurst requests, and the round with the smallest round
	// trip becomes the source's sample. Its filter, the selection and the
	// servo are the NTP client's.
	CristianServers []netip.AddrPort
	// CristianBurst is the number of requests per poll (default 4);
	// CristianSpacing the time between them (default 10 ms);
	// CristianTimeout how long after its first request a burst ends
	// whatever is still missing (default 1 s).
	CristianBurst   int
	CristianSpacing time.Duration
	CristianTimeout time.Duration
	// CristianMinDelay is the smallest one-way delay the paths are known
	// to have (default 0, the safe choice): it tightens the accuracy
	// bound ±(RTT/2 - min).
	CristianMinDelay time.Duration
	// ID, Cluster and Keys identify Cristian's requests (the sender ID,
	// wire.ClusterID of the cluster name, the frame keys) and check the
	// replies. ID is required with CristianServers.
	ID      uint32
	Cluster uint32
	Keys    []wire.Key
	// Peers are symmetric peers (RFC 5905 symmetric active mode): we
	// send them mode-1 packets at our poll interval, and their packets
	// that answer ours give samples, so two hosts that list each other
	// synchronise each other (the one closer to a reference wins, by
	// stratum). Mode-1 packets from addresses not listed here are ignored
	// and counted.
	Peers []netip.AddrPort
	// Self are sources the operator configured that are this host itself
	// (the driver tells: an address of this machine at the port its own
	// server answers on). A clock cannot follow itself: they are never
	// polled, and Status lists each with the verdict "self" and Why
	// naming the address, so that the configuration is seen, not hidden.
	// A client with only these (the lab master that lists itself among
	// the lab's servers) follows nothing.
	Self []SelfSource

	// MinPoll and MaxPoll bound the poll exponent, log2 seconds (defaults
	// 0 and 6: 1 s to 64 s; allowed -4..17, sub-second polls are for
	// tests). The poll interval moves between them with the offsets'
	// noise (ntp.Poller). Both zero means the defaults unless PollRangeSet
	// is true: then it means a poll every second, always.
	MinPoll, MaxPoll int8
	// PollRangeSet takes MinPoll and MaxPoll as given, even both zero
	// (timed's --minpoll and --maxpoll always set it).
	PollRangeSet bool
	// Burst is the number of requests sent BurstInterval apart at start and
	// when a source becomes reachable again (default 8; negative: none).
	Burst int
	// BurstInterval spaces the burst (default 500 ms).
	BurstInterval time.Duration
	// MinSamples is how many samples a source's clock filter must hold
	// before the source is a selection candidate (default 5, at most 8).
	// An empty filter stage counts 16 s of dispersion, so with 4 samples
	// a source's root distance is still about 0.94 s: a server a whole
	// second off would overlap the truechimers' intervals, be combined
	// with them, and drag the clock by a third of a second. From 5
	// samples on (about 0.44 s) it is caught as a falseticker.
	MinSamples int
	// TickInterval is the driver's tick period (default 10 ms). Polls fire
	// at the first tick at or after they are due, so every poll and burst
	// interval must be at least two ticks. (Poll deadlines are kept as
	// local clock times, not tick counts: intervals of 2^poll s must not
	// stretch by a tick's rounding at every poll, and a tick that comes
	// late must not delay every later poll.)
	TickInterval time.Duration

	// MaxSlewPPM is the rate the clock slews at, ppm (default 83333). It
	// must equal the clock's own rate (clock.SimConfig.MaxSlewPPM, or the
	// system clock's): the servo predicts when a slew ends.
	MaxSlewPPM float64
	// StepThreshold, when positive, lets the clock be stepped forward by an
	// offset larger than it during the first StepLimit updates (chrony's
	// makestep). Zero (the default) never steps. Never backwards.
	StepThreshold time.Duration
	// StepLimit is how many first updates may step (default 3).
	StepLimit int
	// Frequency is the initial frequency correction, ppm (default 0).
	// Restore overrides it with the persisted value.
	Frequency float64
	// NoAdjust measures and reports only (timed run --no-adjust): the
	// client polls, filters and selects as ever, and its servo runs open
	// loop (servo.Config.MeasureOnly), so every offset it reports is the
	// offset of the clock as it is, never corrected; the frequency it
	// reports is the correction it would make, not one in force. It
	// emits no clock adjustment, steps nothing, saves no state (Restore
	// reads none either: a disciplined run's frequency is not this
	// clock's) and reports itself unsynchronised: in its status, by not
	// emitting EventSynchronized, and in the system variables it hands
	// its NTP server and its peers (unsynchronised, or LocalStratum as
	// without a source), since this host's clock is not disciplined. The
	// poll interval adapts to how well the open-loop model predicts the
	// offsets, as it adapts to the residual offsets of a disciplined
	// clock.
	NoAdjust bool
	// Interleaved polls every server in Servers in chrony's interleaved
	// client/server mode (timed run --xleave; ntp.Association's
	// EnableInterleaved): a server that speaks it (chronyd) answers each
	// request with the kernel's transmit stamp of its previous answer, so
	// the server's send path (the time between its clock reading and the
	// wire, tens of microseconds under load) drops out of the offset; a
	// server that does not (ntpd, timed before 2026-12-06) answers in basic mode and
	// is used as such, and the status says so. Each sample is then one
	// poll older. Peers and Cristian servers are not affected. Off by
	// default. The nonces come from Rand: seed it unpredictably (the
	// daemon does).
	Interleaved bool
	// PollSamples is how many requests each poll of a server sends, one
	// right after the other's answer (default 1, at most MaxPollSamples);
	// the least delayed answer of the poll is the sample the clock filter
	// gets, the others are counted (poll_samples_unused). The first
	// request after a poll interval of silence finds the path cold
	// (caches, the bridge's and the server's wake-ups): on the bench's
	// namespace LAN it took 45 us to go and come back where the next
	// took 21-28 us, and its two legs differed by 5 us where the next
	// one's did by 1-2 us. A server's rate limit sees PollSamples
	// requests per poll interval: chronyd's ratelimit and timed's
	// --rate-limit must allow that many (at polls of a second, raise
	// them or keep 1). Every request of a poll is waited for until the
	// next poll begins, so a link slower than the wait between requests
	// loses no answer; a server that answers one request a poll (a limit
	// that drops the rest) synchronises the client as with 1, and is
	// reported (EventPollSamplesSingle). Peers, broadcast and Cristian
	// servers are not affected.
	PollSamples int

	// Precision is the local clock's precision exponent, log2 s (default
	// -20, about 1 µs).
	Precision int8
	// LocalStratum, when non-zero, makes this host a reference of that
	// stratum when it has no better source (chrony's "local stratum N"):
	// its packets then say leap 0 and stratum LocalStratum with reference
	// ID "LOCL", and sources at LocalStratum or above are never selected,
	// since they are no better than the local clock. A lab's master clock
	// peering with others sets it.
	LocalStratum uint8
	// Address is this host's address as its sources see it (optional): a
	// source of stratum 2 or more whose reference ID is
	// wire.RefIDFromAddr(Address) synchronises to us, and is not used
	// (timing loop).
	Address netip.Addr

	// StateInterval is the shortest time between two saves of the
	// frequency (Ready.State), local time (default 1 min).
	StateInterval time.Duration
	// StateMinChangePPM is how far the frequency must move from the saved
	// value to be saved again, ppm (default 0.1).
	StateMinChangePPM float64
	// SyncInterval is how often the clock's error fields are refreshed
	// between updates (default 1 s).
	SyncInterval time.Duration

	// Broadcast makes the client a broadcast client too
	// (BroadcastConfig): the broadcasters it hears become sources.
	Broadcast BroadcastConfig

	// Rand spreads the polls (the first poll's phase, a little jitter on
	// every interval) so that hosts started together do not poll in
	// lockstep. Nil: a generator with a fixed seed; the daemon passes a
	// randomly seeded one, the simulator sim.NewRand().
	Rand *rand.Rand
}

// SelfSource is a configured source that is this host (Config.Self).
type SelfSource struct {
	Addr netip.AddrPort
	Mode string // "server" or "peer", as in SourceStatus
	// Why names it as this host: "10.0.0.1 is this machine's address
	// (eth0), where this timed serves NTP".
	Why string
}

// DefaultLANConfig returns the LAN profile: polls from 1 s to 64 s, a burst
// of 8 requests 500 ms apart at start, slews at 83,333 ppm, no stepping.
// Set Servers and/or Peers (and Rand) before use.
func DefaultLANConfig() Config {
	return Config{
		MinPoll:           DefaultMinPoll,
		MaxPoll:           DefaultMaxPoll,
		Burst:             DefaultBurst,
		BurstInterval:     DefaultBurstInterval,
		MinSamples:        DefaultMinSamples,
		TickInterval:      DefaultTickInterval,
		MaxSlewPPM:        clock.DefaultMaxSlewPPM,
		StepLimit:         3,
		Precision:         DefaultPrecision,
		StateInterval:     DefaultStateInterval,
		StateMinChangePPM: DefaultStateMinChangePPM,
		SyncInterval:      DefaultSyncInterval,
	}
}

// validate fills defaults in and rejects contradictions. The poll range
// default applies when both MinPoll and MaxPoll are zero and PollRangeSet
// is not set (0 is a valid exponent).
func (c *Config) validate() error {
	def := DefaultLANConfig()
	if len(c.Servers)+len(c.Peers)+len(c.CristianServers)+len(c.Self) == 0 && !c.Broadcast.Enabled {
		return fmt.Errorf("%w: no servers and no peers: give at least one --server or --peer", ErrConfig)
	}
	if c.Interleaved && len(c.Servers) == 0 {
		return fmt.Errorf("%w: interleaved mode (--xleave) is for NTP servers (--server in --mode ntp), and none is configured", ErrConfig)
	}
	for _, s := range c.Self {
		if s.Why == "" || s.Mode == "" {
			return fmt.Errorf("%w: self source %v: say its mode and why it is this host", ErrConfig, s.Addr)
		}
	}
	if len(c.CristianServers) > 0 && c.ID == 0 {
		return fmt.Errorf("%w: Cristian servers need the node's ID", ErrConfig)
	}
	switch {
	case c.CristianBurst < 0 || c.CristianBurst > 64:
		return fmt.Errorf("%w: Cristian burst %d: want 1..64", ErrConfig, c.CristianBurst)
	case c.CristianSpacing < 0 || c.CristianTimeout < 0 || c.CristianMinDelay < 0:
		return fmt.Errorf("%w: Cristian spacing, timeout and minimum delay must not be negative", ErrConfig)
	}
	if c.CristianBurst == 0 {
		c.CristianBurst = DefaultCristianBurst
	}
	if c.CristianSpacing == 0 {
		c.CristianSpacing = DefaultCristianSpacing
	}
	if c.CristianTimeout == 0 {
		c.CristianTimeout = DefaultCristianTimeout
	}
	if span := time.Duration(c.CristianBurst-1) * c.CristianSpacing; span >= c.CristianTimeout {
		return fmt.Errorf("%w: a burst of %d requests %v apart does not fit its %v timeout", ErrConfig, c.CristianBurst, c.CristianSpacing, c.CristianTimeout)
	}
	seen := make(map[netip.AddrPort]bool, len(c.Servers)+len(c.Peers)+len(c.CristianServers))
	for _, a := range slices.Concat(c.Servers, c.Peers, c.CristianServers) {
		if !a.IsValid() || a.Port() == 0 {
			return fmt.Errorf("%w: source address %q: need an IP address and a non-zero port", ErrConfig, a)
		}
		a = unmap(a)
		if seen[a] {
			return fmt.Errorf("%w: source %v listed twice", ErrConfig, a)
		}
		seen[a] = true
	}
	if c.MinPoll == 0 && c.MaxPoll == 0 && !c.PollRangeSet {
		c.MinPoll, c.MaxPoll = def.MinPoll, def.MaxPoll
	}
	c.PollRangeSet = true
	if c.Burst == 0 {
		c.Burst = def.Burst
	}
	if c.BurstInterval == 0 {
		c.BurstInterval = def.BurstInterval
	}
	if c.MinSamples == 0 {
		c.MinSamples = def.MinSamples
	}
	if c.TickInterval == 0 {
		c.TickInterval = def.TickInterval
	}
	if c.MaxSlewPPM == 0 {
		c.MaxSlewPPM = def.MaxSlewPPM
	}
	if c.StepLimit == 0 {
		c.StepLimit = def.StepLimit
	}
	if c.Precision == 0 {
		c.Precision = def.Precision
	}
	if c.StateInterval == 0 {
		c.StateInterval = def.StateInterval
	}
	if c.StateMinChangePPM == 0 {
		c.StateMinChangePPM = def.StateMinChangePPM
	}
	if c.SyncInterval == 0 {
		c.SyncInterval = def.SyncInterval
	}
	if c.PollSamples == 0 {
		c.PollSamples = 1
	}
	switch {
	case c.MinPoll < ntp.MinPollLimit || c.MaxPoll > ntp.MaxPollLimit:
		return fmt.Errorf("%w: poll range %d..%d is outside %d..%d", ErrConfig, c.MinPoll, c.MaxPoll, ntp.MinPollLimit, ntp.MaxPollLimit)
	case c.MinPoll > c.MaxPoll:
		return fmt.Errorf("%w: MinPoll %d is above MaxPoll %d", ErrConfig, c.MinPoll, c.MaxPoll)
	case c.MinSamples < 1 || c.MinSamples > ntp.NStage:
		return fmt.Errorf("%w: MinSamples %d must be within 1..%d", ErrConfig, c.MinSamples, ntp.NStage)
	case c.TickInterval < 0:
		return fmt.Errorf("%w: TickInterval %v is negative", ErrConfig, c.TickInterval)
	case ntp.PollInterval(c.MinPoll) < 2*c.TickInterval:
		return fmt.Errorf("%w: the minimum poll interval %v is shorter than two ticks (%v each): raise MinPoll",
			ErrConfig, ntp.PollInterval(c.MinPoll), c.TickInterval)
	case c.Burst > 0 && c.BurstInterval < 2*c.TickInterval:
		return fmt.Errorf("%w: BurstInterval %v is shorter than two ticks (%v each)", ErrConfig, c.BurstInterval, c.TickInterval)
	case c.StepThreshold < 0:
		return fmt.Errorf("%w: StepThreshold %v is negative (0 disables stepping)", ErrConfig, c.StepThreshold)
	case c.StepLimit < 0:
		return fmt.Errorf("%w: StepLimit %d is negative", ErrConfig, c.StepLimit)
	case c.Precision > 0:
		return fmt.Errorf("%w: precision exponent %d: a clock coarser than a second cannot be disciplined", ErrConfig, c.Precision)
	case c.LocalStratum >= ntp.MaxStratum:
		return fmt.Errorf("%w: LocalStratum %d must be below %d", ErrConfig, c.LocalStratum, ntp.MaxStratum)
	case c.StateInterval < 0 || !(c.StateMinChangePPM > 0) || math.IsInf(c.StateMinChangePPM, 0):
		return fmt.Errorf("%w: StateInterval %v and StateMinChangePPM %g must be positive", ErrConfig, c.StateInterval, c.StateMinChangePPM)
	case c.SyncInterval < 0:
		return fmt.Errorf("%w: SyncInterval %v is negative", ErrConfig, c.SyncInterval)
	case c.PollSamples < 1 || c.PollSamples > MaxPollSamples:
		return fmt.Errorf("%w: PollSamples %d: want 1..%d requests per poll", ErrConfig, c.PollSamples, MaxPollSamples)
	}
	if err := c.Broadcast.validate(c.TickInterval); err != nil {
		return err
	}
	if c.Rand == nil {
		c.Rand = rand.New(rand.NewPCG(0x74696d6564, 0x636c69656e74)) // "timed", "client"
	}
	c.Servers = slices.Clone(c.Servers)
	c.Peers = slices.Clone(c.Peers)
	return nil
}

// unmap normalises an IPv4-mapped IPv6 address to IPv4, so that a reply
// from ::ffff:10.0.0.1 matches a server configured as 10.0.0.1.
func unmap(a netip.AddrPort) netip.AddrPort {
	return netip.AddrPortFrom(a.Addr().Unmap(), a.Port())
}
