package client

import (
	"fmt"
	"maps"
	"math/bits"
	"time"

	"github.com/synclab/synclab/pkg/timesync/ntp"
	"github.com/synclab/synclab/pkg/wire"
)

// Status is the client's view, like `chronyc tracking` followed by
// `chronyc sources`. Offsets are reference minus local (positive: the
// local clock is behind); durations are in nanoseconds.
type Status struct {
	Now          time.Time `json:"now,omitzero"` // local clock at the last tick
	Synchronized bool      `json:"synchronized"`
	// MeasureOnly: the clock is measured, never corrected (Config.NoAdjust;
	// timed run --no-adjust). Offsets are the clock's as it is, and the
	// frequency is the correction that would be made.
	MeasureOnly bool `json:"measure_only,omitempty"`
	// LocalReference is true when the host serves its own clock
	// (Config.LocalStratum) for want of a better source.
	LocalReference bool   `json:"local_reference,omitempty"`
	Stratum        uint8  `json:"stratum"`
	ReferenceID    string `json:"reference_id"`
	SysPeer        string `json:"sys_peer,omitempty"`
	// Selection is "ok" or why the last selection failed.
	Selection string `json:"selection"`

	OffsetNS          int64   `json:"offset_ns"`      // predicted offset at Now
	LastOffsetNS      int64   `json:"last_offset_ns"` // offset acted on at the last update
	FrequencyPPM      float64 `json:"frequency_ppm"`
	FrequencyErrorPPM float64 `json:"frequency_error_ppm"`
	SystemJitterNS    int64   `json:"system_jitter_ns"`
	RootDelayNS       int64   `json:"root_delay_ns"`
	RootDispersionNS  int64   `json:"root_dispersion_ns"`
	RootDistanceNS    int64   `json:"root_distance_ns"` // λ of the last update
	// The error bound at Now (servo.Servo.Bound): true time lies in
	// [Earliest, Latest]; equivalently the local clock's error (local
	// minus true) lies in [-BoundHighNS, -BoundLowNS], and
	// ErrorBoundNS is the larger of |BoundLowNS| and |BoundHighNS|.
	// Zero before the first update.
	Earliest     time.Time `json:"earliest,omitzero"`
	Latest       time.Time `json:"latest,omitzero"`
	BoundLowNS   int64     `json:"bound_low_ns"`
	BoundHighNS  int64     `json:"bound_high_ns"`
	ErrorBoundNS int64     `json:"error_bound_ns"`
	LastUpdate   time.Time `json:"last_update,omitzero"` // local time of the last measurement used
	Updates      int       `json:"updates"`
	// SmoothedUpdates counts the updates whose phase came from the
	// frequency regression's line rather than the measurement alone.
	SmoothedUpdates int `json:"smoothed_updates"`

	Sources  []SourceStatus    `json:"sources"`
	Counters map[string]uint64 `json:"counters"`
	// Broadcast is the broadcast client's part (Config.Broadcast); nil
	// when it is off.
	Broadcast *BroadcastClientStatus `json:"broadcast,omitempty"`
}

