package daemon

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/transport"
	"github.com/synclab/synclab/pkg/clock"
)

// TestDepartureIsTheKernelStamp: a reported datagram's departure (an NTP
// client's T1) is the kernel's transmit stamp, on the daemon's clock, not
// the earlier reading written into the bytes; without a usable stamp it
// is that reading, counted and warned about once per interval, since it
// biases what the core measures by half the send path.
func TestDepartureIsTheKernelStamp(t *testing.T) {
	real := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	sim := clock.NewSim(clock.SimConfig{Offset: 30 * time.Millisecond}, func() time.Time { return real })
	var buf bytes.Buffer
	d := &Daemon{cfg: Config{Clock: sim}, errs: map[string]uint64{}, alerts: newAlerts(slog.New(slog.NewTextHandler(&buf, nil)))}
	patched := sim.Now()
	const lag = 18 * time.Microsecond
	kernel := real.Add(lag) // the kernel stamps with the real clock

	if got := d.departure(patched, transport.TxStamp{Time: kernel, Kernel: true}); got.Sub(patched) != lag {
		t.Fatalf("departure %v after the reading, want the kernel's stamp %v after it", got.Sub(patched), lag)
	}
	if len(d.errs) != 0 || buf.Len() != 0 {
		t.Fatalf("a good stamp counted or logged: %v\n%s", d.errs, buf.String())
	}

	// No stamp from a socket that has none (the in-memory network): the
	// reading, and nothing to say.
	if got := d.departure(patched, transport.TxStamp{}); !got.Equal(patched) || len(d.errs) != 0 || buf.Len() != 0 {
		t.Fatalf("no stamp asked: departure %v (reading %v), errs %v, log %q", got, patched, d.errs, buf.String())
	}

	// Asked for and missed, twice: the reading, two counted, one warning.
	for range 2 {
		if got := d.departure(patched, transport.TxStamp{Missed: true}); !got.Equal(patched) {
			t.Fatalf("missed stamp: departure %v, want the reading %v", got, patched)
		}
	}
	// A stamp before the reading (another datagram's, a stepped clock).
	if got := d.departure(patched, transport.TxStamp{Time: real.Add(-time.Millisecond), Kernel: true}); !got.Equal(patched) {
		t.Fatalf("implausible stamp: departure %v, want the reading %v", got, patched)
	}
	if d.errs["tx_stamp_missed"] != 2 || d.errs["tx_stamp_implausible"] != 1 {
		t.Errorf("errs %v, want tx_stamp_missed 2 and tx_stamp_implausible 1", d.errs)
	}
	if n := strings.Count(buf.String(), "level=WARN"); n != 1 || !strings.Contains(buf.String(), "not the kernel's transmit stamp") {
		t.Errorf("want one warning, log:\n%s", buf.String())
	}
}
