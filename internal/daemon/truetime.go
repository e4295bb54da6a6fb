package daemon

import (
	"fmt"
	"log/slog"
	"math"
	"time"

	"github.com/synclab/synclab/internal/ctl"
	"github.com/synclab/synclab/pkg/clock"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/truetime"
)

// TrueTime publishes the bound the core keeps on the true time to
// applications, in a shared page (pkg/truetime): timed.
type TrueTime struct {
	// Path is the page's file (its directory must exist, or be the
	// control socket's, which the daemon creates). Required.
	Path string
	// StaleAfter is the age after which readers refuse the page. Default
	// DefaultTrueTimeStaleAfter; at least twice TrueTimeInterval.
	StaleAfter time.Duration
	// Bound returns the core's bound at clock reading now; false when it
	// has none. Called holding the loop's lock.
	Bound func(c core.Core, now time.Time) (TrueTimeBound, bool)
}

// TrueTimeBound is a core's bound: the true time lies in [Earliest,
// Latest] when the clock reads the time it was asked for, and moves away
// from later readings at GrowthPPM at most, the slew in progress aside.
type TrueTimeBound struct {
	Earliest, Latest time.Time
	GrowthPPM        float64
	// Pending is the slew the core counts on the clock still to make
	// (positive forward): the bound assumes the rest was made.
	Pending time.Duration
	// GroupTime: the Berkeley group's time, not UTC.
	GroupTime bool
}

// TrueTimeInterval is how often the daemon publishes at least (it also
// publishes with every clock adjustment).
const TrueTimeInterval = time.Second

// DefaultTrueTimeStaleAfter is TrueTime.StaleAfter's default: ten
// publications missed.
const DefaultTrueTimeStaleAfter = 10 * time.Second

// TrueTimeStatus is the page in the daemon's status.
type TrueTimeStatus struct {
	Path string `json:"path"`
	// Publications since the start; Bound: the last one held a bound.
	Publications uint64 `json:"publications"`
	Bound        bool   `json:"bound"`
	// HalfWidthNS is the last bound's larger side from the clock's
	// reading, at its publication.
	HalfWidthNS int64 `json:"half_width_ns,omitempty"`
	// SlewMissMaxNS is the largest difference seen between the slew the
	// clock had left and the one the core counted on (a slew the clock
	// refused, or made otherwise than the discipline models it; no
	// longer one applied later than decided, which the core is told of):
	// the page's bound was widened by it on the slew's side.
	SlewMissMaxNS int64 `json:"slew_miss_max_ns,omitempty"`
}

func (t *TrueTime) validate() error {
	if t.Path == "" {
		return fmt.Errorf("daemon: TrueTime.Path is required")
	}
	if t.StaleAfter == 0 {
		t.StaleAfter = DefaultTrueTimeStaleAfter
	}
	if t.StaleAfter < 2*TrueTimeInterval {
		return fmt.Errorf("the truetime stale limit %v is shorter than two publications (%v): readers would fail between them", t.StaleAfter, 2*TrueTimeInterval)
	}
	if t.Bound == nil {
		return fmt.Errorf("daemon: TrueTime.Bound is required")
	}
	return nil
}

// openTrueTime creates the page, given to the control group if any.
func (d *Daemon) openTrueTime() error {
	gid := -1
	if g := d.cfg.ControlGroup; g != "" {
		n, err := ctl.LookupGroup(g)
		if err != nil {
			return fmt.Errorf("control group %q: %w", g, err)
		}
		gid = int(n)
	}
	pub, err := truetime.Create(d.cfg.TrueTime.Path, gid)
	if err != nil {
		return fmt.Errorf("%w (--truetime-file none turns publishing off)", err)
	}
	d.tt = pub
	d.publishTrueTime()
	return nil
}

