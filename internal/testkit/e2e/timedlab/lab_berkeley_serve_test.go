package timedlab

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/testkit/e2e"
	"github.com/synclab/synclab/internal/testkit/labnet"
)

// TestLabTimedBerkeleyServesTruthfully: three namespace hosts run timed
// --mode berkeley on simulated clocks 80, 20 and -25 ms off true time
// (the group agrees about 25 ms off), each serving the group's time over
// NTP at --stratum 8 with --local-error 100ms; a fourth, -40 ms off,
// follows them as an NTP client. The client synchronises to the group's
// time, 10-40 ms off true time, and its error bound holds the truth at
// every 100 ms sample (follow fails otherwise): the root dispersion
// carries the 100 ms vouched for plus the member's bound relative to the
// group. (Served as a reference's, root dispersion 0, its bound was
// microseconds wide: TestSimBerkeleyServesTruthfully in
// pkg/timesync/timedcore; without --local-error the group's time is
// served unsynchronised, which that test checks too.)
func TestLabTimedBerkeleyServesTruthfully(t *testing.T) {
	labnet.Require(t)
	lab := labnet.New(t, 4)
	dir := e2e.ShortDir(t)
	key := e2e.KeyFile(t, dir)
	var members, servers []string
	for i := 1; i <= 3; i++ {
		members = append(members, fmt.Sprintf("%d=%s:7300", i, lab.Host(i).Addr()))
	}
	var master *labTimed
	for i, off := range []string{"80ms", "20ms", "-25ms"} {
		h := lab.Host(i + 1)
		master = startLabTimedAlone(t, h, dir, "--mode", "berkeley", "--id", fmt.Sprint(i+1), "--members", strings.Join(members, ","),
			"--key-file", key, "--sim-offset", off, "--serve", "0.0.0.0", "--stratum", "8", "--local-error", "100ms")
		servers = append(servers, "--server", h.Addr().String())
	}
	follower := startLabTimedAlone(t, lab.Host(4), dir, append([]string{"--sim-offset", "-40ms"}, servers...)...)
	var last, group labClientView
	checks := 0
	// Until 100 synchronised samples held, not for a fixed time: each
	// sample is a status call through the namespace, which a loaded host
	// slows (93 in 25 s at load 20); the deadline only ends a wait that
	// will not succeed.
	for began := time.Now(); checks < 100 && time.Since(began) < 120*time.Second; {
		time.Sleep(100 * time.Millisecond)
		v, err := follower.view()
		if err != nil || !v.Synced {
			continue
		}
		if v.TrueOffset.Abs() > v.Bound {
			t.Fatalf("h4: true offset %v outside the reported bound ±%v\n%s", v.TrueOffset, v.Bound, follower.statusText())
		}
		last = v
		checks++
	}
	group, _ = master.view()
	text := follower.statusText()
	if checks < 100 || group.TrueOffset.Abs() < 10*time.Millisecond || (last.TrueOffset-group.TrueOffset).Abs() > 2*time.Millisecond || last.Bound < 100*time.Millisecond {
		t.Fatalf("h4: %d synchronised samples, true offset %v (the group's %v), bound ±%v: want it on the group's time, at least 10 ms off true time, within a bound of at least the 100 ms vouched for\n%s",
			checks, last.TrueOffset, group.TrueOffset, last.Bound, text)
	}
	t.Logf("h4 follows the group's time (%v off true time) %v off, within ±%v, %d samples held\n%s\nh3:\n%s", group.TrueOffset, last.TrueOffset, last.Bound, checks, text, master.statusText())
	if out := master.statusText(); !strings.Contains(out, "of true time as --local-error vouches") {
		t.Errorf("h3's status does not say what its NTP server vouches for:\n%s", out)
	}
}
