package app

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/synclab/synclab/internal/daemon"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/liveness"
)

// LivenessCore runs the heartbeat failure detector with LAN defaults: the
// core every daemon runs until its protocol core takes over.
func LivenessCore(cfg *daemon.Config) daemon.CoreFactory {
	return func(_ []byte, rnd *rand.Rand) (core.Core, error) {
		lc := liveness.DefaultLANConfig()
		lc.ID = cfg.ID
		lc.Members = slices.Sorted(maps.Keys(cfg.Members))
		lc.TickInterval = cfg.TickInterval
		// Keep the default 100 ms heartbeat whatever the tick length.
		lc.HeartbeatTicks = max(1, int(100*time.Millisecond/cfg.TickInterval))
		lc.SuspectTicks = liveness.DefaultSuspectFactor * lc.HeartbeatTicks
		lc.Rand = rnd
		return liveness.New(lc)
	}
}

// RenderLiveness prints the detector's member table.
func RenderLiveness(w io.Writer, raw []byte, now time.Time) error {
	var st liveness.Status
	if err := json.Unmarshal(raw, &st); err != nil {
		return fmt.Errorf("unexpected liveness status: %w", err)
	}
	fmt.Fprintf(w, "Members: %d of %d alive, this node included (heartbeat every %d ms, suspected after %d ms of silence)\n",
		st.Alive, len(st.Members)+1, st.IntervalMS, st.SuspectTicks*int(st.IntervalMS)/max(1, st.HeartbeatTicks))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tState\tLast heard\tHeard\tFlaps\tSince")
	for _, m := range st.Members {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%d\t%s\n", m.ID, m.State, ago(now, m.LastHeard), m.Heard, m.Flaps, ago(now, m.Since))
	}
	return tw.Flush()
}

func ago(now, t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := now.Sub(t)
	switch {
	case d < 0:
		return "just now"
	case d < time.Second:
		return fmt.Sprintf("%dms ago", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%.1fs ago", d.Seconds())
	}
	return d.Round(time.Second).String() + " ago"
}
