package timed

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/beevik/ntp"
	"github.com/synclab/synclab/internal/testkit/e2e"
	"github.com/synclab/synclab/pkg/wire"
)

// serveTimed starts host i of c as an NTP server on a free port of its own
// address, on a simulated clock offset by offset, and returns the address
// once the daemon answers status.
func serveTimed(t *testing.T, c *cluster, i int, offset time.Duration, args ...string) netip.AddrPort {
	t.Helper()
	ip := fmt.Sprintf("127.0.0.%d", 30+i)
	addr := netip.MustParseAddrPort(fmt.Sprintf("%s:%d", ip, e2e.FreePort(t, ip)))
	c.Start(i, append([]string{"--clock", "sim", "--sim-offset", offset.String(), "--serve", addr.String()}, args...)...)
	c.Eventually(fmt.Sprintf("host %d serving NTP", i), 5*time.Second, func() bool {
		st, err := c.Status(i)
		return err == nil && st["datagram"] != nil
	})
	return addr
}

func timedQuery(t *testing.T, args ...string) (e2e.TimedQueryJSON, int, string) {
	t.Helper()
	cmd := exec.Command(filepath.Join(e2e.BinDir(), "timed"), append([]string{"query"}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var q e2e.TimedQueryJSON
	if len(out) > 0 {
		if jerr := json.Unmarshal(out, &q); jerr != nil {
			t.Fatalf("timed query %v: %v\n%s", args, jerr, out)
		}
	}
	return q, e2e.ExitCode(err), stderr.String()
}

// The server on a clock 75 ms ahead: `timed query` sees the local (system)
// clock 75 ms behind it, beevik/ntp sees the same, and both accept the
// answer of a stratum-8 server.
func TestTimedServeQueryAndBeevik(t *testing.T) {
	c := newCluster(t, "timed", 1)
	const simOffset = 75 * time.Millisecond
	addr := serveTimed(t, c, 1, simOffset, "--stratum", "8")

	q, code, stderr := timedQuery(t, addr.String(), "--json")
	if code != 0 || !q.Valid {
		t.Fatalf("timed query: exit %d, %+v, %s", code, q, stderr)
	}
	off := time.Duration(q.OffsetNs)
	t.Logf("timed query: offset %v, delay %v, error bound %v", off, time.Duration(q.DelayNs), time.Duration(q.ErrorBoundNs))
	if !e2e.Within(off, -simOffset, 2*time.Millisecond) {
		t.Errorf("offset %v, want -75ms (the local clock minus the server's) within 2ms", off)
	}
	if q.DelayNs <= 0 || q.DelayNs > int64(5*time.Millisecond) {
		t.Errorf("delay %v on loopback", time.Duration(q.DelayNs))
	}
	if q.ErrorBoundNs < q.DelayNs/2 {
		t.Errorf("error bound %d below delay/2 (%d)", q.ErrorBoundNs, q.DelayNs/2)
	}
	if q.Stratum != 8 || q.Leap != 0 || q.RefID != "LOCL" || len(q.Samples) != 4 {
		t.Errorf("stratum %d leap %d refid %q, %d samples", q.Stratum, q.Leap, q.RefID, len(q.Samples))
	}

	r, err := ntp.QueryWithOptions(addr.String(), ntp.QueryOptions{Timeout: 2 * time.Second})
	if err != nil {
		t.Fatalf("beevik/ntp: %v", err)
	}
	if err := r.Validate(); err != nil {
		t.Errorf("beevik/ntp refuses the answer: %v (%+v)", err, r)
	}
	// beevik's ClockOffset is the server minus the local clock.
	if !e2e.Within(r.ClockOffset, simOffset, 2*time.Millisecond) || !e2e.Within(-r.ClockOffset, off, 2*time.Millisecond) {
		t.Errorf("beevik offset %v, timed query %v: want +75ms and its opposite", r.ClockOffset, off)
	}
	if r.Stratum != 8 || r.Leap != ntp.LeapNoWarning || r.Version != 4 {
		t.Errorf("beevik: stratum %d leap %d version %d", r.Stratum, r.Leap, r.Version)
	}

	// The human status shows the server block with what was served.
	out, err := exec.Command(filepath.Join(e2e.BinDir(), "timed"), "status", "--control", c.Control(1)).CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte("NTP server : stratum 8 (local stratum 8), leap 0")) ||
		!bytes.Contains(out, []byte("Requests   : 5, replies 5")) {
		t.Errorf("status (%v):\n%s", err, out)
	}
}

// Without --stratum the server says it is unsynchronised: beevik refuses
// the time and `timed query` exits 1 saying why.
func TestTimedServeUnsynchronised(t *testing.T) {
	c := newCluster(t, "timed", 1)
	addr := serveTimed(t, c, 1, 0)
	q, code, stderr := timedQuery(t, addr.String(), "--json", "-n", "1")
	if code != 1 || q.Valid || !strings.Contains(q.Error, "not synchronised") || !strings.Contains(stderr, "not synchronised") {
		t.Errorf("exit %d, %+v, stderr %s", code, q, stderr)
	}
	r, err := ntp.QueryWithOptions(addr.String(), ntp.QueryOptions{Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Validate(); err == nil || r.Leap != ntp.LeapNotInSync || r.Stratum != 16 {
		t.Errorf("beevik: validate %v, leap %d stratum %d", err, r.Leap, r.Stratum)
	}
}

// A client firing a burst is answered for the burst, then gets one RATE
// kiss-o'-death, then silence; `timed query` from that address stops at
// the kiss and says so.
func TestTimedServeRateLimit(t *testing.T) {
	c := newCluster(t, "timed", 1)
	addr := serveTimed(t, c, 1, 0, "--stratum", "8")
	// A source address of its own, so that no other test traffic shares
	// its bucket.
	conn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 99)})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	const burst = 30
	for i := range burst {
		req := wire.NTPPacket{Version: 4, Mode: wire.ModeClient, Transmit: wire.NTPTime(i + 1)}
		b, _ := req.AppendBinary(nil)
		if _, err := conn.WriteToUDPAddrPort(b, addr); err != nil {
			t.Fatal(err)
		}
	}
	var replies, kisses int
	buf := make([]byte, 512)
	for {
		conn.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
		n, err := conn.Read(buf)
		if err != nil {
			break
		}
		if n != wire.NTPHeaderLen {
			t.Errorf("reply of %d bytes to a 48-byte request", n)
		}
		var p wire.NTPPacket
		_ = p.UnmarshalBinary(buf[:n])
		if p.Stratum == 0 {
			if p.KissCode() != "RATE" || p.Leap != wire.LeapNotInSync {
				t.Errorf("kiss %q leap %d", p.KissCode(), p.Leap)
			}
			kisses++
		} else {
			replies++
		}
	}
	t.Logf("burst of %d: %d replies, %d RATE kisses", burst, replies, kisses)
	if replies < 8 || replies >= burst-1 || kisses != 1 {
		t.Errorf("burst of %d: %d replies and %d kisses; want the burst of 8 (maybe one more refilled) and one kiss", burst, replies, kisses)
	}
	st, err := c.Status(1)
	if err != nil {
		t.Fatal(err)
	}
	srv := st["node"].(map[string]any)["core"].(map[string]any)["server"].(map[string]any)
	dropped := srv["dropped"].(map[string]any)
	if srv["kod_rate"].(float64) != 1 || dropped["rate_limited"].(float64) < float64(burst-replies-1) {
		t.Errorf("server status: %v", srv)
	}
}

