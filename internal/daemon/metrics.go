package daemon

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"math"
	"net"
	"net/http"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/synclab/synclab/internal/node"
	"github.com/synclab/synclab/pkg/core"
)

// The metrics endpoint may listen on a LAN address, where anyone can
// connect: it serves at most metricsMaxConns connections at once (one
// more is accepted and closed at once, and counted: a flood of half-sent
// requests costs the daemon nothing), each of which must send its header
// within metricsHeaderTimeout and may idle metricsIdleTimeout between
// scrapes. A Prometheus server holds one connection; a few scrapers and a
// curl fit easily.
const (
	metricsMaxConns      = 8
	metricsHeaderTimeout = 2 * time.Second
	metricsIdleTimeout   = 30 * time.Second
	metricsRefusedLogged = time.Minute // between two warnings about refused connections
)

// serveMetrics serves the Prometheus text exposition format on
// http://addr/metrics. It returns a function that stops the server.
func (d *Daemon) serveMetrics(addr string) (func(), error) {
	raw, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	ln := &capListener{Listener: raw, slots: make(chan struct{}, metricsMaxConns), refused: &d.metricsRefused}
	ln.onRefuse = func(n uint64) {
		now := time.Now().UnixNano()
		if last := d.metricsWarned.Load(); last != 0 && time.Duration(now-last) < metricsRefusedLogged || !d.metricsWarned.CompareAndSwap(last, now) {
			return
		}
		d.log.Warn(fmt.Sprintf("metrics endpoint: refused connections beyond %d at once", metricsMaxConns), "addr", raw.Addr().String(),
			"refused_total", n, "hint", "a scraper that opens many connections, or a flood from the network: bind --metrics to a loopback address, or firewall it")
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
		defer cancel()
		m, err := d.Metrics(ctx)
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		m.WriteText(w)
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: metricsHeaderTimeout, ReadTimeout: metricsHeaderTimeout,
		WriteTimeout: 10 * time.Second, IdleTimeout: metricsIdleTimeout, MaxHeaderBytes: 8 << 10,
		ErrorLog: log.New(io.Discard, "", 0)} // a client's broken request is its own business
	go srv.Serve(ln)
	d.log.Info("serving metrics", "addr", ln.Addr().String())
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	}, nil
}

// Metrics is one scrape: the metrics every daemon has, then the core's own
// (core.MetricsWriter), all values copied off the loop.
type Metrics struct {
	Daemon string
	Common []core.MetricFamily
	Core   []core.MetricFamily
}

// Metrics gathers a scrape on the loop; rendering it (WriteText) is left
// to the caller's goroutine, so a slow client never holds the loop.
func (d *Daemon) Metrics(ctx context.Context) (Metrics, error) {
	m := Metrics{Daemon: d.cfg.Name}
	err := d.Do(ctx, func(n *node.Node) {
		var common, own core.MetricSet
		commonMetrics(&common, d.statusLocked(n))
		m.Common = common.Families()
		mw, ok := n.Core().(core.MetricsWriter)
		if !ok {
			return
		}
		mw.Metrics(&own)
		problems := own.Err()
		for _, f := range own.Families() {
			// Two families of one name would make the whole scrape invalid.
			if slices.ContainsFunc(m.Common, func(c core.MetricFamily) bool { return c.Name == f.Name }) {
				problems = errors.Join(problems, fmt.Errorf("metric %s: the daemon's own, not the core's", f.Name))
				continue
			}
			m.Core = append(m.Core, f)
		}
		if problems != nil && !d.metricsErrLogged {
			// A programming error in the core: it repeats on every scrape,
			// so it is logged once; the valid samples are still served.
			d.metricsErrLogged = true
			d.log.Error("core metrics left out", "err", problems)
		}
	})
	if err != nil {
		return Metrics{}, err
	}
	return m, nil
}

