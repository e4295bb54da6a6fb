package quorum

import (
	"errors"
	"fmt"
	"slices"
	"time"
)

// ProbeConfig is a Probe's retry policy.
type ProbeConfig struct {
	// Timeout is how long after a send the silent members are asked again
	// (or, after the last try, the probe is over). Required, > 0.
	Timeout time.Duration
	// Tries is how many times a member may be asked in all (>= 1).
	Tries int
}

// ErrProbeConfig: a policy no probe can follow.
var ErrProbeConfig = errors.New("quorum: invalid probe config")

func (c ProbeConfig) validate() error {
	if c.Timeout <= 0 || c.Tries < 1 {
		return fmt.Errorf("%w: Timeout %v must be positive, Tries %d at least 1", ErrProbeConfig, c.Timeout, c.Tries)
	}
	return nil
}

// Probe is one question to a set of members under a nonce. Not safe for
// concurrent use.
type Probe struct {
	cfg      ProbeConfig
	Nonce    uint32
	asked    []uint32 // sorted
	answered map[uint32]bool
	// Started is the first send (what a confirmation dates from), Tried
	// the latest, Tries the sends so far.
	Started, Tried time.Time
	Tries          int
	over           bool
}

// Start begins a probe of asked (the members to ask, self excluded) under
// nonce at now: the caller sends the question to every asked member now.
func Start(now time.Time, cfg ProbeConfig, nonce uint32, asked []uint32) (*Probe, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	a := slices.Clone(asked)
	slices.Sort(a)
	a = slices.Compact(a)
	return &Probe{cfg: cfg, Nonce: nonce, asked: a, answered: map[uint32]bool{}, Started: now, Tried: now, Tries: 1}, nil
}

// Asked reports whether id was asked.
func (p *Probe) Asked(id uint32) bool {
	_, ok := slices.BinarySearch(p.asked, id)
	return ok
}

// AskedIDs returns the members asked, sorted.
func (p *Probe) AskedIDs() []uint32 { return slices.Clone(p.asked) }

// Answer records that id answered under nonce, and reports whether the
// answer is new and for this probe: an answer under another nonce (an
// earlier probe's), a second one from the same member, or one after the
// probe is over, is not. The caller checks that id is a member; one that
// was not asked counts (a broadcast question reaches members that were
// taken for down when it started), and a caller that asked one member only
// checks Asked.
func (p *Probe) Answer(id uint32, nonce uint32) bool {
	if p.over || nonce != p.Nonce || p.answered[id] {
		return false
	}
	p.answered[id] = true
	return true
}

// Answered reports whether id answered.
func (p *Probe) Answered(id uint32) bool { return p.answered[id] }

// Count is how many answered.
func (p *Probe) Count() int { return len(p.answered) }

// All reports whether every asked member answered.
func (p *Probe) All() bool { return len(p.answered) == len(p.asked) }

// Silent returns the asked members that have not answered, sorted.
func (p *Probe) Silent() []uint32 {
	var out []uint32
	for _, id := range p.asked {
		if !p.answered[id] {
			out = append(out, id)
		}
	}
	return out
}

// Deadline is when Tick next has something to do (zero once over).
func (p *Probe) Deadline() time.Time {
	if p.over {
		return time.Time{}
	}
	return p.Tried.Add(p.cfg.Timeout)
}

// Tick, at now, returns the members to ask again (the silent ones that
// reachable says may be asked: a member known down is not), if the timeout
// passed and tries are left; when none are left to ask, or the tries ran
// out, the probe is over and Tick reports over (the caller decides on what
// it got).
func (p *Probe) Tick(now time.Time, reachable func(uint32) bool) (again []uint32, over bool) {
	if p.over {
		return nil, true
	}
	if now.Before(p.Deadline()) {
		return nil, false
	}
	if p.Tries < p.cfg.Tries {
		for _, id := range p.Silent() {
			if reachable == nil || reachable(id) {
				again = append(again, id)
			}
		}
		if len(again) > 0 {
			p.Tries++
			p.Tried = now
			return again, false
		}
	}
	p.over = true
	return nil, true
}

// Over reports whether the probe ended (Tick said so, or End).
func (p *Probe) Over() bool { return p.over }

// End ends the probe early (the caller has what it needs).
func (p *Probe) End() { p.over = true }