// SourceStatus is one source, like a line of `chronyc sources`.
type SourceStatus struct {
	Address     string `json:"address"`
	Mode        string `json:"mode"` // "server", "peer", "cristian" or "broadcast"
	Stratum     uint8  `json:"stratum"`
	ReferenceID string `json:"reference_id,omitempty"`
	Reach       string `json:"reach"` // the reach register, octal ("377": the last 8 polls answered)
	Poll        int8   `json:"poll"`  // log2 s
	// The clock filter's estimate.
	OffsetNS       int64 `json:"offset_ns"`
	DelayNS        int64 `json:"delay_ns"`
	DispersionNS   int64 `json:"dispersion_ns"`
	JitterNS       int64 `json:"jitter_ns"`
	RootDistanceNS int64 `json:"root_distance_ns"` // λ at the last selection
	// The last sample.
	LastOffsetNS int64     `json:"last_offset_ns"`
	LastDelayNS  int64     `json:"last_delay_ns"`
	LastSample   time.Time `json:"last_sample,omitzero"`
	Samples      int       `json:"samples"` // in the filter

	// Verdict: sys_peer, combined, outlier, falseticker, excess,
	// unreachable, bad_stratum, too_far, loop, no_majority (from the
	// selection), or candidate (selection not run since), collecting
	// (fewer than Config.MinSamples samples), no_estimate,
	// stopped (kiss-o'-death DENY/RSTR), self (this host: Config.Self,
	// never polled), calibrating (a broadcaster whose delay is being
	// measured). Why explains it.
	Verdict string `json:"verdict"`
	Why     string `json:"why,omitempty"`

	Received  uint64 `json:"received"`
	Accepted  uint64 `json:"accepted"`
	LastError string `json:"last_error,omitempty"`
	// Interleaved mode (Config.Interleaved; "" when off): "interleaved"
	// (the last answer was), "basic" (the server answers interleaved
	// requests in basic mode; InterleavedWhy says what that means), or
	// "starting" (the first answers are basic until the server holds a
	// stamp of ours). The counts are of valid answers.
	Interleaved        string `json:"interleaved,omitempty"`
	InterleavedWhy     string `json:"interleaved_why,omitempty"`
	InterleavedAnswers uint64 `json:"interleaved_answers,omitempty"`
	BasicAnswers       uint64 `json:"basic_answers,omitempty"`
	// Several samples a poll (Config.PollSamples > 1): how many requests
	// of the last whole poll the server answered, and, when it has
	// answered only one a poll for a while (it drops the rest),
	// PollSamplesWhy says so and what to do.
	PollSamplesAnswered int    `json:"poll_samples_answered,omitempty"`
	PollSamplesWhy      string `json:"poll_samples_why,omitempty"`
	// Cristian sources: the last burst's best round (package cristian):
	// its round trip, the accuracy ±(RTT/2 - min) of its estimate, and
	// how many replies the burst had.
	CristianRTTNS      int64 `json:"cristian_rtt_ns,omitempty"`
	CristianAccuracyNS int64 `json:"cristian_accuracy_ns,omitempty"`
	CristianRounds     int   `json:"cristian_rounds,omitempty"`
	// Broadcast sources: calibration and delays.
	Broadcast *BroadcastStatus `json:"broadcast,omitempty"`
}

// Status returns the client's view (a Status value) for `timed status`.
func (c *Client) Status() any { return c.Report() }