// adjusting marks the page mid-write before the clock is changed (a
// frequency, a slew, a step), so that no reader combines the publication
// with a clock that no longer runs as it says; publishTrueTime ends it.
func (d *Daemon) adjusting(adjs []clock.Adjustment) {
	if d.tt == nil || d.cfg.SkipAdjust {
		return
	}
	for _, a := range adjs {
		if a.Kind != clock.AdjustSync {
			d.tt.Begin()
			return
		}
	}
}

// publishTrueTime writes the page: the core's bound at a fresh clock
// reading, mapped onto CLOCK_REALTIME (the same clock for --clock system;
// the simulated clock's true time for --clock sim), with the slew left.
// Called holding d.mu.
func (d *Daemon) publishTrueTime() {
	if d.tt == nil {
		return
	}
	cfg := d.cfg.TrueTime
	r1 := time.Now()
	now := d.cfg.Clock.Now()
	r2 := time.Now()
	pub := truetime.Publication{Base: r1, StaleAfter: cfg.StaleAfter, Interval: TrueTimeInterval}
	if d.cfg.ClockName == "sim" {
		pub.Flags |= truetime.FlagSimulated
	}
	st, err := d.cfg.Clock.State()
	if err != nil {
		// Without the slew the clock has left, no bound can be published
		// (readers get "unsynchronised" until the next publication).
		d.alerts.report(time.Now(), slog.LevelWarn, "truetime_clock_state", 0, time.Minute,
			"reading the clock's state for the truetime page failed, so it holds no bound: "+err.Error())
	}
	b, ok := cfg.Bound(d.node.Core(), now)
	if ok && err == nil && !b.Latest.Before(b.Earliest) && b.GrowthPPM >= 0 && b.GrowthPPM < 1e6 {
		// The bound holds when the clock read now, between r1 and r2: at
		// r1 the true time was up to r2 - r1 earlier (10% for a clock
		// slewing fast, and a nanosecond for rounding).
		gap := (r2.Sub(r1)*11)/10 + 1
		pub.Earliest, pub.Latest = b.Earliest.Add(-gap), b.Latest
		// The core's bound is centred on the clock having made all but
		// b.Pending of its slews; the clock says what it has left. A slew
		// applied later than the tick that decided it no longer makes
		// them differ (the core learns when the clock took it:
		// core.Adjuster). What still can: a slew the clock refused while
		// other adjustments went through (adjust_failed), a clock that
		// slews otherwise than the discipline models it (the kernel's
		// rate, a slew another program set), and the model's own
		// approximations (it leaves the frequency out of the slew's
		// rate: ppm of the slew). The clock has then made that much less
		// or more, and the true time may lie that much further on the
		// slew's side: the page is widened by it, and status shows the
		// largest seen.
		if miss := st.SlewLeft - b.Pending; miss < 0 {
			pub.Earliest = pub.Earliest.Add(miss)
		} else {
			pub.Latest = pub.Latest.Add(miss)
		}
		d.ttMiss = max(d.ttMiss, st.SlewLeft-b.Pending, b.Pending-st.SlewLeft)
		pub.GrowthPPB = uint64(math.Ceil(b.GrowthPPM * 1e3))
		pub.Slew = st.SlewLeft
		pub.Flags |= truetime.FlagSynchronised
		if b.GroupTime {
			pub.Flags |= truetime.FlagGroupTime
		}
		d.ttHalf = max(pub.Latest.Sub(r1), r1.Sub(pub.Earliest))
	} else {
		d.ttHalf = 0
	}
	d.tt.Publish(pub)
	d.ttBound = pub.Flags&truetime.FlagSynchronised != 0
}

func (d *Daemon) trueTimeStatus() *TrueTimeStatus {
	if d.tt == nil {
		return nil
	}
	return &TrueTimeStatus{Path: d.tt.Path(), Publications: d.tt.Published(), Bound: d.ttBound, HalfWidthNS: int64(d.ttHalf), SlewMissMaxNS: int64(d.ttMiss)}
}
