package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/synclab/synclab/internal/app"
	"github.com/synclab/synclab/internal/daemon"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/mutex"
	"github.com/synclab/synclab/pkg/wire"
)

// statusWire is statusView as read back by the CLI: the algorithm's detail
// (its own, at each level) kept raw for its factory to render.
type statusWire struct {
	mutex.Status
	Detail json.RawMessage   `json:"detail"`
	Locks  []lockWire        `json:"locks"`
	API    map[string]uint64 `json:"api,omitempty"`
}

type lockWire struct {
	mutex.LockStatus
	Detail json.RawMessage `json:"detail"`
}

// renderStatus prints the algorithm's part of `mutexd status`: a summary
// (the algorithm's own lines after the common ones), the members, then one
// line per lock, compact like chronyc's tables. The algorithm is the one
// the status names, never guessed from its fields.
func renderStatus(w io.Writer, raw []byte, _ time.Time) error {
	var st statusWire
	if err := json.Unmarshal(raw, &st); err != nil {
		return fmt.Errorf("unexpected status: %w", err)
	}
	f, err := algorithms.Lookup(st.Algorithm)
	if err != nil {
		return fmt.Errorf("status of %w", err)
	}
	g := st.Guarantees
	fmt.Fprintf(w, "Algorithm: %s; survives %s; shared mode %s\n", st.Algorithm, faultsText(g.Survives), yesNo(g.Shared))
	if f.StatusLines != nil {
		lines, err := f.StatusLines(st.Status, st.Detail)
		if err != nil {
			return err
		}
		for _, l := range lines {
			fmt.Fprintln(w, l)
		}
	}
	c := st.Counters
	var lost []string
	total := uint64(0)
	for _, k := range slices.Sorted(maps.Keys(c)) {
		if r, ok := strings.CutPrefix(k, "lost_"); ok {
			lost = append(lost, fmt.Sprintf("%d %s", c[k], strings.ReplaceAll(r, "_", " ")))
			total += c[k]
		}
	}
	lostText := fmt.Sprintf("%d lost", total)
	if len(lost) > 0 {
		lostText += " (" + strings.Join(lost, ", ") + ")"
	}
	fmt.Fprintf(w, "Grants   : %d granted, %d renewed, %s, %d cancelled\n", c["grants"], c["renewals"], lostText, c["cancelled"])
	if c["grants_late"]+c["renewals_late"] > 0 {
		// Rare, and the administrator's to act on: this daemon did not run
		// for about a lease (stopped, swapped out, starved of CPU), or a
		// renewal's answers came after its lease's end (a slow or lossy
		// link: lock_renewal_late's cause says which).
		fmt.Fprintf(w, "Late     : %d grants and %d renewals refused, read after their lease ended: this daemon did not run for that long, or a renewal's answers came after it (see lock_grant_late and lock_renewal_late, its cause and members, in the log)\n",
			c["grants_late"], c["renewals_late"])
	}
	if c["grants_unsaved"]+c["renewals_unsaved"] > 0 {
		// The disk's, and the administrator's to act on (Persist says
		// whether it still fails): the client never heard of these.
		fmt.Fprintf(w, "Unsaved  : %d grants and %d renewals dropped, their lease over before the state they depend on could be written (see lock_grant_unsaved in the log; fix the disk under --state-dir)\n",
			c["grants_unsaved"], c["renewals_unsaved"])
	}
	if len(st.API) > 0 {
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(st.API)) {
			parts = append(parts, fmt.Sprintf("%s %d", k, st.API[k]))
		}
		fmt.Fprintf(w, "API      : %s\n", strings.Join(parts, ", "))
	}
	fmt.Fprintln(w)

	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tState\tLast heard")
	for _, m := range st.Members {
		heard := fmt.Sprintf("%s ago", time.Duration(m.HeardAgoMS)*time.Millisecond)
		if m.Self {
			heard = "-"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\n", m.ID, m.State, heard)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(st.Locks) == 0 {
		fmt.Fprintln(w, "\nNo locks known yet.")
		return nil
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(slices.Concat([]string{"Lock"}, f.LockColumns, []string{"Fence", "Holder", "Queue"}), "\t"))
	for _, l := range st.Locks {
		cells := []string{l.Name}
		if f.LockCells != nil {
			own, err := f.LockCells(l.Detail)
			if err != nil {
				return err
			}
			cells = append(cells, own...)
		}
		cells = append(cells, fenceText(f, l.Fence), holderText(l.Holders), queueText(l.Queue))
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	return tw.Flush()
}

func faultsText(fs []mutex.Fault) string {
	if len(fs) == 0 {
		return "no fault"
	}
	s := make([]string, len(fs))
	for i, f := range fs {
		s[i] = string(f)
	}
	return strings.Join(s, ", ")
}

func yesNo(b bool) string {
	if b {
		return "offered"
	}
	return "not offered"
}

// fenceText shows a fence the algorithm's way.
func fenceText(f mutex.Factory, fence uint64) string {
	switch {
	case fence == 0:
		return "-"
	case f.FenceText != nil:
		return f.FenceText(fence)
	}
	return fmt.Sprint(fence)
}

func holderText(hs []mutex.RequestStatus) string {
	if len(hs) == 0 {
		return "-"
	}
	var parts []string
	for _, h := range hs {
		who := ""
		if h.Client != "" {
			who = " " + h.Client
		}
		mode := ""
		if h.Mode == mutex.Shared {
			mode = " shared"
		}
		part := fmt.Sprintf("#%d%s%s, fence %d, %s left", h.ID, who, mode, h.Fence, time.Duration(h.LeaseLeftMS)*time.Millisecond)
		// Held for the state write (mutexcount.Hold): the core made it,
		// its client has not heard yet.
		switch h.Unsaved {
		case mutex.UnsavedGrant:
			part += ", granted, waiting for the state write (its client does not have it yet)"
		case mutex.UnsavedRenewal:
			part += ", renewed, waiting for the state write (its client has the lease as last renewed)"
		}
		parts = append(parts, part)
	}
	return strings.Join(parts, "; ")
}

func queueText(q []mutex.RequestStatus) string {
	if len(q) == 0 {
		return "0"
	}
	return fmt.Sprintf("%d (oldest %s)", len(q), time.Duration(q[0].WaitedMS)*time.Millisecond)
}

// clusterFacts is mutexd's part of its row in `status --cluster`: the
// locks its clients hold (their names, as far as they fit, in the role)
// and the requests waiting here.
func clusterFacts(c core.Core) (string, []wire.StatusFact) {
	ac, ok := c.(*algoCore)
	if !ok {
		return "", nil
	}
	var held, queued uint64
	var names []string
	for _, l := range ac.Report().Locks {
		if len(l.Holders) > 0 || l.Holder != nil {
			held++
			names = append(names, l.Name)
		}
		queued += uint64(len(l.Queue))
	}
	return heldText(names), []wire.StatusFact{{Tag: wire.FactHeld, Value: held}, {Tag: wire.FactQueued, Value: queued}}
}

// heldText names the locks held, within what a status report carries.
func heldText(names []string) string {
	var b strings.Builder
	for i, n := range names {
		more := ""
		if rest := len(names) - i - 1; rest > 0 {
			more = fmt.Sprintf(" +%d", rest)
		}
		sep := ""
		if i > 0 {
			sep = ","
		}
		if b.Len()+len(sep)+len(n)+len(more) > wire.MaxStatusString {
			fmt.Fprintf(&b, " +%d", len(names)-i)
			break
		}
		b.WriteString(sep + n)
	}
	return b.String()
}

// clusterView is mutexd's columns of `status --cluster`.
var clusterView = &app.ClusterView{
	Headers: []string{"Algorithm", "Holds", "Waiting"},
	Cells: func(r daemon.ClusterRow) []string {
		holds := r.Facts["held"].String()
		if r.Role != "" {
			holds += " (" + r.Role + ")"
		}
		return []string{r.Algorithm, holds, r.Facts["queued"].String()}
	},
}
