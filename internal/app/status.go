package app

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/synclab/synclab/internal/ctl"
	"github.com/synclab/synclab/internal/daemon"
	"github.com/synclab/synclab/internal/node"
	"github.com/synclab/synclab/internal/transport"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/epoch"
)

// ControlFlag is the --control flag every client command takes.
func ControlFlag(name string) cli.Flag {
	return &cli.StringFlag{
		Name:    "control",
		EnvVars: Env(name, "control"),
		Value:   "/run/" + name + "/control.sock",
		Usage:   "control socket `PATH` of the daemon to talk to",
	}
}

// JSONFlag is the --json flag of client commands.
var JSONFlag = &cli.BoolFlag{Name: "json", Usage: "print JSON for scripts"}

// Client returns a control client for the daemon the command names.
func Client(c *cli.Context) *ctl.Client {
	return ctl.NewClient(c.String("control"), c.App.Name)
}

func statusCommand(spec Spec) *cli.Command {
	return &cli.Command{
		Name:  "status",
		Usage: "show the running daemon's view, or with --cluster the whole lab's" + spec.StatusUsage,
		Description: "With --cluster the daemon asks every member for its row over the cluster's own\n" +
			"authenticated protocol (no extra port) and prints one row per member: whether it answered,\n" +
			"whether its configuration agrees, the daemon's own state, its clock's offset from this\n" +
			"member's and its error bound, its version and uptime. A member that does not answer is a\n" +
			"row too, with when it was last heard and, for one with another key or cluster name, what\n" +
			"configuration agreement knows of it. It works from any member.",
		Flags: append([]cli.Flag{ControlFlag(spec.Name), JSONFlag}, clusterFlags()...),
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return Usagef("status takes no arguments")
			}
			if c.Bool("cluster") {
				return clusterStatus(c, spec)
			}
			if c.IsSet("timeout") {
				return Usagef("--timeout is only used with --cluster")
			}
			ctx, cancel := context.WithTimeout(c.Context, 10*time.Second)
			defer cancel()
			var raw json.RawMessage
			if err := Client(c).Get(ctx, "/v1/status", &raw); err != nil {
				return err
			}
			if c.Bool("json") {
				// The document says it all; a script reading it
				// wants exit 0 whenever there is one.
				return PrintJSON(c.App.Writer, raw)
			}
			err := renderStatus(c.App.Writer, raw, spec.RenderCore, spec.OwnsClock)
			if err != nil || spec.StatusExit == nil {
				return err
			}
			var st statusView
			if err := json.Unmarshal(raw, &st); err != nil {
				return fmt.Errorf("unexpected status from the daemon: %w", err)
			}
			return spec.StatusExit(st.Node.Core)
		},
	}
}

// PrintJSON writes raw JSON indented, with a final newline.
func PrintJSON(w io.Writer, raw []byte) error {
	var buf bytes.Buffer
	if err := json.Indent(&buf, raw, "", "  "); err != nil {
		return err
	}
	buf.WriteByte('\n')
	_, err := w.Write(buf.Bytes())
	return err
}

// statusView is daemon.Status with the core left raw for the binary's
// renderer.
type statusView struct {
	daemon.Status
	Node struct {
		node.Status
		Core json.RawMessage `json:"core"`
	} `json:"node"`
}