// commonMetrics describes what every daemon has. Names follow the
// Prometheus conventions: base units (seconds), _total for counters.
func commonMetrics(m *core.MetricSet, st Status) {
	m.Gauge("synclab_build_info", "Always 1; the labels say which build runs.", 1,
		core.Label{Name: "version", Value: st.Version},
		core.Label{Name: "commit", Value: st.Commit}, core.Label{Name: "goversion", Value: runtime.Version()})
	m.Gauge("synclab_uptime_seconds", "Seconds since the daemon started.", st.UptimeSeconds)
	m.Gauge("synclab_incarnation", "This run's incarnation number.", float64(st.Node.Incarnation))
	m.Gauge("synclab_authenticated", "1 if frames are authenticated with a key, 0 if not (--insecure, or alone).", b2f(st.Auth))
	m.Gauge("synclab_clock_frequency_ppm", "Clock frequency correction in ppm.", st.Clock.FrequencyPPM)
	m.Gauge("synclab_clock_max_error_seconds", "Clock maximum error.", float64(st.Clock.MaxErrorNs)/1e9)
	m.Gauge("synclab_clock_est_error_seconds", "Clock estimated error.", float64(st.Clock.EstErrorNs)/1e9)
	if st.TrueOffsetNs != nil {
		m.Gauge("synclab_clock_true_offset_seconds", "Simulated clock's exact error against real time.", float64(*st.TrueOffsetNs)/1e9)
	}
	m.Counters("synclab_frames_received_total", "Frames accepted, by kind.", "kind", st.Node.FramesIn)
	m.Counters("synclab_frames_sent_total", "Frames sent, by kind.", "kind", st.Node.FramesOut)
	m.Counters("synclab_frames_dropped_total", "Input refused, by reason.", "reason", st.Node.Dropped)
	hints := map[string]uint64{}
	for _, c := range core.HintCauses {
		hints[c.String()] = st.Node.Hints[c.String()]
	}
	m.Counters("synclab_port_hints_total", "Hints that a member's port closed (its link closed or reset, a connection refused), by cause: hints, not proof.", "cause", hints)
	m.Counters("synclab_events_total", "Core events, by name.", "event", st.Events)
	m.Counters("synclab_errors_total", "Daemon errors, by kind.", "error", st.Errors)
	m.Counters("synclab_hooks_total", "Hook runs, by outcome.", "outcome", st.Hooks)
	if a := st.Node.Agreement; a != nil {
		m.Gauge("synclab_config_stepped_back", "1 while this member's configuration is in the minority of the members it hears (it does not lead, grant, vote or sequence).",
			b2f(a.Standing == "stepped_back"))
		m.Gauge("synclab_config_members_differing", "Members heard whose configuration differs from this member's.", float64(len(a.Differ)))
		m.Gauge("synclab_config_members_timing_mismatch", "Members whose heartbeat or leader timeout does not fit this member's (a leader given up between two of its heartbeats).",
			float64(len(a.TimingMismatch)))
		m.Counters("synclab_config_disagreements_total", "Configuration announcements (and refused frames naming a configuration) found to differ, by member.",
			"member", memberCounts(a.Members, func(m node.MemberAgreement) uint64 { return m.Disagreements }))
		m.Counters("synclab_auth_failures_total", "Frames from a member's address that failed authentication, by member.",
			"member", memberCounts(a.Members, func(m node.MemberAgreement) uint64 { return m.AuthFailures }))
	}
}

// memberCounts is one counter of each member, by its ID.
func memberCounts(ms []node.MemberAgreement, v func(node.MemberAgreement) uint64) map[string]uint64 {
	out := make(map[string]uint64, len(ms))
	for _, m := range ms {
		out[strconv.FormatUint(uint64(m.ID), 10)] = v(m)
	}
	return out
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// WriteText renders m in the Prometheus text exposition format (0.0.4),
// every sample labelled with the daemon's name.
func (m Metrics) WriteText(w io.Writer) error {
	bw := bufio.NewWriter(w)
	daemon := core.ReservedLabel + `="` + escapeLabel(m.Daemon) + `"`
	for _, f := range slices.Concat(m.Common, m.Core) {
		fmt.Fprintf(bw, "# HELP %s %s\n# TYPE %s %s\n", f.Name, f.Help, f.Name, f.Kind)
		for _, s := range f.Samples {
			bw.WriteString(f.Name)
			bw.WriteString("{" + daemon)
			for _, l := range s.Labels {
				bw.WriteString("," + l.Name + `="` + escapeLabel(l.Value) + `"`)
			}
			bw.WriteString("} " + fmtValue(s.Value) + "\n")
		}
	}
	return bw.Flush()
}

// fmtValue writes whole numbers without an exponent (counters read as
// 1000000, not 1e+06); NaN and ±Inf come out as the format spells them.
func fmtValue(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

var labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

func escapeLabel(s string) string { return labelEscaper.Replace(s) }

// capListener accepts at most cap(slots) connections at once; one more is
// closed as soon as it is accepted, and counted in refused.
type capListener struct {
	net.Listener
	slots    chan struct{}
	refused  *atomic.Uint64
	onRefuse func(total uint64)
}

func (l *capListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		select {
		case l.slots <- struct{}{}:
			return &slotConn{Conn: c, slots: l.slots}, nil
		default:
			c.Close()
			n := l.refused.Add(1)
			if l.onRefuse != nil {
				l.onRefuse(n)
			}
		}
	}
}

// slotConn gives its slot back when closed.
type slotConn struct {
	net.Conn
	slots chan struct{}
	once  sync.Once
}

func (c *slotConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { <-c.slots })
	return err
}
