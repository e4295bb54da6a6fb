package timedcore

import (
	"fmt"
	"strings"
	"time"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/timesync/berkeley"
	"github.com/synclab/synclab/pkg/timesync/client"
	"github.com/synclab/synclab/pkg/timesync/server"
	"github.com/synclab/synclab/pkg/wire"
)

// The states of Sync.
const (
	// StateSynchronised: the clock follows Source, within ErrorBoundNS.
	StateSynchronised = "synchronised"
	// StateLocalReference: this host is the lab's reference: it serves its
	// own clock at a local stratum (timed run --serve --stratum N) and has
	// no other source to follow. Nothing to be synchronised to, so no
	// error bound; it counts as synchronised, as chrony's "local stratum"
	// does for chronyc waitsync.
	StateLocalReference = "local_reference"
	// StateUnsynchronised: not (yet, or no longer) synchronised; Why says
	// why.
	StateUnsynchronised = "unsynchronised"
	// StateMeasuring: --no-adjust: the clock is measured, never corrected.
	StateMeasuring = "measuring"
)

// Sync is timed's one answer to "is this clock synchronised, and how
// well": the first line of `timed status`, its exit code, what `timed
// waitsync` waits for and what synclab_time_* metrics say. Its error bound
// is the discipline's own (the NTP client's or Berkeley's, servo.Bound):
// the true time (or the group's) lies within ErrorBoundNS of the clock.
type Sync struct {
	State string `json:"state"`
	// Synchronized is true in StateSynchronised and StateLocalReference.
	Synchronized bool `json:"synchronized"`
	// Source is what the clock follows ("10.0.0.1:123 (stratum 2)", "the
	// Berkeley group's time (master 3)"), or, as the lab's reference, "its
	// own clock at local stratum 8".
	Source string `json:"source,omitempty"`
	// ErrorBoundNS is the bound, only when synchronised to a source: there
	// is none otherwise (never 0 for "unknown").
	ErrorBoundNS *int64 `json:"error_bound_ns,omitempty"`
	// Why explains a state that is not synchronised (and a local
	// reference's meaning).
	Why string `json:"why,omitempty"`
	// Never: this configuration never synchronises the clock (measuring
	// only, nothing to follow): waiting for it is pointless.
	Never bool `json:"never,omitempty"`
}

// SyncOf sums up the parts' statuses (Status does it: this is for a
// Status built by hand, in tests).
func SyncOf(st Status) Sync {
	if cs, ok := st.Client.(client.Status); ok {
		return clientSync(cs)
	}
	if bs, ok := st.Cluster.(berkeley.Status); ok {
		return berkeleySync(bs)
	}
	if st.Server != nil {
		return serverSync(st.Server)
	}
	return Sync{State: StateUnsynchronised, Never: true,
		Why: "timed keeps no time here: it follows no source (--server, --peer, --mode berkeley) and serves none (--serve)"}
}

func clientSync(cs client.Status) Sync {
	var real, self []client.SourceStatus
	for _, s := range cs.Sources {
		if s.Verdict == client.VerdictSelf {
			self = append(self, s)
		} else {
			real = append(real, s)
		}
	}
	switch {
	case cs.MeasureOnly:
		return Sync{State: StateMeasuring, Never: true, Why: "--no-adjust: timed measures this clock and never corrects it"}
	case cs.Synchronized:
		src := "the combined sources"
		for _, s := range real {
			if s.Address == cs.SysPeer {
				src = fmt.Sprintf("%s (stratum %d)", s.Address, s.Stratum)
			}
		}
		bound := cs.ErrorBoundNS
		return Sync{State: StateSynchronised, Synchronized: true, Source: src, ErrorBoundNS: &bound}
	case len(real) == 0 && cs.Broadcast != nil:
		why := "no broadcast heard yet on " + cs.Broadcast.Listen
		if cs.Broadcast.LastRefused != "" {
			why = fmt.Sprintf("no broadcast followed yet on %s; the last was refused: %s", cs.Broadcast.Listen, cs.Broadcast.LastRefused)
		}
		return Sync{State: StateUnsynchronised, Why: why}
	case len(real) == 0 && cs.LocalReference:
		return Sync{State: StateLocalReference, Synchronized: true, Source: fmt.Sprintf("its own clock at local stratum %d", cs.Stratum),
			Why: fmt.Sprintf("%s is this host, and no other source is configured", addrs(self))}
	case len(real) == 0:
		return Sync{State: StateUnsynchronised, Never: true,
			Why: fmt.Sprintf("nothing to follow: %s is this host (give another --server, or --serve with --stratum to be the lab's reference)", addrs(self))}
	}
	why := unsyncWhy(cs, real)
	if cs.LocalReference {
		why += fmt.Sprintf("; meanwhile this host serves its own clock at local stratum %d", cs.Stratum)
	}
	return Sync{State: StateUnsynchronised, Why: why}
}

