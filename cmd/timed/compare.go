package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/beevik/ntp"
	"github.com/urfave/cli/v2"

	"github.com/synclab/synclab/internal/app"
	"github.com/synclab/synclab/internal/daemon"
	"github.com/synclab/synclab/pkg/timesync/server"
	"github.com/synclab/synclab/pkg/timesync/timedcore"
)

// defaultCompareServers are queried when no --server is given. A user
// feature only: tests always pass local servers.
var defaultCompareServers = []string{"0.pool.ntp.org", "1.pool.ntp.org", "2.pool.ntp.org", "time.cloudflare.com"}

// ntpQuery is beevik/ntp's query, a variable so that tests can inject
// resolver failures and kiss-o'-death answers without any traffic.
var ntpQuery = ntp.QueryWithOptions

func compareCommand() *cli.Command {
	return &cli.Command{
		Name:  "compare",
		Usage: "query several NTP servers at once and compare them with each other and the local daemon",
		Description: "Queries every --server concurrently (github.com/beevik/ntp) and prints, for each, the\n" +
			"offset of the local clock against it (local - server, as `timed query`), the round trip,\n" +
			"stratum, root distance and validation verdict, then the spread (max - min offset) among\n" +
			"the valid ones, beside the local timed daemon's own view (read through --control).\n" +
			"Default servers: " + strings.Join(defaultCompareServers, ", ") + ".\n" +
			"Exit status 1 if no server answered validly.",
		Flags: []cli.Flag{
			&cli.StringSliceFlag{Name: "server", Usage: "NTP server `HOST[:PORT]` (repeatable)"},
			&cli.DurationFlag{Name: "timeout", Value: 2 * time.Second, Usage: "per-server timeout"},
			sourceFlag,
			app.ControlFlag(name),
			app.JSONFlag,
		},
		Action: compareAction,
	}
}

// compareResult is what `timed compare --json` prints.
type compareResult struct {
	Local      *localView     `json:"local"`                 // nil without a reachable daemon
	LocalError string         `json:"local_error,omitempty"` // why there is no local view
	Servers    []compareEntry `json:"servers"`
	Valid      int            `json:"valid"`     // servers that answered validly
	SpreadNs   *int64         `json:"spread_ns"` // max - min offset among them; null below 2
}

// compareEntry is one server's answer.
type compareEntry struct {
	Server         string `json:"server"`
	Valid          bool   `json:"valid"`
	Verdict        string `json:"verdict"` // "ok", beevik's validation error, "kiss-o'-death RATE", the query error
	KissCode       string `json:"kiss_code,omitempty"`
	Error          string `json:"error,omitempty"`      // the query failed (timeout, resolution)
	Unresolved     bool   `json:"unresolved,omitempty"` // the name does not resolve
	OffsetNs       int64  `json:"offset_ns"`            // local clock minus server clock
	RTTNs          int64  `json:"rtt_ns"`
	Stratum        uint8  `json:"stratum"`
	RootDistanceNs int64  `json:"root_distance_ns"`
	RefID          string `json:"refid,omitempty"`
	Leap           uint8  `json:"leap"`
}

// localView is the local daemon's own view of its clock.
type localView struct {
	Control string `json:"control"`
	Clock   string `json:"clock"`
	// Sync is timed's own view (`timed status`'s Time line): the one
	// error bound.
	Sync timedcore.Sync `json:"sync"`
	// Synchronized, EstErrorNs and MaxErrorNs are the kernel's (kept for
	// scripts; the bound to read is Sync's).
	Synchronized bool    `json:"synchronized"`
	EstErrorNs   int64   `json:"est_error_ns"`
	MaxErrorNs   int64   `json:"max_error_ns"`
	FrequencyPPM float64 `json:"frequency_ppm"`
	// TrueOffsetNs: a simulated clock's exact error against the system
	// clock.
	TrueOffsetNs *int64 `json:"true_offset_ns,omitempty"`
	// Serving: the stratum the daemon's NTP server advertises, if any.
	ServingStratum *uint8 `json:"serving_stratum,omitempty"`
}

func compareAction(c *cli.Context) error {
	if c.NArg() > 0 {
		return app.Usagef("compare takes no arguments: give servers with --server")
	}
	servers := c.StringSlice("server")
	if len(servers) == 0 {
		servers = defaultCompareServers
	}
	timeout := c.Duration("timeout")
	if timeout <= 0 {
		return app.Usagef("--timeout %v: want a positive duration", timeout)
	}
	source := c.String("source")
	if source != "" {
		if _, err := netip.ParseAddr(source); err != nil {
			return app.Usagef("--source %q: want an IP address of this host", source)
		}
	}
	var res compareResult
	var wg sync.WaitGroup
	wg.Go(func() { res.Local, res.LocalError = localDaemonView(c) })
	res.Servers = compareServers(servers, timeout, source)
	wg.Wait()
	res.summarise()
	if c.Bool("json") {
		b, err := json.Marshal(res)
		if err != nil {
			return err
		}
		if err := app.PrintJSON(c.App.Writer, b); err != nil {
			return err
		}
	} else {
		printCompare(c.App.Writer, res)
	}
	if res.Valid == 0 {
		return app.ExitError{Code: 1, Msg: "no server answered validly"}
	}
	return nil
}

// compareServers queries every server concurrently, each with its own
// timeout, from source (an IP, or "": the kernel's choice), and returns
// the entries in the order given.
func compareServers(servers []string, timeout time.Duration, source string) []compareEntry {
	out := make([]compareEntry, len(servers))
	var wg sync.WaitGroup
	for i, s := range servers {
		wg.Go(func() { out[i] = queryOne(s, timeout, source) })
	}
	wg.Wait()
	return out
}

