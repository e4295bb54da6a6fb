package berkeley

import (
	"maps"
	"time"

	"github.com/synclab/synclab/pkg/elect"
)

// Status is what `timed status --json` shows of Berkeley mode.
type Status struct {
	// Role is "master" or "worker" (or "candidate" during an election).
	Role string `json:"role"`
	// Master is the master's ID (0: none known) and Term its term.
	Master uint32 `json:"master"`
	Term   uint64 `json:"term"`
	// LastRound is the master's last computed round (masters only).
	LastRound *RoundReport `json:"last_round,omitempty"`
	// LastAdjust is the last correction this node received as a worker.
	LastAdjust *AdjustReport `json:"last_adjust,omitempty"`
	// Synchronized says whether a correction was applied; the error bound
	// (relative to the group's time) and the frequency correction follow.
	Synchronized bool              `json:"synchronized"`
	ErrorBoundNS int64             `json:"error_bound_ns"`
	FrequencyPPM float64           `json:"frequency_ppm"`
	Counters     map[string]uint64 `json:"counters"`
	Election     elect.Status      `json:"election"`
}

// RoundReport is one computed round.
type RoundReport struct {
	Term   uint64    `json:"term"`
	Round  uint32    `json:"round"`
	At     time.Time `json:"at"`
	Clocks int       `json:"clocks"` // clocks read: the master's and every usable reading
	// Method is "average" (the largest agreeing set, a majority, is
	// averaged) or "median" (no majority agreed: every clock goes to the
	// median one); empty when the round was skipped.
	Method             string `json:"method,omitempty"`
	Agreeing           int    `json:"agreeing"`   // clocks in the largest set within the threshold, the master's included
	Averaged           int    `json:"averaged"`   // clocks averaged: the agreeing ones but the f highest and lowest (1 for the median)
	AverageNS          int64  `json:"average_ns"` // the group's time, relative to the master's clock
	SpreadNS           int64  `json:"spread_ns"`  // of the averaged clocks
	SteerNS            int64  `json:"steer_ns"`   // added to every correction to hold the group's rate (see Config.FrequencyPull)
	MasterCorrectionNS int64  `json:"master_correction_ns"`
	// Skipped says why nobody was corrected this round (fewer than half
	// the members' clocks read); empty when corrections went out.
	Skipped string         `json:"skipped,omitempty"`
	Members []MemberReport `json:"members"`
}

// MemberReport is one worker in a round.
type MemberReport struct {
	ID       uint32 `json:"id"`
	Answered bool   `json:"answered"`
	RTTNS    int64  `json:"rtt_ns"`
	OffsetNS int64  `json:"offset_ns"` // its clock minus the master's
	Excluded bool   `json:"excluded"`
	// Why: "no reading", "rtt" (round trip above the maximum), "disagrees"
	// (outside the largest agreeing set).
	Why          string `json:"why,omitempty"`
	CorrectionNS int64  `json:"correction_ns"`
	Acked        bool   `json:"acked"`
}

// AdjustReport is a correction a worker applied.
type AdjustReport struct {
	Term         uint64    `json:"term"`
	Round        uint32    `json:"round"`
	CorrectionNS int64     `json:"correction_ns"`
	ErrorNS      int64     `json:"error_ns"`
	At           time.Time `json:"at"`
}

// Status implements core.Core.
func (c *Core) Status() any { return c.Report() }

// Report returns the status.
func (c *Core) Report() Status {
	lead, term, _ := c.elect.Leader()
	st := Status{
		Role:         "worker",
		Master:       lead,
		Term:         term,
		LastAdjust:   c.lastAdjust,
		Synchronized: c.servo.Synchronized(),
		FrequencyPPM: c.servo.Frequency(),
		Counters:     maps.Clone(c.counters),
		Election:     c.elect.Report(),
	}
	for label, n := range c.bugs.Counts() {
		st.Counters["bug_"+label] = n
	}
	switch {
	case c.leading != 0:
		st.Role = "master"
		st.LastRound = c.last
	case c.elect.Role() == elect.RoleCandidate:
		st.Role = "candidate"
	}
	if lo, hi := c.servo.Bound(c.now); !lo.IsZero() {
		st.ErrorBoundNS = int64(max(hi.Sub(c.now), c.now.Sub(lo)))
	}
	return st
}
