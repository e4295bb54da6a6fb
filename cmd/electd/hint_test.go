package main

import (
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/pkg/elect/bully"
)

// TestHintProbeFlag: --hint-probe is on at 30 ms for bully (a follower
// watches its leader's link, Watch), off with 0, off when left at its
// default with a --leader-timeout too short for 5 probes (the timeout is
// short already; refusing to start over a flag nobody gave would not
// help), refused when given too long or for another algorithm, and the
// other algorithms build with its default.
func TestHintProbeFlag(t *testing.T) {
	for _, tc := range []struct {
		args         []string
		probe, watch time.Duration
	}{
		{nil, 30 * time.Millisecond, bully.WatchEvery},
		{[]string{"--heartbeat", "200ms", "--leader-timeout", "400ms", "--probe", "4ms"}, 30 * time.Millisecond, bully.WatchEvery},
		{[]string{"--hint-probe", "0"}, 0, 0},
		{[]string{"--hint-probe", "50ms"}, 50 * time.Millisecond, bully.WatchEvery},
		{[]string{"--heartbeat", "20ms", "--leader-timeout", "100ms"}, 0, 0},
	} {
		el, err := buildWith(t, tc.args...)
		if err != nil {
			t.Errorf("%v: %v", tc.args, err)
			continue
		}
		if d := el.Report().Detail.(bully.Detail); d.HintProbe != tc.probe || d.Watch != tc.watch {
			t.Errorf("%v: hint probe %v, watch %v; want %v and %v", tc.args, d.HintProbe, d.Watch, tc.probe, tc.watch)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--hint-probe", "80ms"}, "--hint-probe (with --leader-timeout 400ms): 80ms x 5 probes must be below the leader timeout"},
		{[]string{"--hint-probe", "10ms", "--heartbeat", "20ms", "--leader-timeout", "40ms"}, "10ms x 5 probes must be below the leader timeout (40ms)"},
		{[]string{"--hint-probe", "500us"}, "timeout out of range"},
		{[]string{"--hint-probe", "10ms", "--algorithm", "majority"}, "--hint-probe: only bully acts on a leader's closed port (majority waits --leader-timeout)"},
	} {
		_, err := buildWith(t, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error containing %q", tc.args, err, tc.want)
		}
	}
	if _, err := buildWith(t, "--algorithm", "ring-naive"); err != nil {
		t.Errorf("ring-naive with --hint-probe's default: %v", err)
	}
}
