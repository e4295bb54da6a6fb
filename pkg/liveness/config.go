package liveness

import (
	"errors"
	"fmt"
	"time"
)

// Config configures the heartbeat core. Every duration is a time.Duration
// of the local clock, used as given (never rounded to a tick) and checked by
// CheckTimeout; zero fields take their defaults. The member's ID, the member
// list, the start time and the random source come from core.Env.
type Config struct {
	// Heartbeat is the interval between two heartbeats of this member.
	// Default 100 ms. It is announced in each heartbeat in whole
	// milliseconds.
	Heartbeat time.Duration
	// SuspectAfter is how long a member may stay silent before it is
	// suspected. It must exceed Heartbeat, or every member would be
	// suspected between two of its own heartbeats. Default 5 x Heartbeat:
	// four heartbeats in a row may be lost before a live member is
	// suspected.
	SuspectAfter time.Duration
}

// Defaults of DefaultLANConfig and of zero Config fields.
const (
	DefaultHeartbeat     = 100 * time.Millisecond
	DefaultSuspectFactor = 5
)

// DefaultLANConfig is the profile for a lab LAN: a heartbeat every 100 ms, a
// member suspected after 500 ms of silence.
func DefaultLANConfig() Config {
	return Config{Heartbeat: DefaultHeartbeat, SuspectAfter: DefaultSuspectFactor * DefaultHeartbeat}
}

// ConfigError names the field of a Config (or of the Env) that is wrong and
// why.
type ConfigError struct {
	Field  string
	Reason string
}

func (e *ConfigError) Error() string { return "liveness: config " + e.Field + ": " + e.Reason }

// validate fills defaults and rejects contradictions.
func (c *Config) validate() error {
	if c.Heartbeat == 0 {
		c.Heartbeat = DefaultHeartbeat
	}
	if err := CheckTimeout("Heartbeat", c.Heartbeat); err != nil {
		return &ConfigError{"Heartbeat", err.Error()}
	}
	if c.SuspectAfter == 0 {
		c.SuspectAfter = DefaultSuspectFactor * c.Heartbeat
	}
	if err := CheckTimeout("SuspectAfter", c.SuspectAfter); err != nil {
		return &ConfigError{"SuspectAfter", err.Error()}
	}
	if c.SuspectAfter <= c.Heartbeat {
		return &ConfigError{"SuspectAfter", fmt.Sprintf("%v must exceed Heartbeat (%v): members would be suspected between two heartbeats", c.SuspectAfter, c.Heartbeat)}
	}
	return nil
}

// CheckMembers checks a member list as every core needs it: no ID 0 (the
// broadcast address), none twice, and self among them.
func CheckMembers(self uint32, members []uint32) error {
	if self == 0 {
		return &ConfigError{"ID", "must be > 0 (0 is the broadcast address)"}
	}
	seen := make(map[uint32]bool, len(members))
	for _, id := range members {
		if id == 0 {
			return &ConfigError{"Members", "member ID 0 is reserved for broadcast"}
		}
		if seen[id] {
			return &ConfigError{"Members", fmt.Sprintf("member %d is listed twice", id)}
		}
		seen[id] = true
	}
	if !seen[self] {
		return &ConfigError{"Members", fmt.Sprintf("own ID %d is not in the member list", self)}
	}
	return nil
}

// ErrFromSelf is returned by Step for a heartbeat that claims this member's
// own ID: another host is configured with the same ID (or a multicast loop
// was not filtered). Counting it makes the misconfiguration visible.
var ErrFromSelf = errors.New("liveness: heartbeat carries this member's own ID")
