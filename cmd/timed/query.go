package main

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/synclab/synclab/internal/app"
	"github.com/synclab/synclab/internal/transport"
	"github.com/synclab/synclab/pkg/timesync/ntp"
	"github.com/synclab/synclab/pkg/timesync/server"
	"github.com/synclab/synclab/pkg/wire"
)

// queryInterval is the spacing of `timed query` requests: no faster than
// two per second, to stay well inside any server's rate limit (timed's own
// allows bursts of 8 at any rate, chrony's default is 8 then one per 2 s).
const queryInterval = 500 * time.Millisecond

// queryPrecision is the precision assumed for the local (system) clock:
// about 1 us, the floor under every delay.
const queryPrecision = -20

// lookupHost resolves a query target that is not an IP literal. It is a
// variable so that tests can exercise resolver failures without any DNS
// traffic.
var lookupHost = func(ctx context.Context, host string) ([]netip.Addr, error) {
	return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
}

func queryCommand() *cli.Command {
	return &cli.Command{
		Name:      "query",
		Usage:     "measure the local clock against an NTP server, once, without changing it",
		ArgsUsage: "HOST[:PORT]",
		Description: "Sends N NTP client requests (mode 3) half a second apart from a socket with kernel\n" +
			"receive timestamps, validates every reply, and reports the minimum-delay sample:\n" +
			"  offset = local clock - server clock = -((T2 - T1) + (T3 - T4)) / 2\n" +
			"    (positive: the local clock is ahead; ntpdate/ntpdig print the opposite sign,\n" +
			"    the correction to apply)\n" +
			"  delay  = (T4 - T1) - (T3 - T2)\n" +
			"  error bound = delay/2 + root delay/2 + root dispersion\n" +
			"    (the true offset to the server's reference lies within offset +- error bound)\n" +
			"It stops at a kiss-o'-death. The local clock is only read. Exit status: 0 with a valid\n" +
			"answer, 1 without one (the reason is printed), 2 for a usage error.\n\n" +
			"With --proto cristian it asks a timed server (its --serve address) with Cristian's\n" +
			"algorithm instead: the server's time t in each reply, the request's round trip RTT,\n" +
			"  offset = local clock - (t + RTT/2), delay = RTT,\n" +
			"  error bound = RTT/2 + root delay/2 + root dispersion,\n" +
			"the reply with the smallest RTT kept. --cluster and --cluster-key-file must match the\n" +
			"server's --cluster and --key-file.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "proto", Value: "ntp", Usage: "protocol: `ntp`, or cristian (a timed server)"},
			&cli.StringFlag{Name: "cluster", Value: "synclab", Usage: "with --proto cristian: the server's cluster `NAME`"},
			&cli.StringFlag{Name: "cluster-key-file", Usage: "with --proto cristian: the server's synclab key file (`PATH`), to authenticate"},
			&cli.IntFlag{Name: "samples", Aliases: []string{"n"}, Value: 4, Usage: "number of requests (1-64)"},
			&cli.DurationFlag{Name: "timeout", Value: time.Second, Usage: "how long to wait for each reply"},
			&cli.StringFlag{Name: "key-file", Usage: "chrony-format NTP key file (`PATH`) to authenticate with (needs --key-id)"},
			&cli.UintFlag{Name: "key-id", Usage: "key `ID` in --key-file"},
			sourceFlag,
			app.JSONFlag,
		},
		Action: queryAction,
	}
}

