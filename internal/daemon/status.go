package daemon

import (
	"context"
	"maps"
	"net/http"
	"slices"
	"time"

	"github.com/synclab/synclab/internal/ctl"
	"github.com/synclab/synclab/internal/node"
	"github.com/synclab/synclab/internal/transport"
)

// Status is the daemon's whole view, served at GET /v1/status.
type Status struct {
	Daemon  string `json:"daemon"`
	Version string `json:"version,omitempty"`
	Commit  string `json:"commit,omitempty"`
	// ConfigSource: where the configuration came from (Config.ConfigSource).
	ConfigSource string `json:"config_source,omitempty"`
	// ConfigWarnings are Config.Warnings: settings legal but likely wrong.
	ConfigWarnings []string `json:"config_warnings,omitempty"`
	ID             uint32   `json:"id"`
	Cluster        string   `json:"cluster"`
	Address        string   `json:"address"`
	Members        []Member `json:"members"`
	Multicast      string   `json:"multicast,omitempty"`
	Auth           bool     `json:"auth"`
	// Insecure: the cluster runs without keys by the operator's choice.
	Insecure      bool        `json:"insecure"`
	Started       time.Time   `json:"started"`
	UptimeSeconds float64     `json:"uptime_seconds"`
	TickNs        int64       `json:"tick_ns"`
	Clock         ClockStatus `json:"clock"`
	// TrueOffsetNs is the simulated clock's exact error against the real
	// clock (only with --clock sim): how tests and the demo see ground truth.
	TrueOffsetNs *int64          `json:"true_offset_ns,omitempty"`
	Node         node.Status     `json:"node"`
	Transport    transport.Stats `json:"transport"`
	// Superseding lists the members whose connections here are being
	// superseded again and again now (the WARN "keep being reset for
	// newer ones"): the cause and what to do. Empty once it stops.
	Superseding []SupersedingStatus `json:"superseding,omitempty"`
	// Datagram is the foreign-protocol socket (timed's NTP), if any.
	Datagram *DatagramStatus   `json:"datagram,omitempty"`
	Events   map[string]uint64 `json:"events"`
	Errors   map[string]uint64 `json:"errors"`
	Hooks    map[string]uint64 `json:"hooks"`
	// Trace is the protocol trace being recorded (X trace start).
	Trace TraceStatus `json:"trace"`
	// TraceWindow is the trace window the members' live pages ask for
	// (nil: off).
	TraceWindow *TraceWindowStatus `json:"trace_window,omitempty"`
	// TraceAsks is this member's last ask for each other member's trace
	// window (a live page on this host), answered or not, and why not.
	TraceAsks []TraceAsk `json:"trace_asks,omitempty"`
	// TrueTime is the bound's shared page (timed), if published.
	TrueTime *TrueTimeStatus `json:"truetime,omitempty"`
	// Memory is what the process holds (resident set, heap, goroutines).
	Memory MemoryStatus `json:"memory"`
	// Persist is this run's writes of the core's state (its log).
	Persist PersistStatus `json:"persist"`
}

// PersistStatus counts the writes of the core's state (CoreStateFile,
// CoreLogFile) that succeeded this run, and keeps the last, the slowest
// and the last one over SlowPersist (failed writes are in Errors,
// persist_failed).
type PersistStatus struct {
	Writes   uint64        `json:"writes"`
	Slow     uint64        `json:"slow"` // over SlowPersist
	Last     *PersistWrite `json:"last,omitempty"`
	Slowest  *PersistWrite `json:"slowest,omitempty"`
	LastSlow *PersistWrite `json:"last_slow,omitempty"`
	// SlowTerms counts the new terms seen within SlowTermWindow of a
	// slow write (leader changes likely caused by the disk); the last
	// is LastSlowTerm, shown for SlowTermShown.
	SlowTerms    uint64    `json:"terms_after_slow_writes"`
	LastSlowTerm *SlowTerm `json:"last_term_after_slow_write,omitempty"`
	// Failing is set while writes fail (nil once one succeeds).
	Failing *PersistFailure `json:"failing,omitempty"`
}

// PersistFailure is a run of failed writes of the core's state: since
// when, the last one, its file and error, and the failed writes this
// process has counted (errors.persist_failed). Meanwhile nothing that
// depends on the state leaves, and an election core leads no term it
// won (the term is not on disk: a restart would lead it again).
type PersistFailure struct {
	Since  time.Time `json:"since"`
	Last   time.Time `json:"last"`
	File   string    `json:"file"`
	Err    string    `json:"error"`
	Failed uint64    `json:"failed_writes"`
}

// PersistWrite is one write of the core's state: when it ended, the file,
// its size (bytes of a state, records of an append), whether the Ready's
// messages waited for it (promise), and how long its parts took.
type PersistWrite struct {
	At      time.Time `json:"at"`
	File    string    `json:"file"`
	Bytes   int       `json:"bytes,omitempty"`
	Records int       `json:"records,omitempty"`
	Promise bool      `json:"promise"`
	WriteUs int64     `json:"write_us"`
	SyncUs  int64     `json:"sync_us"`
	TotalUs int64     `json:"total_us"`
}

// DatagramStatus describes the foreign-protocol socket.
type DatagramStatus struct {
	Address string          `json:"address"`
	Stats   transport.Stats `json:"stats"`
}