// Report returns the client's view at the last tick.
func (c *Client) Report() Status {
	now := c.now
	st := Status{
		Now:          now,
		Synchronized: c.Synchronized(),
		MeasureOnly:  c.cfg.NoAdjust,
		Selection:    "ok",
		Counters:     maps.Clone(c.counters),
	}
	for label, n := range c.bugs.Counts() {
		st.Counters["bug_"+label] = n
	}
	sys := c.sysAt(now)
	st.Stratum, st.RootDelayNS, st.RootDispersionNS = sys.Stratum, int64(sys.RootDelay), int64(sys.RootDispersion)
	st.ReferenceID = refIDString(sys)
	st.LocalReference = !st.Synchronized && c.cfg.LocalStratum > 0
	if c.sysPeer != nil {
		st.SysPeer = c.sysPeer.addr.String()
	}
	if c.selErr != nil {
		st.Selection = c.selErr.Error()
	} else if !c.hasSel {
		st.Selection = "not run yet"
	}
	if c.hasSel && c.selErr == nil {
		st.SystemJitterNS = int64(c.sel.Jitter)
	}
	ss := c.servo.State()
	st.FrequencyPPM, st.FrequencyErrorPPM = ss.Frequency, ss.FrequencyError
	st.LastOffsetNS, st.RootDistanceNS, st.LastUpdate, st.Updates = int64(ss.LastOffset), int64(ss.RootDistance), ss.LastUpdate, ss.Updates
	st.SmoothedUpdates = ss.Smoothed
	if off, ok := c.servo.Offset(now); ok {
		st.OffsetNS = int64(off)
		lo, hi := c.servo.Bound(now)
		st.Earliest, st.Latest = lo, hi
		st.BoundLowNS, st.BoundHighNS = int64(lo.Sub(now)), int64(hi.Sub(now))
		st.ErrorBoundNS = max(st.BoundHighNS, -st.BoundLowNS, 0)
	}
	for _, s := range c.srcs {
		st.Sources = append(st.Sources, c.sourceStatus(s))
	}
	for _, s := range c.cfg.Self {
		st.Sources = append(st.Sources, SourceStatus{Address: s.Addr.String(), Mode: s.Mode, Reach: "0",
			Verdict: VerdictSelf, Why: s.Why + ": a clock cannot follow itself, not polled"})
	}
	st.Broadcast = c.broadcastStatus()
	switch {
	case len(c.srcs) == 0 && st.Broadcast != nil:
		st.Selection = "no broadcast heard yet on " + st.Broadcast.Listen
	case len(c.srcs) == 0:
		st.Selection = "no source to follow: every one configured is this host"
	}
	return st
}

// VerdictSelf is the verdict of a configured source that is this host
// (Config.Self).
const VerdictSelf = "self"

func refIDString(sys ntp.System) string {
	if sys.Stratum <= 1 || sys.Stratum >= wire.StratumUnsynchronized || sys.ReferenceID == wire.RefIDFromText("LOCL") {
		if t := wire.RefIDText(sys.ReferenceID); t != "" {
			return t
		}
	}
	id := sys.ReferenceID
	return fmt.Sprintf("%d.%d.%d.%d", byte(id>>24), byte(id>>16), byte(id>>8), byte(id))
}

func (c *Client) sourceStatus(s *source) SourceStatus {
	ss := SourceStatus{
		Address:  s.addr.String(),
		Mode:     s.kind(),
		Reach:    fmt.Sprintf("%o", s.poller.Reach()),
		Poll:     s.pollExp(),
		Samples:  s.filter.Len(),
		Received: s.received,
		Accepted: s.accepted,
	}
	ss.LastError = s.lastErr
	if s.assoc == nil {
		// A Cristian source: no association.
	} else if xl, ok := s.assoc.Interleaved(); ok {
		ss.InterleavedAnswers, ss.BasicAnswers = xl.Answers, xl.Basic
		switch {
		case xl.BasicRun >= xleaveBasicRun:
			ss.Interleaved = "basic"
			ss.InterleavedWhy = fmt.Sprintf("the last %d answers to interleaved requests were basic: the server does not speak interleaved mode "+
				"(ntpd, timed before 2026-12-06) or lost our stamps (restart, full table); its samples carry its send path", xl.BasicRun)
		case xl.Answers > 0 && xl.BasicRun == 0:
			ss.Interleaved = "interleaved"
		default:
			ss.Interleaved = "starting"
		}
	}
	if c.multiSample(s) {
		ss.PollSamplesAnswered = s.lastAnswers
		if s.single {
			ss.PollSamplesWhy = fmt.Sprintf("answered 1 of the %d requests in %d of the last 8 polls (--poll-samples %d): %s",
				c.cfg.PollSamples, bits.OnesCount8(s.singleReg), c.cfg.PollSamples, pollSingleWhy)
		}
	}
	if p, ok := s.peerVars(); ok {
		ss.Stratum = p.Stratum
		ss.ReferenceID = refIDString(ntp.System{Stratum: p.Stratum, ReferenceID: p.ReferenceID})
	}
	est, hasEst := s.estimate()
	if hasEst {
		ss.OffsetNS, ss.DelayNS = int64(est.Offset), int64(est.Delay)
		ss.DispersionNS, ss.JitterNS = int64(est.DispersionAt(c.now)), int64(est.Jitter)
	}
	if s.hasLast {
		ss.LastOffsetNS, ss.LastDelayNS, ss.LastSample = int64(s.last.Offset), int64(s.last.Delay), s.last.Time
	}
	if s.hasCand {
		ss.RootDistanceNS = int64(s.cand.RootDistance)
	}
	if s.bcast != nil {
		ss.Broadcast = c.sourceBroadcast(s)
		ss.Reach = "0"
		if c.reachable(s) {
			ss.Reach = "377"
		}
	}
	if s.hasCPeer {
		ss.CristianRTTNS, ss.CristianAccuracyNS, ss.CristianRounds = int64(s.lastRound.RTT), int64(s.lastRound.Accuracy), s.lastRound.Rounds
	}
	ss.Verdict, ss.Why = c.verdict(s, hasEst)
	return ss
}