func queryAction(c *cli.Context) error {
	if c.NArg() != 1 {
		return app.Usagef("query takes one argument, HOST[:PORT] (got %d)", c.NArg())
	}
	proto := c.String("proto")
	switch proto {
	case "ntp":
		if c.IsSet("cluster") || c.IsSet("cluster-key-file") {
			return app.Usagef("--cluster and --cluster-key-file are for --proto cristian")
		}
	case "cristian":
		if c.IsSet("key-file") || c.IsSet("key-id") {
			return app.Usagef("--key-file and --key-id are NTP keys; with --proto cristian give --cluster-key-file")
		}
	default:
		return app.Usagef("--proto %q: want ntp or cristian", proto)
	}
	n := c.Int("samples")
	if n < 1 || n > 64 {
		return app.Usagef("-n %d: want 1 to 64 requests", n)
	}
	timeout := c.Duration("timeout")
	if timeout <= 0 {
		return app.Usagef("--timeout %v: want a positive duration", timeout)
	}
	var key *wire.NTPKey
	switch {
	case c.IsSet("key-file") != c.IsSet("key-id"):
		return app.Usagef("--key-file and --key-id go together")
	case c.IsSet("key-file"):
		k, err := loadKey(c.String("key-file"), c.Uint("key-id"))
		if err != nil {
			return err
		}
		key = &k
	}
	target := c.Args().First()
	ctx, cancel := context.WithTimeout(c.Context, 10*time.Second)
	addr, err := resolveTarget(ctx, target)
	cancel()
	if err != nil {
		return err
	}
	source, err := sourceAddr(c, addr)
	if err != nil {
		return err
	}
	// A socket connected to the server: only its datagrams come in, and
	// a port with nothing behind it is told from silence (ICMP).
	conn, err := transport.DialUDP(source, addr)
	if err != nil {
		return fmt.Errorf("opening a UDP socket from %v to %v: %w", source.Addr(), addr, err)
	}
	defer conn.Close()
	opt := queryOptions{target: addr, count: n, interval: queryInterval, timeout: timeout, key: key, now: time.Now}
	var res queryResult
	if proto == "cristian" {
		var keys []wire.Key
		if path := c.String("cluster-key-file"); path != "" {
			if keys, err = app.LoadKeys(path); err != nil {
				return err
			}
		}
		res = runCristianQuery(c.Context, conn, opt, wire.ClusterID(c.String("cluster")), keys)
	} else {
		res = runQuery(c.Context, conn, opt)
	}
	res.Server = target
	if c.Bool("json") {
		b, err := json.Marshal(res)
		if err != nil {
			return err
		}
		if err := app.PrintJSON(c.App.Writer, b); err != nil {
			return err
		}
	} else {
		printQuery(c.App.Writer, res)
	}
	if !res.Valid {
		return app.ExitError{Code: 1, Msg: fmt.Sprintf("no valid answer from %s: %s", target, res.Error)}
	}
	return nil
}

func loadKey(path string, id uint) (wire.NTPKey, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return wire.NTPKey{}, fmt.Errorf("--key-file: %w", err)
	}
	keys, err := wire.ParseChronyKeys(data)
	if err != nil {
		return wire.NTPKey{}, fmt.Errorf("--key-file %s: %w", path, err)
	}
	for _, k := range keys {
		if uint(k.ID) == id {
			return k, nil
		}
	}
	return wire.NTPKey{}, app.Usagef("--key-id %d: no such key in %s", id, path)
}

// resolveTarget turns HOST, HOST:PORT, [IPv6]:PORT or IPv6 into an
// address, with port 123 by default. Only a name goes to the resolver.
func resolveTarget(ctx context.Context, s string) (netip.AddrPort, error) {
	host, port := s, uint64(ntpPort)
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap, nil
	}
	if a, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")); err == nil {
		return netip.AddrPortFrom(a, ntpPort), nil
	}
	if h, p, err := net.SplitHostPort(s); err == nil {
		host = h
		if port, err = strconv.ParseUint(p, 10, 16); err != nil || port == 0 {
			return netip.AddrPort{}, app.Usagef("%q: bad port %q", s, p)
		}
	}
	if host == "" {
		return netip.AddrPort{}, app.Usagef("%q: no host", s)
	}
	addrs, err := lookupHost(ctx, host)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("%s does not resolve: %w", host, err)
	}
	if len(addrs) == 0 {
		return netip.AddrPort{}, fmt.Errorf("%s does not resolve: no addresses", host)
	}
	best := addrs[0]
	for _, a := range addrs { // IPv4 first: the lab LANs are IPv4
		if a.Unmap().Is4() {
			best = a.Unmap()
			break
		}
	}
	return netip.AddrPortFrom(best, uint16(port)), nil
}

// sourceFlag chooses the address queries are sent from (a server whose
// allow list leaves out 127.0.0.1 refuses a query from it).
var sourceFlag = &cli.StringFlag{Name: "source", Usage: "send from this local `ADDR` (an IP of this host; default: the kernel's choice)"}

// sourceAddr reads --source for queries to target: an IP of target's
// family, port 0; unset, the kernel picks.
func sourceAddr(c *cli.Context, target netip.AddrPort) (netip.AddrPort, error) {
	s := c.String("source")
	if s == "" {
		return netip.AddrPort{}, nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.AddrPort{}, app.Usagef("--source %q: want an IP address of this host", s)
	}
	if a.Unmap().Is4() != target.Addr().Unmap().Is4() {
		return netip.AddrPort{}, app.Usagef("--source %v and the server %v are of different address families", a, target.Addr())
	}
	return netip.AddrPortFrom(a.Unmap(), 0), nil
}