func renderStatus(w io.Writer, raw []byte, renderCore func(io.Writer, []byte, time.Time) error, ownsClock bool) error {
	var st statusView
	if err := json.Unmarshal(raw, &st); err != nil {
		return fmt.Errorf("unexpected status from the daemon: %w", err)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
	standalone := len(st.Members) == 0
	build := st.Version
	if st.Commit != "" {
		build += " (commit " + st.Commit + ")"
	}
	if standalone {
		fmt.Fprintf(tw, "Daemon\t: %s %s, no cluster, incarnation %d\n", st.Daemon, build, st.Node.Incarnation)
	} else {
		fmt.Fprintf(tw, "Daemon\t: %s %s, node %d of %d, cluster %q, incarnation %d\n",
			st.Daemon, build, st.ID, len(st.Members), st.Cluster, st.Node.Incarnation)
	}
	addr := st.Address
	if standalone && st.Datagram != nil {
		addr = st.Datagram.Address + " (datagrams only)"
	}
	if st.Multicast != "" {
		addr += ", multicast " + st.Multicast
	}
	auth := "off (no other members)"
	switch {
	case st.Auth:
		auth = "HMAC-SHA256"
	case st.Insecure:
		auth = "OFF (--insecure: any host on the LAN can forge and replay this cluster's frames)"
	}
	fmt.Fprintf(tw, "Address\t: %s, authentication %s\n", addr, auth)
	if st.ConfigSource != "" {
		fmt.Fprintf(tw, "Config\t: %s\n", st.ConfigSource)
	}
	for _, w := range st.ConfigWarnings {
		fmt.Fprintf(tw, "WARNING\t: %s\n", w)
	}
	fmt.Fprintf(tw, "Uptime\t: %s\n", (time.Duration(st.UptimeSeconds * float64(time.Second))).Round(time.Second))
	if line := memoryLine(st.Memory); line != "" {
		fmt.Fprintf(tw, "Memory\t: %s\n", line)
	}
	fmt.Fprintf(tw, "Clock\t: %s\n", clockLine(st.Status, ownsClock))
	if tt := st.TrueTime; tt != nil {
		bound := "no bound (not synchronised: readers get an error)"
		if tt.Bound {
			bound = "bound " + FormatBound(time.Duration(tt.HalfWidthNS)) + " at the last"
		}
		fmt.Fprintf(tw, "TrueTime\t: %s, %s, %s (timed now reads it)\n", tt.Path, Plural(tt.Publications, "publication"), bound)
	}
	if !standalone {
		fmt.Fprintf(tw, "Frames\t: in %d, out %d, dropped %s\n",
			sum(st.Node.FramesIn), sum(st.Node.FramesOut), reasons(st.Node.Dropped))
		tr := st.Transport
		if refused := map[string]uint64{
			"udp_stranger": tr.UDPStrangers, "tcp_stranger": tr.InboundStrangers, "tcp_evicted": tr.InboundEvicted,
			"tcp_timeout": tr.StreamTimeouts, "tcp_bad_frame": tr.BadFrames, "tcp_over_budget": tr.StreamOverBudget,
			"tcp_too_many": tr.InboundRefused,
		}; sum(refused) > 0 {
			fmt.Fprintf(tw, "Refused\t: %s; %d TCP connections in\n", reasons(refused), tr.Inbound)
		}
		if tr.InboundSuperseded > 0 {
			// A member redialled while its older connection was still
			// open here: its write to this node failed or timed out (this
			// node's loop stalled, or the network), its host restarted
			// or was cut off, or someone opened a connection from its IP.
			fmt.Fprintf(tw, "Superseded\t: %s reset for a newer one of the same member (the last from %v), %s they held dropped to keep its frames in order (the member redialled: its writes here timed out, a stalled loop here or the network; its host restarted; or a connection from its IP that was not its own)\n",
				Plural(tr.InboundSuperseded, "TCP connection"), tr.LastSuperseded.Addr(), Plural(tr.SupersededFrames, "frame"))
		}
		for _, line := range supersedingLines(st.Superseding) {
			fmt.Fprintf(tw, "Superseding\t: %s\n", line)
		}
	}
	if a := st.Node.Agreement; a != nil {
		agreementLines(tw, a, st.Daemon)
	}
	if line := stampsLine(st.Node.Peers, st.Clock.Now); line != "" {
		fmt.Fprintf(tw, "Stamps\t: %s\n", line)
	}
	for _, line := range portLines(st.Node.Peers, st.Clock.Now) {
		fmt.Fprintf(tw, "Port hint\t: %s\n", line)
	}
	if len(st.Errors) > 0 {
		fmt.Fprintf(tw, "Errors\t: %s\n", reasons(st.Errors))
	}
	if line := persistLine(st.Persist); line != "" {
		fmt.Fprintf(tw, "Persist\t: %s\n", line)
	}
	if st.Trace.On {
		fmt.Fprintf(tw, "Trace\t: %s\n", strings.TrimPrefix(traceLine(st.Trace, false), "tracing to "))
	}
	if w := st.TraceWindow; w != nil {
		fmt.Fprintf(tw, "Trace window\t: %s\n", traceWindowLine(w))
	}
	for _, a := range st.TraceAsks {
		fmt.Fprintf(tw, "Member trace\t: %s\n", traceAskLine(a))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(st.Node.Core) == 0 || string(st.Node.Core) == "null" {
		return nil
	}
	fmt.Fprintln(w)
	if renderCore != nil {
		return renderCore(w, st.Node.Core, st.Clock.Now)
	}
	return PrintJSON(w, st.Node.Core)
}

// persistLine sums up the writes of the core's state, "" if none: the
// count, the slowest, and the writes over daemon.SlowPersist.
func persistLine(p daemon.PersistStatus) string {
	failing := ""
	if f := p.Failing; f != nil {
		failing = fmt.Sprintf("FAILING since %s (%d failed writes): %s: %s; nothing that depends on it is sent (and electd leads no term it wins) until a write succeeds (free space or fix permissions under --state-dir)",
			f.Since.Format("15:04:05"), f.Failed, f.File, f.Err)
	}
	if p.Writes == 0 {
		return failing
	}
	took := func(w *daemon.PersistWrite) string {
		return fmt.Sprintf("%s (sync %s)", FormatDuration(time.Duration(w.TotalUs)*time.Microsecond),
			FormatDuration(time.Duration(w.SyncUs)*time.Microsecond))
	}
	line := Plural(p.Writes, "write") + ", the slowest " + took(p.Slowest)
	if p.Slow > 0 {
		line += fmt.Sprintf("; SLOW: %d over %s, the last %s at %s (a slow or busy disk under --state-dir)",
			p.Slow, FormatDuration(daemon.SlowPersist), took(p.LastSlow), p.LastSlow.At.Format("15:04:05"))
	}
	if t := p.LastSlowTerm; t != nil {
		line += fmt.Sprintf("; LEADER CHANGES AFTER SLOW WRITES: %s, the last term %s (%s) at %s, %s after a write of %s: likely caused by the disk (while it writes a member sends no heartbeat)",
			Plural(p.SlowTerms, "new term"), epoch.Format(t.Term), t.Event, t.At.Format("15:04:05"),
			FormatDuration(time.Duration(t.AfterMs)*time.Millisecond), FormatDuration(time.Duration(t.WriteMs)*time.Millisecond))
	}
	if failing != "" {
		line += "; " + failing
	}
	return line
}

// stampsLine names the members whose Lamport stamps the node refused
// (node.LamportRate), "" if none.
func stampsLine(peers []node.PeerSeq, now time.Time) string {
	var parts []string
	for _, p := range peers {
		if p.StampsRefused == 0 {
			continue
		}
		part := fmt.Sprintf("member %d: %d refused", p.ID, p.StampsRefused)
		if !p.StampRefusedAt.IsZero() && !now.IsZero() {
			part += fmt.Sprintf(", the last %s ago", now.Sub(p.StampRefusedAt).Round(time.Second))
		}
		parts = append(parts, part)
	}
	if len(parts) == 0 {
		return ""
	}
	return strings.Join(parts, "; ") + " (beyond what any member can have reached: forged frames, or a clock pushed ahead; see the log)"
}

// portLines names, one line each, the members whose port the transport
// saw closed (node.Node.Hint): "member 3: port closed at 14:02:03.123
// (stream_closed), 2 hints". A hint is no proof: the line says so.
// hintSeen says a hint's cause, by its name in status, in words
// (core.HintCause.Seen).
func hintSeen(name string) string {
	for _, c := range core.HintCauses {
		if c.String() == name {
			return c.Seen()
		}
	}
	return "port closed"
}

// supersedingLines says, per member whose connections here keep being
// superseded now, how many, since when, what it costs, why and what to do.
func supersedingLines(ss []daemon.SupersedingStatus) []string {
	var lines []string
	for _, s := range ss {
		who := fmt.Sprintf("member %d (%v)", s.Member, s.Peer.Addr())
		if s.Member == 0 {
			who = fmt.Sprintf("%v (members share it)", s.Peer.Addr())
		}
		// Recent stops at SupersedeThrash+1: "more than", as the WARN says.
		line := fmt.Sprintf("%s: its TCP connections here keep being reset for newer ones from its IP, more than %d within %v, the last at %s UTC",
			who, transport.SupersedeThrash, transport.SupersedeWindow, s.Last.UTC().Format("15:04:05"))
		lines = append(lines, fmt.Sprintf("%s; %s in all, %s lost. Cause: %s. To do: %s", line,
			Plural(s.Connections, "connection"), Plural(s.Frames, "frame"), s.Cause, s.Hint))
	}
	return lines
}

func portLines(peers []node.PeerSeq, now time.Time) []string {
	var lines []string
	for _, p := range peers {
		if p.Hints == 0 {
			continue
		}
		line := fmt.Sprintf("member %d: %s at %s (%s)", p.ID, hintSeen(p.HintCause), p.HintAt.UTC().Format("15:04:05.000"), p.HintCause)
		if !now.IsZero() {
			line += fmt.Sprintf(", %s ago", now.Sub(p.HintAt).Round(time.Second))
		}
		if p.Hints > 1 {
			line += fmt.Sprintf(", %d hints", p.Hints)
		}
		lines = append(lines, line+" (a hint, not proof: a core that acts on it probes the member first, and its answer cancels it)")
	}
	return lines
}

// agreementLines renders configuration agreement: this member's standing
// (loud when it stepped back), its fingerprint, a line per member that
// does not agree, saying what differs, and one per member whose heartbeat
// and leader timeout do not fit this member's.
func agreementLines(w io.Writer, a *node.AgreementStatus, daemon string) {
	key := "key id " + a.KeyID
	if a.KeyID == "none" {
		key = "no key"
	}
	switch a.Standing {
	case "stepped_back":
		fmt.Fprintf(w, "Agreement\t: STEPPED BACK: %s; this member does not lead, grant, vote or sequence\n", a.Reason)
	case "starting":
		fmt.Fprintf(w, "Agreement\t: starting: %s\n", a.Reason)
	default:
		fmt.Fprintf(w, "Agreement\t: agreed with %s\n", idsText(a.Agree))
	}
	fmt.Fprintf(w, "Fingerprint\t: %s (%s; %s)\n", a.Fingerprint[:min(8, len(a.Fingerprint))], a.Algorithm, key)
	for _, m := range a.Members {
		switch m.State {
		case "agrees", "silent":
			continue
		case "differs":
			fmt.Fprintf(w, "Member %d\t: DIFFERS: %s\n", m.ID, strings.Join(m.Differs, "; "))
		case "unverified":
			why := "an older synclab?"
			if daemon == "timed" {
				why = "a timed outside --mode berkeley, or an older synclab?"
			}
			fmt.Fprintf(w, "Member %d\t: announces no configuration (%s): followed unchecked\n", m.ID, why)
		case "unknown":
			fmt.Fprintf(w, "Member %d\t: heard, its configuration not announced yet\n", m.ID)
		}
	}
	for _, m := range a.Members {
		if len(m.Timing) > 0 {
			fmt.Fprintf(w, "Timing %d\t: MISMATCH: %s\n", m.ID, strings.Join(m.Timing, "; "))
		}
	}
}

func idsText(ids []uint32) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = fmt.Sprint(id)
	}
	if len(s) == 1 {
		return "member " + s[0] + " (itself)"
	}
	return "members " + strings.Join(s, ", ")
}

