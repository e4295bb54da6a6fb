package liveness

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
)

// Config configures a detector. Durations are counted in ticks of the
// driver's tick interval (the daemons tick every 10 ms); TickInterval only
// converts them for humans and for the heartbeat's announced interval.
type Config struct {
	// ID is this member's ID (> 0). Required.
	ID uint32
	// Members is the static member list, this member included, identical on
	// every host. Required.
	Members []uint32
	// TickInterval is the driver's tick period. Default 10 ms.
	TickInterval time.Duration
	// HeartbeatTicks is how many ticks pass between two heartbeats.
	// Default 10 (100 ms at a 10 ms tick).
	HeartbeatTicks int
	// SuspectTicks is how many ticks a member may stay silent before it is
	// suspected. It must exceed HeartbeatTicks, or every member would be
	// suspected between two of its own heartbeats. Default 5 x
	// HeartbeatTicks: four heartbeats in a row may be lost before a live
	// member is suspected.
	SuspectTicks int
	// Rand chooses the random phase of the first heartbeat, so that hosts
	// started together (a lab boot, a simulator) do not send in lock step.
	// The driver seeds it. Nil: no random phase, the first heartbeat leaves
	// on the first tick.
	Rand *rand.Rand
}

// Defaults of DefaultLANConfig and of zero Config fields.
const (
	DefaultTickInterval   = 10 * time.Millisecond
	DefaultHeartbeatTicks = 10
	DefaultSuspectFactor  = 5
)

// DefaultLANConfig is the profile for a lab LAN: a heartbeat every 100 ms, a
// member suspected after 500 ms of silence. The caller still sets ID,
// Members and Rand.
func DefaultLANConfig() Config {
	return Config{
		TickInterval:   DefaultTickInterval,
		HeartbeatTicks: DefaultHeartbeatTicks,
		SuspectTicks:   DefaultSuspectFactor * DefaultHeartbeatTicks,
	}
}

// ConfigError names the field of a Config that is wrong and why.
type ConfigError struct {
	Field  string
	Reason string
}

func (e *ConfigError) Error() string { return "liveness: config " + e.Field + ": " + e.Reason }

// maxIntervalMS is the largest interval a heartbeat can announce.
const maxIntervalMS = 1<<32 - 1

// validate fills defaults and rejects contradictions.
func (c *Config) validate() error {
	if c.ID == 0 {
		return &ConfigError{"ID", "must be > 0 (0 is the broadcast address)"}
	}
	if c.TickInterval == 0 {
		c.TickInterval = DefaultTickInterval
	}
	if c.TickInterval < 0 {
		return &ConfigError{"TickInterval", fmt.Sprintf("%v is negative", c.TickInterval)}
	}
	if c.HeartbeatTicks == 0 {
		c.HeartbeatTicks = DefaultHeartbeatTicks
	}
	if c.HeartbeatTicks < 0 {
		return &ConfigError{"HeartbeatTicks", fmt.Sprintf("%d is negative", c.HeartbeatTicks)}
	}
	if c.SuspectTicks == 0 {
		c.SuspectTicks = DefaultSuspectFactor * c.HeartbeatTicks
	}
	if c.SuspectTicks <= c.HeartbeatTicks {
		return &ConfigError{"SuspectTicks", fmt.Sprintf("%d must exceed HeartbeatTicks (%d): members would be suspected between two heartbeats", c.SuspectTicks, c.HeartbeatTicks)}
	}
	if ms := c.TickInterval.Milliseconds() * int64(c.HeartbeatTicks); ms > maxIntervalMS {
		return &ConfigError{"HeartbeatTicks", fmt.Sprintf("interval of %d ms does not fit the heartbeat's 32-bit field", ms)}
	}
	self := false
	seen := make(map[uint32]bool, len(c.Members))
	for _, id := range c.Members {
		if id == 0 {
			return &ConfigError{"Members", "member ID 0 is reserved for broadcast"}
		}
		if seen[id] {
			return &ConfigError{"Members", fmt.Sprintf("member %d is listed twice", id)}
		}
		seen[id] = true
		if id == c.ID {
			self = true
		}
	}
	if !self {
		return &ConfigError{"Members", fmt.Sprintf("own ID %d is not in the member list", c.ID)}
	}
	return nil
}

// ErrFromSelf is returned by Step for a heartbeat that claims this member's
// own ID: another host is configured with the same ID (or a multicast loop
// was not filtered). Counting it makes the misconfiguration visible.
var ErrFromSelf = errors.New("liveness: heartbeat carries this member's own ID")