// refusedResult is what a request gets when the server's host answers
// with ICMP port unreachable: `timed query` and `timed compare` say the
// same.
const refusedResult = "port unreachable: nothing listens there (ICMP: connection refused)"

// refused reports whether conn saw a port unreachable since count was
// taken.
func refused(conn *transport.UDPConn, count uint64) bool { return conn.Stats().Refused > count }

type queryOptions struct {
	target   netip.AddrPort
	count    int
	interval time.Duration // between requests
	timeout  time.Duration // for each reply
	key      *wire.NTPKey  // sign requests, require signed replies
	now      func() time.Time
	refused  uint64 // the socket's Stats.Refused before the request in flight
}

// queryResult is what `timed query --json` prints.
type queryResult struct {
	Server  string `json:"server"`  // as given
	Address string `json:"address"` // as queried
	// Valid says whether some reply passed every check; Error says why
	// none did.
	Valid    bool   `json:"valid"`
	Error    string `json:"error,omitempty"`
	KissCode string `json:"kiss_code,omitempty"`
	// Of the valid sample with the smallest delay. OffsetNs is the local
	// clock minus the server's clock.
	OffsetNs         int64     `json:"offset_ns"`
	DelayNs          int64     `json:"delay_ns"`
	ErrorBoundNs     int64     `json:"error_bound_ns"`
	Stratum          uint8     `json:"stratum"`
	Leap             uint8     `json:"leap"`
	RefID            string    `json:"refid"`
	RootDelayNs      int64     `json:"root_delay_ns"`
	RootDispersionNs int64     `json:"root_dispersion_ns"`
	Precision        int8      `json:"precision"`
	Version          uint8     `json:"version"`
	ReferenceTime    time.Time `json:"reference_time,omitzero"`
	// KeyID is the key replies were authenticated with (0: none).
	KeyID uint32 `json:"key_id,omitempty"`
	// KernelTimestamps says whether every reply's T4 was a kernel stamp.
	KernelTimestamps bool          `json:"kernel_timestamps"`
	Samples          []querySample `json:"samples"`
}

// querySample is one request and what became of it.
type querySample struct {
	Seq    int    `json:"seq"`
	Valid  bool   `json:"valid"`
	Result string `json:"result"` // "ok", or why the reply was refused, or "timeout"
	// Set when the reply gave a measurement.
	OffsetNs *int64 `json:"offset_ns,omitempty"`
	DelayNs  *int64 `json:"delay_ns,omitempty"`
	// Set when a reply arrived.
	Stratum *uint8 `json:"stratum,omitempty"`
	Leap    *uint8 `json:"leap,omitempty"`
}

// stopError marks an outcome after which no more requests are sent: a
// kiss-o'-death, a crypto-NAK, an interruption.
type stopError struct{ error }

func stop(err error) error { return stopError{err} }

// runQuery sends opt.count requests and collects the replies. It never
// fails as a whole: every problem is a sample's result, summed up in
// Error when no sample is valid.
func runQuery(ctx context.Context, conn *transport.UDPConn, opt queryOptions) queryResult {
	res := queryResult{Address: opt.target.String(), KernelTimestamps: true, Samples: []querySample{}}
	assoc, err := ntp.NewAssociation(wire.ModeClient, ntp.Precision(queryPrecision))
	if err != nil {
		panic(err) // mode 3 is always valid
	}
	var best *ntp.Sample
	var lastSend time.Time
	stopped := false
	for seq := 1; seq <= opt.count && !stopped && ctx.Err() == nil; seq++ {
		if !lastSend.IsZero() {
			if wait := opt.interval - opt.now().Sub(lastSend); wait > 0 {
				select {
				case <-time.After(wait):
				case <-ctx.Done():
				}
			}
		}
		smp := querySample{Seq: seq}
		lastSend = opt.now()
		opt.refused = conn.Stats().Refused
		xmt, err := sendRequest(conn, assoc, opt)
		if err != nil {
			smp.Result = "send failed: " + err.Error()
			res.Samples = append(res.Samples, smp)
			continue
		}
		sample, err := awaitReply(ctx, conn, assoc, xmt, opt, &smp, &res)
		var se stopError
		switch {
		case err == nil:
			smp.Valid, smp.Result = true, "ok"
			off, delay := int64(-sample.Offset), int64(sample.Delay)
			smp.OffsetNs, smp.DelayNs = &off, &delay
			if best == nil || sample.Delay < best.Delay {
				best = &sample
				peer, _ := assoc.Peer()
				res.setPeer(peer)
			}
		case errors.As(err, &se):
			stopped = true
			smp.Result = se.Error()
		default:
			smp.Result = err.Error()
		}
		res.Samples = append(res.Samples, smp)
	}
	if best == nil {
		res.Error = summarise(res.Samples, opt)
		return res
	}
	res.Valid, res.Error = true, ""
	res.OffsetNs = int64(-best.Offset)
	res.DelayNs = int64(best.Delay)
	res.ErrorBoundNs = int64(best.Delay/2) + res.RootDelayNs/2 + res.RootDispersionNs
	if opt.key != nil {
		res.KeyID = opt.key.ID
	}
	return res
}