func queryOne(host string, timeout time.Duration, source string) compareEntry {
	e := compareEntry{Server: host}
	r, err := ntpQuery(host, ntp.QueryOptions{Timeout: timeout, LocalAddress: source})
	if err != nil {
		var dns *net.DNSError
		var ne net.Error
		switch {
		case errors.As(err, &dns):
			e.Unresolved = true
			e.Error = fmt.Sprintf("%s does not resolve: %s", dns.Name, dns.Err)
		case errors.Is(err, syscall.ECONNREFUSED):
			e.Error = refusedResult // as `timed query` says it
		case errors.As(err, &ne) && ne.Timeout():
			e.Error = fmt.Sprintf("timeout: no answer within %v", timeout)
		default:
			e.Error = err.Error()
		}
		e.Verdict = e.Error
		return e
	}
	e.OffsetNs = -int64(r.ClockOffset) // beevik's is server - local
	e.RTTNs = int64(r.RTT)
	e.Stratum = r.Stratum
	e.RootDistanceNs = int64(r.RootDistance)
	e.Leap = uint8(r.Leap)
	e.RefID = server.RefIDString(r.Stratum, r.ReferenceID)
	switch {
	case r.IsKissOfDeath() && r.KissCode != "":
		e.KissCode = r.KissCode
		e.Verdict = "kiss-o'-death " + r.KissCode + kissMeaning[r.KissCode]
		return e
	case r.Stratum == 0 && r.Leap == ntp.LeapNotInSync:
		// Stratum 0 with no kiss code: an unsynchronised server, as
		// `timed query` calls it (pkg/timesync/ntp), not a kiss.
		e.Verdict = "the server is not synchronised (leap 3, stratum 0)"
		return e
	case r.Stratum == 0:
		e.Verdict = "invalid stratum 0 (no kiss code)"
		return e
	}
	if err := r.Validate(); err != nil {
		e.Verdict = err.Error()
		return e
	}
	e.Valid, e.Verdict = true, "ok"
	return e
}

func (r *compareResult) summarise() {
	var lo, hi int64
	for _, e := range r.Servers {
		if !e.Valid {
			continue
		}
		if r.Valid == 0 || e.OffsetNs < lo {
			lo = e.OffsetNs
		}
		if r.Valid == 0 || e.OffsetNs > hi {
			hi = e.OffsetNs
		}
		r.Valid++
	}
	if r.Valid >= 2 {
		spread := hi - lo
		r.SpreadNs = &spread
	}
}

// localDaemonView reads the local daemon's status; the string says why
// there is none.
func localDaemonView(c *cli.Context) (*localView, string) {
	ctx, cancel := context.WithTimeout(c.Context, 2*time.Second)
	defer cancel()
	var st struct {
		daemon.Status
		Node struct {
			Core coreView `json:"core"`
		} `json:"node"`
	}
	if err := app.Client(c).Get(ctx, "/v1/status", &st); err != nil {
		return nil, "no local daemon (" + err.Error() + ")"
	}
	v := &localView{
		Control:      c.String("control"),
		Clock:        st.Clock.Kind,
		Sync:         st.Node.Core.Sync,
		Synchronized: st.Clock.Synchronized,
		EstErrorNs:   st.Clock.EstErrorNs,
		MaxErrorNs:   st.Clock.MaxErrorNs,
		FrequencyPPM: st.Clock.FrequencyPPM,
		TrueOffsetNs: st.TrueOffsetNs,
	}
	if s := st.Node.Core.Server; s != nil {
		v.ServingStratum = &s.System.Stratum
	}
	return v, ""
}

func printCompare(w io.Writer, r compareResult) {
	if r.Local == nil {
		fmt.Fprintf(w, "Local daemon: %s\n", r.LocalError)
	} else {
		l := r.Local
		parts := []string{l.Clock + " clock", syncLine(l.Sync), fmt.Sprintf("frequency %+.3f ppm", l.FrequencyPPM)}
		if l.TrueOffsetNs != nil {
			parts = append(parts, "true offset "+app.FormatOffset(time.Duration(*l.TrueOffsetNs)))
		}
		if l.ServingStratum != nil {
			parts = append(parts, fmt.Sprintf("serving NTP at stratum %d", *l.ServingStratum))
		}
		fmt.Fprintf(w, "Local daemon (%s): %s\n", l.Control, strings.Join(parts, ", "))
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "Server\tOffset (local - server)\tRTT\tStratum\tRefid\tRoot distance\tVerdict")
	for _, e := range r.Servers {
		if e.Error != "" {
			fmt.Fprintf(tw, "%s\t-\t-\t-\t-\t-\t%s\n", e.Server, e.Verdict)
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\n", e.Server, app.FormatOffset(time.Duration(e.OffsetNs)),
			fmtDur(time.Duration(e.RTTNs)), e.Stratum, e.RefID, fmtDur(time.Duration(e.RootDistanceNs)), e.Verdict)
	}
	tw.Flush()
	switch {
	case r.SpreadNs != nil:
		fmt.Fprintf(w, "Spread: %s between the %d valid servers (max - min offset)\n", fmtDur(time.Duration(*r.SpreadNs)), r.Valid)
	case r.Valid == 1:
		fmt.Fprintln(w, "Spread: - (one valid server)")
	default:
		fmt.Fprintln(w, "Spread: - (no valid server)")
	}
}
