package daemon

import (
	"bytes"
	"fmt"
	"log/slog"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/transport"
	"github.com/synclab/synclab/pkg/core"
)

// TestPortHintRateLimited: the host of member 3 is down for an hour and
// every dial to it times out, a hint every 10 s; the loop flushes the
// alerts every second. The first is said at once, in words that match a
// dial that timed out (no answer, not a closed port); then one line every
// portHintEvery with how many were not said (the loop's flush, before
// that moment's hint, which is then among the next line's): 7 lines, not 360 (the
// alerts' 10 s). Member 2's link closing meanwhile is said at once: each
// member counts apart.
func TestPortHintRateLimited(t *testing.T) {
	var buf bytes.Buffer
	d := &Daemon{alerts: newAlerts(slog.New(slog.NewTextHandler(&buf, nil)))}
	t0 := time.Date(2026, 12, 7, 8, 0, 0, 0, time.UTC)
	down := transport.Hint{Peer: netip.MustParseAddrPort("10.77.0.3:7000"), Cause: core.HintDialTimeout}
	hints := 0
	for at := time.Duration(0); at < time.Hour; at += time.Second {
		d.alerts.flush(t0.Add(at))
		if at%(10*time.Second) == 0 {
			d.sayHint(t0.Add(at), 3, down)
			hints++
		}
		if at == 30*time.Minute+5*time.Second {
			d.sayHint(t0.Add(at), 2, transport.Hint{Peer: netip.MustParseAddrPort("10.77.0.2:7000"), Cause: core.HintStreamClosed})
		}
	}
	d.alerts.flushAll(t0.Add(time.Hour))
	var three []string
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		if strings.Contains(l, "member=3") {
			three = append(three, l)
		}
	}
	t.Logf("%d hints about member 3 in an hour: %d lines, the first %q", hints, len(three), three[0])
	if len(three) != 7 {
		t.Fatalf("%d hints about member 3 in an hour: %d lines, want 7 (the first, then one every %v):\n%s", hints, len(three), portHintEvery, buf.String())
	}
	if !strings.Contains(three[0], `msg="member 3: no answer to connect within 1.5s (dial_timeout)"`) || strings.Contains(three[0], "port closed") ||
		!strings.Contains(three[0], "host is down") || strings.Contains(three[0], "repeated") {
		t.Fatalf("the first line: %s", three[0])
	}
	said := 1
	for _, l := range three[1:] {
		var n int
		i := strings.Index(l, "repeated=")
		if i < 0 {
			t.Fatalf("a later line without its count: %s", l)
		}
		if _, err := fmt.Sscan(l[i+len("repeated="):], &n); err != nil {
			t.Fatal(err)
		}
		said += n
	}
	if said != hints {
		t.Fatalf("the lines account for %d hints, want %d:\n%s", said, hints, strings.Join(three, "\n"))
	}
	if !strings.Contains(buf.String(), `msg="member 2: port closed (stream_closed)"`) {
		t.Fatalf("member 2's closed link not said:\n%s", buf.String())
	}
}
