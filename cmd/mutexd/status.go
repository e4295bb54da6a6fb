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

	"github.com/synclab/synclab/pkg/mutex/tokenring"
)

// renderStatus prints the ring's part of `mutexd status`: a summary,
// the members, then one line per lock, compact like chronyc's tables.
func renderStatus(w io.Writer, raw []byte, _ time.Time) error {
	var st ringStatus
	if err := json.Unmarshal(raw, &st); err != nil {
		return fmt.Errorf("unexpected ring status: %w", err)
	}
	alive := 0
	for _, m := range st.Members {
		if m.Alive {
			alive++
		}
	}
	c := st.Counters
	fmt.Fprintf(w, "Ring     : member %d, majority %d, %d of %d alive\n", st.ID, st.Majority, alive, len(st.Members))
	fmt.Fprintf(w, "Grants   : %d granted, %d renewed, %d lost (%d expired, %d superseded, %d renewal refused), %d cancelled\n",
		c["grants"], c["renewals"], c["lost_expired"]+c["lost_superseded"]+c["lost_renew_refused"],
		c["lost_expired"], c["lost_superseded"], c["lost_renew_refused"], c["cancelled"])
	fmt.Fprintf(w, "Tokens   : %d passed, %d received, %d skips, %d regenerations, %d stale refused\n",
		c["tokens_passed"], c["tokens_received"], c["acks_missed"], c["regenerations"], c["tokens_refused_stale"]+c["tokens_refused_by_successor"])
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
		state, heard := "alive", fmt.Sprintf("%s ago", time.Duration(m.HeardAgoMS)*time.Millisecond)
		switch {
		case m.Self:
			state, heard = "self", "-"
		case !m.Alive:
			state = "down"
		case m.Skipped:
			state = "skipped"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\n", m.ID, state, heard)
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
	fmt.Fprintln(tw, "Lock\tToken\tGeneration\tFence\tHolder\tQueue\tWants")
	for _, l := range st.Locks {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", l.Name, tokenText(l), generationText(l), fenceText(l.Fence),
			holderText(l.Holder), queueText(l.Queue), membersText(l.Wants))
	}
	return tw.Flush()
}

func tokenText(l tokenring.LockStatus) string {
	switch l.Token {
	case "here":
		if l.HoldLeftMS > 0 {
			return fmt.Sprintf("here (hold %s)", time.Duration(l.HoldLeftMS)*time.Millisecond)
		}
		return "here"
	case "in_flight":
		return fmt.Sprintf("to %d", l.InFlightTo)
	}
	if l.Looking != "" {
		return "lost? (" + l.Looking + ")"
	}
	return "elsewhere"
}

// generationText shows a generation as round/creator; the promised one
// when the token is not here.
func generationText(l tokenring.LockStatus) string {
	g := l.Generation
	if g == 0 {
		g = l.Promised
	}
	if g == 0 {
		return "-"
	}
	return fmt.Sprintf("%d/%d", tokenring.GenerationRound(g), tokenring.GenerationOwner(g))
}

// fenceText shows a fence as round:grant (fence = round<<40 | grants).
func fenceText(f uint64) string {
	if f == 0 {
		return "-"
	}
	return fmt.Sprintf("%d (%d:%d)", f, f>>40, f&(1<<40-1))
}

func holderText(h *tokenring.RequestStatus) string {
	if h == nil {
		return "-"
	}
	who := ""
	if h.Client != "" {
		who = " " + h.Client
	}
	return fmt.Sprintf("#%d%s, fence %d, %s left", h.ID, who, h.Fence, time.Duration(h.LeaseLeftMS)*time.Millisecond)
}

func queueText(q []tokenring.RequestStatus) string {
	if len(q) == 0 {
		return "0"
	}
	return fmt.Sprintf("%d (oldest %s)", len(q), time.Duration(q[0].WaitedMS)*time.Millisecond)
}

func membersText(ms []uint32) string {
	if len(ms) == 0 {
		return "-"
	}
	s := make([]string, len(ms))
	for i, m := range ms {
		s[i] = fmt.Sprint(m)
	}
	return strings.Join(s, ",")
}