// unsyncWhy says why a client with sources is not synchronised.
func unsyncWhy(cs client.Status, real []client.SourceStatus) string {
	var silent []string
	for _, s := range real {
		if s.Received == 0 {
			silent = append(silent, s.Address)
		}
	}
	if len(silent) == len(real) {
		return "no answer yet from " + strings.Join(silent, ", ")
	}
	if cs.Updates > 0 {
		// It was synchronised, and its bound has grown past the limit.
		return "no clock update for too long: the error bound grew past 16 s (" + cs.Selection + ")"
	}
	var collecting []string
	for _, s := range real {
		if s.Verdict == "collecting" {
			collecting = append(collecting, s.Address+": "+s.Why)
		}
	}
	if len(collecting) > 0 {
		return "collecting samples (" + strings.Join(collecting, "; ") + ")"
	}
	if cs.Selection != "ok" {
		return "no source selected: " + cs.Selection
	}
	return "waiting for the first clock update"
}

func berkeleySync(bs berkeley.Status) Sync {
	master := "none known (election in progress)"
	if bs.Master != 0 {
		master = fmt.Sprint(bs.Master)
	}
	if !bs.Synchronized {
		return Sync{State: StateUnsynchronised, Why: "no Berkeley correction applied yet (master " + master + ")"}
	}
	bound := bs.ErrorBoundNS
	return Sync{State: StateSynchronised, Synchronized: true, Source: "the Berkeley group's time (master " + master + ")", ErrorBoundNS: &bound}
}

func serverSync(s *server.Status) Sync {
	if s.LocalStratum != 0 {
		return Sync{State: StateLocalReference, Synchronized: true, Source: fmt.Sprintf("its own clock at local stratum %d", s.LocalStratum),
			Why: "no source is configured"}
	}
	return Sync{State: StateUnsynchronised, Never: true,
		Why: fmt.Sprintf("timed serves this clock at stratum %d (unsynchronised) and follows no source: give --server to follow one, or --stratum to serve as the lab's reference", wire.StratumUnsynchronized)}
}

func addrs(ss []client.SourceStatus) string {
	var a []string
	for _, s := range ss {
		a = append(a, s.Address)
	}
	return strings.Join(a, ", ")
}

// syncMetrics exports Sync: whether the clock is synchronised and its
// error bound, one name for every mode.
func syncMetrics(m *core.MetricSet, s Sync) {
	m.GaugeBool("synclab_time_synchronized", "1 if timed holds this clock synchronised (to a source, or as the lab's local reference), else 0.", s.Synchronized)
	if s.ErrorBoundNS != nil {
		m.Gauge("synclab_time_error_bound_seconds", "The error bound timed keeps: true time lies within this of the clock (only while synchronised to a source).", float64(*s.ErrorBoundNS)/1e9)
	}
}

// Window is the discipline's bound as timed publishes it to applications
// (pkg/truetime): the true time, or the Berkeley group's, lies within
// [Earliest, Latest] when the clock reads the time Window was asked for,
// and the interval moves away from later clock readings at GrowthPPM at
// most, besides the slew in progress.
type Window struct {
	Earliest, Latest time.Time
	GrowthPPM        float64
	// Pending is the slew the discipline counts on the clock still to
	// make (servo.Servo.Pending), positive forward: the bound's centre
	// assumes the rest was made.
	Pending time.Duration
	// GroupTime: the bound is on the Berkeley group's time, not UTC.
	GroupTime bool
}

// bounder is a discipline that keeps a bound: the NTP client, Berkeley.
type bounder interface {
	Synchronized() bool
	Bound(now time.Time) (earliest, latest time.Time)
	BoundGrowthPPM() float64
	Pending(now time.Time) time.Duration
}

// Window returns the discipline's bound at clock reading now; false when
// there is none: not synchronised to a source (as Sync says), measuring
// only, or the lab's local reference (nothing to be synchronised to).
func (c *Core) Window(now time.Time) (Window, bool) {
	if b, ok := c.cfg.Client.(bounder); ok {
		return window(b, now, false)
	}
	if b, ok := c.cfg.Cluster.(bounder); ok {
		return window(b, now, true)
	}
	return Window{}, false
}

func window(b bounder, now time.Time, group bool) (Window, bool) {
	if !b.Synchronized() {
		return Window{}, false
	}
	lo, hi := b.Bound(now)
	if lo.IsZero() || hi.IsZero() {
		return Window{}, false
	}
	return Window{Earliest: lo, Latest: hi, GrowthPPM: b.BoundGrowthPPM(), Pending: b.Pending(now), GroupTime: group}, true
}

// The disciplines that keep a bound.
var (
	_ bounder = (*client.Client)(nil)
	_ bounder = (*berkeley.Core)(nil)
)