// Member is one entry of the static member list.
type Member struct {
	ID      uint32 `json:"id"`
	Address string `json:"address"`
	Self    bool   `json:"self,omitempty"`
}

// ClockStatus is what the node's clock reports.
type ClockStatus struct {
	Kind         string    `json:"kind"`
	Now          time.Time `json:"now"`
	Synchronized bool      `json:"synchronized"`
	FrequencyPPM float64   `json:"frequency_ppm"`
	SlewLeftNs   int64     `json:"slew_left_ns"`
	EstErrorNs   int64     `json:"est_error_ns"`
	MaxErrorNs   int64     `json:"max_error_ns"`
	Error        string    `json:"error,omitempty"`
}

type trueOffsetter interface{ TrueOffset() time.Duration }

// Status collects the daemon's view on the loop.
func (d *Daemon) Status(ctx context.Context) (Status, error) {
	var st Status
	err := d.Do(ctx, func(n *node.Node) { st = d.statusLocked(n) })
	if err == nil {
		st.Memory = memoryStatus() // off the loop: it stops the world briefly
	}
	return st, err
}

func (d *Daemon) statusLocked(n *node.Node) Status {
	st := Status{
		Daemon:         d.cfg.Name,
		Version:        d.cfg.Version,
		Commit:         d.cfg.Commit,
		ConfigSource:   d.cfg.ConfigSource,
		ConfigWarnings: d.cfg.Warnings,
		ID:             d.cfg.ID,
		Cluster:        d.cfg.Cluster,
		Address:        d.cfg.Members[d.cfg.ID].String(),
		Auth:           len(d.cfg.Keys) > 0,
		Insecure:       d.cfg.Insecure,
		Started:        d.started,
		UptimeSeconds:  time.Since(d.started).Seconds(),
		TickNs:         int64(d.cfg.TickInterval),
		Node:           n.Status(),
		Events:         maps.Clone(d.events),
		Errors:         d.errorCounts(),
		Hooks:          d.hooks.stats(),
		Trace:          d.tr.status(),
		TraceWindow:    d.win.status(),
		TraceAsks:      d.traceAsks(),
		TrueTime:       d.trueTimeStatus(),
		Persist:        d.persistStatus(time.Now()),
	}
	if d.cfg.Standalone() {
		st.Address = "" // no member socket
	}
	for _, id := range slices.Sorted(maps.Keys(d.cfg.Members)) {
		st.Members = append(st.Members, Member{ID: id, Address: d.cfg.Members[id].String(), Self: id == d.cfg.ID})
	}
	if d.cfg.Multicast != nil {
		st.Multicast = d.cfg.Multicast.Group.String() + "%" + d.cfg.Multicast.Interface
	}
	if d.ep != nil {
		st.Transport = d.ep.Stats()
		st.Superseding = d.supersedingStatus(st.Transport.Superseding)
	}
	if d.dgram != nil {
		st.Datagram = &DatagramStatus{Address: d.dgram.LocalAddr().String(), Stats: d.dgram.Stats()}
	}
	st.Clock = ClockStatus{Kind: d.cfg.ClockName, Now: d.cfg.Clock.Now()}
	if cs, err := d.cfg.Clock.State(); err != nil {
		st.Clock.Error = err.Error()
	} else {
		st.Clock.Synchronized = cs.Synchronized
		st.Clock.FrequencyPPM = cs.Frequency
		st.Clock.SlewLeftNs = int64(cs.SlewLeft)
		st.Clock.EstErrorNs = int64(cs.EstError)
		st.Clock.MaxErrorNs = int64(cs.MaxError)
	}
	if t, ok := d.cfg.Clock.(trueOffsetter); ok {
		off := int64(t.TrueOffset())
		st.TrueOffsetNs = &off
	}
	return st
}

// routes registers the control API every daemon serves, then the daemon's
// own.
func (d *Daemon) routes() {
	d.ctl.Handle(http.MethodGet, "/v1/status", func(r *http.Request) (any, error) {
		st, err := d.Status(r.Context())
		if err != nil {
			return nil, ctl.Unavailable(err.Error())
		}
		return st, nil
	})
	d.ctl.Handle(http.MethodGet, "/v1/cluster", d.clusterRoute)
	d.ctl.HandleStream(http.MethodGet, "/v1/events", func(r *http.Request, send func(any) error) error {
		ch, stop := d.Subscribe()
		defer stop()
		for {
			select {
			case <-r.Context().Done():
				return nil
			case e, ok := <-ch:
				if !ok {
					return nil
				}
				if err := send(e); err != nil {
					return err
				}
			}
		}
	})
	d.traceRoutes()
	d.memberTraceRoute()
	for _, rt := range d.pending {
		if rt.stream != nil {
			d.ctl.HandleStream(rt.method, rt.pattern, rt.stream)
		} else {
			d.ctl.Handle(rt.method, rt.pattern, rt.h)
		}
	}
}

// errorCounts is the daemon's error counters, with the metrics endpoint's
// refused connections.
func (d *Daemon) errorCounts() map[string]uint64 {
	errs := maps.Clone(d.errs)
	if n := d.metricsRefused.Load(); n > 0 {
		errs["metrics_connections_refused"] = n
	}
	return errs
}