// clockLine describes the clock the daemon runs on. ownsClock (timed)
// leaves the synchronisation out: timed prints its own, with the one error
// bound it keeps, below; the kernel's maximum error (what timed last set,
// then widened by the kernel at 500 ppm) would be a second, looser number.
// Other daemons have only the kernel's word, shown as an error bound in the
// same style.
func clockLine(st daemon.Status, ownsClock bool) string {
	c := st.Clock
	parts := []string{c.Kind}
	if st.TrueOffsetNs != nil {
		parts = append(parts, "true offset "+FormatOffset(time.Duration(*st.TrueOffsetNs)))
	}
	if c.Error != "" {
		return strings.Join(append(parts, "unreadable: "+c.Error), ", ")
	}
	if c.Kind == "steady" {
		// Not "unsynchronised": nobody is meant to synchronise it.
		return "steady: the oscillator, which nothing adjusts (leases and timeouts run on it, not on the system clock)"
	}
	switch {
	case ownsClock:
	case c.Synchronized && c.MaxErrorNs > 0:
		parts = append(parts, "synchronised, error bound "+FormatBound(time.Duration(c.MaxErrorNs))+" (the kernel's)")
	case c.Synchronized:
		parts = append(parts, "synchronised")
	default:
		parts = append(parts, "unsynchronised")
	}
	parts = append(parts, fmt.Sprintf("frequency %+.3f ppm", c.FrequencyPPM))
	if ownsClock {
		parts = append(parts, "synchronisation: see Time below")
	}
	return strings.Join(parts, ", ")
}