func (r *queryResult) setPeer(p ntp.Peer) {
	r.Stratum, r.Leap, r.Version, r.Precision = p.Stratum, p.Leap, p.Version, p.Precision
	r.RefID = server.RefIDString(p.Stratum, p.ReferenceID)
	r.RootDelayNs, r.RootDispersionNs = int64(p.RootDelay), int64(p.RootDispersion)
	r.ReferenceTime = p.Reference
}

// sendRequest writes one request, its transmit timestamp (and MAC) put in
// right before the write, and tells the association the exact T1.
func sendRequest(conn *transport.UDPConn, assoc *ntp.Association, opt queryOptions) (wire.NTPTime, error) {
	req := assoc.Request(opt.now(), 0, ntp.Unsynchronized(queryPrecision))
	b, err := req.AppendBinary(make([]byte, 0, wire.NTPHeaderLen+4+64))
	if err != nil {
		return 0, err
	}
	var t1 time.Time
	var xmt wire.NTPTime
	stamp, err := conn.SendStamped(opt.target, b, func(b []byte) []byte {
		t1 = opt.now()
		xmt = wire.NTPTimeFromTime(t1)
		binary.BigEndian.PutUint64(b[wire.NTPXmtOffset:], uint64(xmt))
		if opt.key != nil {
			b = wire.AppendNTPMAC(b[:wire.NTPHeaderLen], *opt.key)
		}
		return b
	})
	if err == nil {
		assoc.Sent(xmt, departure(t1, stamp))
	}
	return xmt, err
}

// departure is T1: the kernel's transmit stamp when there is a plausible
// one (the clock read before the write precedes the departure by the whole
// sendmsg path), else the clock reading.
func departure(read time.Time, stamp transport.TxStamp) time.Time {
	if stamp.Kernel && !stamp.Time.Before(read) && stamp.Time.Sub(read) < 50*time.Millisecond {
		return stamp.Time
	}
	return read
}

// awaitReply waits up to opt.timeout for the reply to the last request.
// Packets from elsewhere, and replies to earlier requests (late or
// duplicated), are skipped.
func awaitReply(ctx context.Context, conn *transport.UDPConn, assoc *ntp.Association, xmt wire.NTPTime, opt queryOptions, smp *querySample, res *queryResult) (ntp.Sample, error) {
	timer := time.NewTimer(opt.timeout)
	defer timer.Stop()
	for {
		var pkt transport.Packet
		select {
		case <-ctx.Done():
			return ntp.Sample{}, stop(errors.New("interrupted"))
		case <-timer.C:
			if smp.Result != "" { // a refused reply is a better reason than silence
				return ntp.Sample{}, errors.New(smp.Result)
			}
			if refused(conn, opt.refused) {
				return ntp.Sample{}, errors.New(refusedResult)
			}
			return ntp.Sample{}, errors.New("timeout")
		case p, ok := <-conn.Packets():
			if !ok {
				return ntp.Sample{}, stop(errors.New("socket closed"))
			}
			pkt = p
		}
		if pkt.From.Addr().Unmap() != opt.target.Addr().Unmap() || pkt.From.Port() != opt.target.Port() {
			continue
		}
		var p wire.NTPPacket
		if err := p.UnmarshalBinary(pkt.Data); err != nil {
			continue // not NTP; keep waiting for the real reply
		}
		if p.Mode == wire.ModeServer && p.Origin == xmt {
			st, lp := p.Stratum, p.Leap
			smp.Stratum, smp.Leap = &st, &lp
		}
		if opt.key != nil {
			if err := checkReplyMAC(pkt.Data, *opt.key); err != nil {
				if wire.IsCryptoNAK(pkt.Data) && p.Origin == xmt {
					return ntp.Sample{}, stop(err)
				}
				smp.Result = err.Error()
				continue // possibly forged: wait for an authentic one
			}
		}
		if !pkt.Kernel {
			res.KernelTimestamps = false
		}
		sample, err := assoc.Receive(&p, pkt.Time)
		var kiss *ntp.KissError
		switch {
		case err == nil:
			return sample, nil
		case errors.Is(err, ntp.ErrBogus), errors.Is(err, ntp.ErrDuplicate), errors.Is(err, ntp.ErrZeroOrigin), errors.Is(err, ntp.ErrMode):
			continue // not the reply to this request
		case errors.As(err, &kiss):
			res.KissCode = kiss.Code
			return ntp.Sample{}, stop(fmt.Errorf("kiss-o'-death %s%s", kiss.Code, kissMeaning[kiss.Code]))
		}
		return ntp.Sample{}, err
	}
}