// `timed query` stops at a kiss-o'-death and reports its code (a server
// with a rate limit so strict that the second request is over it).
func TestTimedQueryStopsAtKiss(t *testing.T) {
	c := newCluster(t, "timed", 1)
	addr := serveTimed(t, c, 1, 0, "--stratum", "8", "--rate-limit", "1h")
	// Burst 8 at one per hour: the 9th request within the hour is kissed.
	q, code, _ := timedQuery(t, addr.String(), "--json", "-n", "8")
	if code != 0 || !q.Valid {
		t.Fatalf("first 8: exit %d %+v", code, q)
	}
	q, code, stderr := timedQuery(t, addr.String(), "--json", "-n", "3")
	if code != 1 || q.KissCode != "RATE" || len(q.Samples) != 1 || !strings.Contains(stderr, "kiss-o'-death RATE") {
		t.Errorf("after the burst: exit %d, %+v, stderr %s", code, q, stderr)
	}
}

func TestTimedQueryFailures(t *testing.T) {
	// Nobody listens: the host answers ICMP port unreachable, and both
	// query and compare say so in the same words, exit 1.
	ip := "127.0.0.97"
	port := e2e.FreePort(t, ip)
	target := fmt.Sprintf("%s:%d", ip, port)
	q, code, stderr := timedQuery(t, target, "--json", "-n", "2", "--timeout", "200ms")
	if code != 1 || q.Valid || !strings.Contains(q.Error, "port unreachable") || !strings.Contains(stderr, "port unreachable") {
		t.Errorf("no server: exit %d, %+v, %s", code, q, stderr)
	}
	out, err := exec.Command(filepath.Join(e2e.BinDir(), "timed"), "compare", "--server", target, "--timeout", "300ms",
		"--control", "/nonexistent/timed.sock", "--json").Output()
	var cmp struct {
		Servers []struct{ Verdict string } `json:"servers"`
	}
	if e2e.ExitCode(err) != 1 || json.Unmarshal(out, &cmp) != nil || len(cmp.Servers) != 1 || !strings.Contains(q.Error, cmp.Servers[0].Verdict) {
		t.Errorf("compare against no server: exit %d, %s; want query's %q", e2e.ExitCode(err), out, q.Error)
	}
	// Silence (a port that drops everything) is a timeout.
	quiet, err := net.ListenPacket("udp4", ip+":0")
	if err != nil {
		t.Fatal(err)
	}
	defer quiet.Close()
	q, code, _ = timedQuery(t, quiet.LocalAddr().String(), "--json", "-n", "2", "--timeout", "200ms")
	if code != 1 || !strings.Contains(q.Error, "timeout") {
		t.Errorf("silent server: exit %d, %+v", code, q)
	}
	for _, args := range [][]string{
		{"127.0.0.1:123", "--proto", "ptp"},
		{"127.0.0.1:123", "-n", "0"},
		{"127.0.0.1:123", "127.0.0.2:123"},
		{"127.0.0.1:123", "--key-id", "1"},
		{},
	} {
		_, code, stderr := timedQuery(t, args...)
		if code != 2 {
			t.Errorf("query %v: exit %d, want 2 (usage): %s", args, code, stderr)
		}
		if len(args) == 3 && args[1] == "--proto" && !strings.Contains(stderr, "want ntp or cristian") {
			t.Errorf("--proto ptp: %s", stderr)
		}
	}
}