// FormatOffset prints a signed duration with a unit a human reads at a
// glance: +12.345ms, -87.000us. Every measured time synclab prints for
// people (offsets, delays, error bounds) has this one style, unsigned
// through FormatDuration and as a bound through FormatBound.
func FormatOffset(d time.Duration) string {
	sign := "+"
	if d < 0 {
		sign, d = "-", -d
	}
	return sign + FormatDuration(d)
}

// FormatDuration prints an unsigned measured duration in FormatOffset's
// style: 1.009ms, 688.770us, 2.500000s, 12ns (ASCII "us", never "µs").
func FormatDuration(d time.Duration) string {
	neg := ""
	if d < 0 {
		neg, d = "-", -d
	}
	switch {
	case d >= time.Second:
		return fmt.Sprintf("%s%.6fs", neg, d.Seconds())
	case d >= time.Millisecond:
		return fmt.Sprintf("%s%.3fms", neg, float64(d)/1e6)
	case d >= time.Microsecond:
		return fmt.Sprintf("%s%.3fus", neg, float64(d)/1e3)
	}
	return fmt.Sprintf("%s%dns", neg, d.Nanoseconds())
}

// FormatBound prints an error bound: ±688.770us.
func FormatBound(d time.Duration) string { return "±" + FormatDuration(d) }

