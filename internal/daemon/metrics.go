package daemon

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// serveMetrics serves the Prometheus text exposition format on
// http://addr/metrics. It returns a function that stops the server.
func (d *Daemon) serveMetrics(addr string) (func(), error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
		defer cancel()
		st, err := d.Status(ctx)
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		writeMetrics(w, st)
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	d.log.Info("serving metrics", "addr", ln.Addr().String())
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	}, nil
}

// writeMetrics renders the metrics every daemon has. Names follow the
// Prometheus conventions: base units (seconds), _total for counters.
func writeMetrics(w io.Writer, st Status) {
	bw := bufio.NewWriter(w)
	defer bw.Flush()
	d := `daemon="` + st.Daemon + `"`
	gauge := func(name, help string, v float64) {
		fmt.Fprintf(bw, "# HELP %s %s\n# TYPE %s gauge\n%s{%s} %s\n", name, help, name, name, d, fmtFloat(v))
	}
	counters := func(name, help, label string, m map[string]uint64) {
		fmt.Fprintf(bw, "# HELP %s %s\n# TYPE %s counter\n", name, help, name)
		for _, k := range slices.Sorted(maps.Keys(m)) {
			fmt.Fprintf(bw, "%s{%s,%s=%q} %d\n", name, d, label, escapeLabel(k), m[k])
		}
	}
	gauge("synclab_uptime_seconds", "Seconds since the daemon started.", st.UptimeSeconds)
	gauge("synclab_incarnation", "This run's incarnation number.", float64(st.Node.Incarnation))
	gauge("synclab_clock_frequency_ppm", "Clock frequency correction in ppm.", st.Clock.FrequencyPPM)
	gauge("synclab_clock_max_error_seconds", "Clock maximum error.", float64(st.Clock.MaxErrorNs)/1e9)
	gauge("synclab_clock_est_error_seconds", "Clock estimated error.", float64(st.Clock.EstErrorNs)/1e9)
	if st.TrueOffsetNs != nil {
		gauge("synclab_clock_true_offset_seconds", "Simulated clock's exact error against real time.", float64(*st.TrueOffsetNs)/1e9)
	}
	counters("synclab_frames_received_total", "Frames accepted, by kind.", "kind", st.Node.FramesIn)
	counters("synclab_frames_sent_total", "Frames sent, by kind.", "kind", st.Node.FramesOut)
	counters("synclab_frames_dropped_total", "Input refused, by reason.", "reason", st.Node.Dropped)
	counters("synclab_events_total", "Core events, by name.", "event", st.Events)
	counters("synclab_errors_total", "Daemon errors, by kind.", "error", st.Errors)
	counters("synclab_hooks_total", "Hook runs, by outcome.", "outcome", st.Hooks)
}

func fmtFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

func escapeLabel(s string) string {
	return strings.NewReplacer(`\`, `\\`, "\n", `\n`).Replace(s)
}