// compareJSON is the part of `timed compare --json` the test reads.
type compareJSON struct {
	Local *struct {
		Clock          string `json:"clock"`
		TrueOffsetNs   *int64 `json:"true_offset_ns"`
		ServingStratum *uint8 `json:"serving_stratum"`
	} `json:"local"`
	LocalError string `json:"local_error"`
	Servers    []struct {
		Server   string `json:"server"`
		Valid    bool   `json:"valid"`
		Verdict  string `json:"verdict"`
		OffsetNs int64  `json:"offset_ns"`
		RTTNs    int64  `json:"rtt_ns"`
		Stratum  uint8  `json:"stratum"`
	} `json:"servers"`
	Valid    int    `json:"valid"`
	SpreadNs *int64 `json:"spread_ns"`
}

// Two local servers 75 ms and 25 ms ahead: compare sees both, and a spread
// of 50 ms between them; with a dead server added it still succeeds.
//
// An NTP offset is exact to within half its exchange's round trip (the
// request's and the reply's transit are each somewhere in it), so each
// offset is judged within 2 ms plus half the round trip compare measured
// for it, and the spread within the sum of both: on a quiet loopback the
// round trip is tens of microseconds and the bound stays 2 ms; a loaded
// host that delays the server's reply by milliseconds widens the exchange
// it measured, not the test's guess (a fixed 2 ms failed at 52.7 ms).
func TestTimedCompareLocalServers(t *testing.T) {
	c := newCluster(t, "timed", 2)
	a := serveTimed(t, c, 1, 75*time.Millisecond, "--stratum", "8")
	b := serveTimed(t, c, 2, 25*time.Millisecond, "--stratum", "9")
	deadIP := "127.0.0.98"
	dead := fmt.Sprintf("%s:%d", deadIP, e2e.FreePort(t, deadIP))
	out, err := exec.Command(filepath.Join(e2e.BinDir(), "timed"), "compare", "--server", a.String(), "--server", b.String(),
		"--server", dead, "--timeout", "500ms", "--json", "--control", c.Control(1)).Output()
	if e2e.ExitCode(err) != 0 {
		t.Fatalf("compare: %v\n%s", err, out)
	}
	var r compareJSON
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if r.Valid != 2 || len(r.Servers) != 3 || r.SpreadNs == nil {
		t.Fatalf("compare: %s", out)
	}
	halfRTT := func(i int) time.Duration { return time.Duration(r.Servers[i].RTTNs) / 2 }
	t.Logf("offsets %v and %v, round trips %v and %v, spread %v", time.Duration(r.Servers[0].OffsetNs), time.Duration(r.Servers[1].OffsetNs),
		time.Duration(r.Servers[0].RTTNs), time.Duration(r.Servers[1].RTTNs), time.Duration(*r.SpreadNs))
	if s, tol := time.Duration(*r.SpreadNs), 2*time.Millisecond+halfRTT(0)+halfRTT(1); !e2e.Within(s, 50*time.Millisecond, tol) {
		t.Errorf("spread %v, want 50ms within %v", s, tol)
	}
	for i, want := range []time.Duration{-75 * time.Millisecond, -25 * time.Millisecond} {
		e := r.Servers[i]
		if tol := 2*time.Millisecond + halfRTT(i); !e.Valid || e.Verdict != "ok" || e.RTTNs <= 0 || !e2e.Within(time.Duration(e.OffsetNs), want, tol) || e.Stratum != uint8(8+i) {
			t.Errorf("server %d: %+v, want offset %v within %v", i, e, want, tol)
		}
	}
	if r.Servers[2].Valid || r.Servers[2].Verdict == "" {
		t.Errorf("dead server: %+v", r.Servers[2])
	}
	if r.Local == nil || r.Local.Clock != "sim" || r.Local.TrueOffsetNs == nil || r.Local.ServingStratum == nil || *r.Local.ServingStratum != 8 {
		t.Errorf("local view: %+v (%s)", r.Local, r.LocalError)
	}

	// Human output, no daemon at --control, only the dead server: exit 1.
	out, err = exec.Command(filepath.Join(e2e.BinDir(), "timed"), "compare", "--server", dead, "--timeout", "300ms",
		"--control", filepath.Join(c.Dir, "none.sock")).CombinedOutput()
	if e2e.ExitCode(err) != 1 || !bytes.Contains(out, []byte("no local daemon")) || !bytes.Contains(out, []byte("no server answered validly")) {
		t.Errorf("compare with nothing valid: exit %d\n%s", e2e.ExitCode(err), out)
	}
}

