package daemon

import (
	"bytes"
	"log/slog"
	"net/netip"
	"strings"
	"testing"

	"github.com/synclab/synclab/internal/transport"
)

// TestUnstampedDatagramsWarnedOnce: datagrams that arrive without the
// kernel's receive stamp (their time is the reader's, after the read)
// are said at WARN once per cause, naming it, not once per datagram; a
// kernel-stamped one, or an in-memory one (no cause), says nothing.
// Before, nothing said it: the permission mutexes count a frame at its
// receive time (pkg/mutex/permission, "Links"), and an administrator had
// only the user_stamps counter to find why.
func TestUnstampedDatagramsWarnedOnce(t *testing.T) {
	var buf bytes.Buffer
	d := &Daemon{log: slog.New(slog.NewTextHandler(&buf, nil)), errs: map[string]uint64{}}
	from := netip.MustParseAddrPort("10.77.0.2:7400")
	const refused = "the socket refused kernel receive stamps (SO_TIMESTAMPNS): protocol not available"
	for _, p := range []transport.Packet{
		{From: from, Kernel: true},
		{From: from},
		{From: from, Unstamped: refused},
		{From: from, Unstamped: refused},
	} {
		if !p.Kernel && p.Unstamped != "" {
			d.warnUnstamped(p)
		}
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], "level=WARN") || !strings.Contains(lines[0], "rx_stamps_missing") || !strings.Contains(lines[0], "SO_TIMESTAMPNS") {
		t.Fatalf("want one WARN naming the cause, got:\n%s", buf.String())
	}
	d.warnUnstamped(transport.Packet{From: from, Unstamped: "the kernel attached no receive stamp to the datagram"})
	if n := strings.Count(buf.String(), "rx_stamps_missing"); n != 2 || d.errs["rx_unstamped"] != 2 {
		t.Fatalf("a second cause: %d lines, %d counted:\n%s", n, d.errs["rx_unstamped"], buf.String())
	}
}
