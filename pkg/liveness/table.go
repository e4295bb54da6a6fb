package liveness

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"
)

// WriteTable renders st for humans, the way `X status` prints it:
//
//	member 1: 2 of 3 alive, heartbeat every 100ms, suspect after 500ms, 121 sent
//
// (with probes: "..., 121 sent, a missed one probed every 10ms (19 probes
// sent, 2 answered)"), then one row per member:
//
//	ID  STATE    LAST HEARD  HEARD  FLAPS  SEES  SINCE
//	2   alive    40ms ago    120    0      2     12.05s ago
//	3   suspect  1.21s ago   57     1      1     710ms ago
//
// Ages are relative to st.Now (the local clock at the detector's last tick or arrival),
// so the table reads the same whenever it is printed. SEES is the alive count
// the member reported in its last heartbeat: members that disagree on it are
// on different sides of a partition.
func (st Status) WriteTable(w io.Writer) error {
	probes := ""
	if st.ProbeMS != 0 {
		probes = fmt.Sprintf(", a missed one probed every %v (%d probes sent, %d answered)",
			time.Duration(st.ProbeMS)*time.Millisecond, st.Probes, st.Answered)
	}
	if _, err := fmt.Fprintf(w, "member %d: %d of %d alive, heartbeat every %v, suspect after %v, %d sent%s\n",
		st.ID, st.Alive, len(st.Members)+1, time.Duration(st.IntervalMS)*time.Millisecond,
		st.SuspectAfter, st.Sent, probes); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATE\tLAST HEARD\tHEARD\tFLAPS\tSEES\tSINCE")
	for _, m := range st.Members {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%d\t%d\t%s\n",
			m.ID, m.State, ago(st.Now, m.LastHeard), m.Heard, m.Flaps, m.TheirAlive, ago(st.Now, m.Since))
	}
	return tw.Flush()
}

// ago renders how long before now t was, "-" for never.
func ago(now, t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := now.Sub(t)
	switch {
	case d < 0:
		return "just now"
	case d < time.Second:
		return d.Round(time.Millisecond).String() + " ago"
	default:
		return d.Round(10*time.Millisecond).String() + " ago"
	}
}