// verdict says what the client makes of a source, and why.
func (c *Client) verdict(s *source, hasEst bool) (string, string) {
	switch {
	case s.stopped != "":
		return "stopped", fmt.Sprintf("kiss-o'-death %s: the source refuses us; polling stopped", s.stopped)
	case s.bcast != nil && !c.reachable(s):
		return ntp.VerdictUnreachable.String(), fmt.Sprintf("no broadcast for %v", c.cfg.Broadcast.Timeout)
	case s.bcast != nil && !s.bcast.calibrated:
		why := "measuring the one-way delay with client/server exchanges: " + s.bcast.why
		if s.lastErr != "" {
			why += "; " + s.lastErr
		}
		return "calibrating", why
	case !s.poller.Reachable() && s.hasLast && s.bcast == nil:
		return ntp.VerdictUnreachable.String(), "none of the last 8 polls was answered"
	case !hasEst:
		why := "waiting for a valid answer"
		if s.lastErr != "" {
			why = "last packet refused: " + s.lastErr
		}
		return "no_estimate", why
	case s.filter.Len() < c.cfg.MinSamples:
		return "collecting", fmt.Sprintf("%d of the %d samples needed before selection", s.filter.Len(), c.cfg.MinSamples)
	case s.verdict == 0:
		return "candidate", "not selected yet"
	}
	sel := c.sel
	var why string
	switch s.verdict {
	case ntp.VerdictSysPeer:
		why = "best survivor: the clock follows it"
	case ntp.VerdictCombined:
		why = "survivor: combined into the system offset"
	case ntp.VerdictOutlier:
		why = "truechimer pruned by clustering: its offset is far from the other survivors'"
	case ntp.VerdictFalseticker:
		why = fmt.Sprintf("its interval %v±%v misses the majority's intersection [%v, %v]",
			s.cand.Offset, s.cand.RootDistance, sel.Low, sel.High)
	case ntp.VerdictExcess:
		why = "truechimer beyond the best sources used"
	case ntp.VerdictUnreachable:
		why = "none of the last 8 polls was answered"
	case ntp.VerdictStratum:
		why = fmt.Sprintf("stratum %d is unusable", s.cand.Stratum)
		if c.cfg.LocalStratum > 0 && s.cand.Stratum >= c.cfg.LocalStratum {
			why = fmt.Sprintf("stratum %d is no better than our local stratum %d", s.cand.Stratum, c.cfg.LocalStratum)
		}
	case ntp.VerdictTooFar:
		why = fmt.Sprintf("root distance %v beyond %v", s.cand.RootDistance, ntp.MaxDistance)
	case ntp.VerdictLoop:
		why = "it synchronises to us (timing loop)"
	case ntp.VerdictNoMajority:
		why = "no majority of sources agree"
		if c.selErr != nil {
			why = c.selErr.Error()
		}
	}
	return s.verdict.String(), why
}
