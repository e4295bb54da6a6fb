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
	// Probe makes this member ask a silent member for a heartbeat instead
	// of waiting for SuspectAfter: once a member has been silent for
	// Heartbeat + Probe (the heartbeat expected from it is missing), this
	// member sends it a heartbeat probe (wire.KindHeartbeatProbe) every
	// Probe until it hears it again or suspects it; a live member answers
	// each with a heartbeat to the prober alone. A false suspicion then
	// needs the missed heartbeat and every probe's round trip lost, not
	// a run of heartbeats, so heartbeats may be sparse: QuietLANConfig's
	// 300 ms heartbeats with 10 ms probes leave 19 probes in the 200 ms
	// before a 500 ms suspicion. A dead member is suspected after the
	// same SuspectAfter: a probe's silence is no evidence by itself. It
	// must leave room for a probe (Heartbeat + Probe below SuspectAfter).
	// 0 (the default, and DefaultLANConfig): off, heartbeats alone.
	Probe time.Duration
}

// Defaults of DefaultLANConfig and of zero Config fields.
const (
	DefaultHeartbeat     = 100 * time.Millisecond
	DefaultSuspectFactor = 5
)

// DefaultLANConfig is the notes' heartbeat detector on a lab LAN: a
// heartbeat every 100 ms, a member suspected after 500 ms of silence, no
// probes (the simulator's and the teaching examples' profile).
func DefaultLANConfig() Config {
	return Config{Heartbeat: DefaultHeartbeat, SuspectAfter: DefaultSuspectFactor * DefaultHeartbeat}
}

// The profile of QuietLANConfig.
const (
	QuietHeartbeat    = 300 * time.Millisecond
	QuietSuspectAfter = DefaultSuspectFactor * DefaultHeartbeat
	QuietProbe        = 10 * time.Millisecond
)

// QuietLANConfig is what a daemon runs (timed's members): the same 500 ms
// suspicion as DefaultLANConfig, reached with a third of its frames and
// wake-ups: a heartbeat every 300 ms, and a member that missed one probed
// every 10 ms until it answers or its 500 ms pass. Against
// DefaultLANConfig: a crashed member is suspected as soon (500 ms after
// its last sign of life); a live one is wrongly suspected only if its
// heartbeat and 19 probe round trips in a row are lost (was: 4
// heartbeats), or if it stops sending for more than 200 ms (was: 400 ms:
// a process stopped, or a loop that long behind on a loaded host). When
// every loop on a host runs late, the sender's lateness and the prober's
// both count: in the simulator live members flapped from about 110 ms of
// lateness per wake-up on (none with DefaultLANConfig up to 200 ms).
func QuietLANConfig() Config {
	return Config{Heartbeat: QuietHeartbeat, SuspectAfter: QuietSuspectAfter, Probe: QuietProbe}
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
	if c.Probe != 0 {
		if err := CheckTimeout("Probe", c.Probe); err != nil {
			return &ConfigError{"Probe", err.Error()}
		}
		if c.Heartbeat+c.Probe >= c.SuspectAfter {
			return &ConfigError{"Probe", fmt.Sprintf("Heartbeat (%v) + Probe (%v) must be below SuspectAfter (%v): a member is probed only between the heartbeat it missed and its suspicion", c.Heartbeat, c.Probe, c.SuspectAfter)}
		}
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