// kissMeaning explains the common kiss codes (RFC 5905 section 7.4).
var kissMeaning = map[string]string{
	"RATE": " (polling too fast: the server rate-limits this client)",
	"DENY": " (access denied by the server)",
	"RSTR": " (access restricted by the server)",
	"AUTH": " (authentication failed)",
}

// checkReplyMAC requires a reply MAC'd with k.
func checkReplyMAC(b []byte, k wire.NTPKey) error {
	pkt, id, digest, err := wire.SplitNTPMAC(b)
	switch {
	case err != nil:
		return fmt.Errorf("unauthenticated reply: %w", err)
	case digest == nil:
		return errors.New("unauthenticated reply (no MAC)")
	case wire.IsCryptoNAK(b):
		return fmt.Errorf("crypto-NAK: the server could not authenticate our request with key %d", k.ID)
	case id != k.ID:
		return fmt.Errorf("reply signed with key %d, not %d", id, k.ID)
	}
	return wire.VerifyNTPMAC(pkt, id, digest, []wire.NTPKey{k})
}

// summarise says why no sample was valid.
func summarise(samples []querySample, opt queryOptions) string {
	if len(samples) == 0 {
		return "interrupted before any request"
	}
	timeouts, refusals := 0, 0
	for _, s := range samples {
		switch s.Result {
		case "timeout":
			timeouts++
		case refusedResult:
			refusals++
		}
	}
	last := samples[len(samples)-1].Result
	switch {
	case timeouts == len(samples):
		return fmt.Sprintf("timeout: no reply to %d requests within %v each", len(samples), opt.timeout)
	case refusals > 0 && timeouts+refusals == len(samples):
		return fmt.Sprintf("%s: no NTP server on %v", refusedResult, opt.target)
	case strings.Contains(last, ntp.ErrUnsynchronized.Error()), strings.Contains(last, ntp.ErrStratum.Error()):
		return "the server is not synchronised (" + last + ")"
	}
	return last
}

func printQuery(w io.Writer, r queryResult) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "#\tOffset (local - server)\tDelay\tResult\n")
	for _, s := range r.Samples {
		off, delay := "-", "-"
		if s.OffsetNs != nil {
			off, delay = app.FormatOffset(time.Duration(*s.OffsetNs)), fmtDur(time.Duration(*s.DelayNs))
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", s.Seq, off, delay, s.Result)
	}
	tw.Flush()
	if !r.Valid {
		return
	}
	auth := ""
	if r.KeyID != 0 {
		auth = fmt.Sprintf(", authenticated with key %d", r.KeyID)
	}
	fmt.Fprintf(w, "server %s (%s): stratum %d, refid %s, leap %d, NTPv%d%s\n", r.Server, r.Address, r.Stratum, r.RefID, r.Leap, r.Version, auth)
	fmt.Fprintf(w, "offset %s (local clock minus server), delay %s, error bound +-%s\n",
		app.FormatOffset(time.Duration(r.OffsetNs)), fmtDur(time.Duration(r.DelayNs)), fmtDur(time.Duration(r.ErrorBoundNs)))
	fmt.Fprintf(w, "root delay %s, root dispersion %s; best of %d valid samples out of %d\n",
		fmtDur(time.Duration(r.RootDelayNs)), fmtDur(time.Duration(r.RootDispersionNs)), validCount(r.Samples), len(r.Samples))
}

func validCount(s []querySample) int {
	n := 0
	for _, x := range s {
		if x.Valid {
			n++
		}
	}
	return n
}