func sum(m map[string]uint64) uint64 {
	var t uint64
	for _, v := range m {
		t += v
	}
	return t
}

// reasons renders a counter map as "7 (bad_mac 5, replay 2)".
func reasons(m map[string]uint64) string {
	t := sum(m)
	if t == 0 {
		return "0"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if m[k] > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
		}
	}
	return fmt.Sprintf("%d (%s)", t, strings.Join(parts, ", "))
}

// Plural is n with its noun, in the plural unless n is 1 ("1 key", "3
// keys"): status lines a student reads aloud.
func Plural(n uint64, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// memoryLine is status's Memory row: the resident set as the kernel
// counts it (anonymous; the executable's pages, shared with the page
// cache), the Go heap and stacks, goroutines, the collector's target and
// the releases of the executable's pages. Empty from a daemon that does
// not report it (an older version).
func memoryLine(m daemon.MemoryStatus) string {
	mb := func(b int64) string { return fmt.Sprintf("%.1f MB", float64(b)/1e6) }
	var s string
	switch {
	case m.Error != "":
		s = "resident set unreadable (" + m.Error + ")"
	case m.RSSBytes == 0:
		return ""
	default:
		s = fmt.Sprintf("%s resident (%s anonymous, %s of the executable)", mb(m.RSSBytes), mb(m.RSSAnonBytes), mb(m.RSSFileBytes))
	}
	s += fmt.Sprintf(", heap %s, stacks %s, %s", mb(int64(m.HeapInuseBytes)), mb(int64(m.StackInuseBytes)), Plural(uint64(m.Goroutines), "goroutine"))
	if m.GCPercent != 0 {
		s += fmt.Sprintf(", GOGC %d", m.GCPercent)
	}
	return s + fmt.Sprintf(", executable's pages released %s", Plural(m.PageReleases, "time"))
}