// Symmetric keys end to end: a chrony key file on both sides gives
// authenticated answers; a key the server lacks gets a crypto-NAK, which
// `timed query` reports and stops at.
func TestTimedServeAuthenticated(t *testing.T) {
	c := newCluster(t, "timed", 1)
	keys := filepath.Join(c.Dir, "ntp.keys")
	other := filepath.Join(c.Dir, "other.keys")
	if err := os.WriteFile(keys, []byte("1 MD5 synclab-lab-key\n2 SHA256 HEX:"+strings.Repeat("5a", 32)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(other, []byte("3 SHA1 HEX:"+strings.Repeat("a5", 20)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := serveTimed(t, c, 1, 30*time.Millisecond, "--stratum", "8", "--ntp-key-file", keys)
	for _, id := range []string{"1", "2"} {
		q, code, stderr := timedQuery(t, addr.String(), "--json", "-n", "2", "--key-file", keys, "--key-id", id)
		if code != 0 || !q.Valid || !e2e.Within(time.Duration(q.OffsetNs), -30*time.Millisecond, 2*time.Millisecond) {
			t.Errorf("key %s: exit %d, %+v, %s", id, code, q, stderr)
		}
	}
	q, code, stderr := timedQuery(t, addr.String(), "--json", "-n", "2", "--key-file", other, "--key-id", "3")
	if code != 1 || q.Valid || len(q.Samples) != 1 || !strings.Contains(q.Error, "crypto-NAK") {
		t.Errorf("unknown key: exit %d, %+v, %s", code, q, stderr)
	}
	st, err := c.Status(1)
	if err != nil {
		t.Fatal(err)
	}
	srv := st["node"].(map[string]any)["core"].(map[string]any)["server"].(map[string]any)
	if srv["authenticated"].(float64) != 4 || srv["crypto_nak"].(map[string]any)["unknown_key"].(float64) != 1 {
		t.Errorf("server status %v", srv)
	}
}

// TestTimedQuerySource: `timed query --source` and `timed compare --source`
// send from the address given (a server whose allow list leaves out
// 127.0.0.1 would refuse the kernel's choice), and the answer is valid.
func TestTimedQuerySource(t *testing.T) {
	srv, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 96)})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	froms := make(chan netip.Addr, 16)
	go func() {
		buf := make([]byte, 512)
		for {
			n, from, err := srv.ReadFromUDPAddrPort(buf)
			if err != nil {
				return
			}
			var req wire.NTPPacket
			if req.UnmarshalBinary(buf[:n]) != nil {
				continue
			}
			froms <- from.Addr().Unmap()
			now := wire.NTPTimeFromTime(time.Now())
			rep := wire.NTPPacket{Version: 4, Mode: wire.ModeServer, Stratum: 2, Precision: -20,
				ReferenceID: wire.RefIDFromText("LOCL"), Reference: now, Origin: req.Transmit, Receive: now, Transmit: now}
			b, _ := rep.AppendBinary(nil)
			srv.WriteToUDPAddrPort(b, from)
		}
	}()
	target := srv.LocalAddr().String()
	q, code, stderr := timedQuery(t, target, "--json", "-n", "1", "--source", "127.0.0.98")
	if code != 0 || !q.Valid {
		t.Fatalf("query --source: exit %d, %+v, %s", code, q, stderr)
	}
	if from := <-froms; from != netip.MustParseAddr("127.0.0.98") {
		t.Errorf("query came from %v, want 127.0.0.98", from)
	}
	out, err := exec.Command(filepath.Join(e2e.BinDir(), "timed"), "compare", "--server", target, "--source", "127.0.0.99",
		"--control", "/nonexistent/timed.sock").CombinedOutput()
	if err != nil {
		t.Fatalf("compare --source: %v\n%s", err, out)
	}
	if from := <-froms; from != netip.MustParseAddr("127.0.0.99") {
		t.Errorf("compare's query came from %v, want 127.0.0.99", from)
	}
	if _, code, stderr := timedQuery(t, target, "--source", "::1"); code != 2 || !strings.Contains(stderr, "different address families") {
		t.Errorf("--source of another family: exit %d, %s", code, stderr)
	}
}
