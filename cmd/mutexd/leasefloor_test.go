package main

import (
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/pkg/mutex"
)

// opts are mutexd's options for algorithm f with lease and heartbeat, the
// algorithm's own settings at their defaults but for params.
func opts(f mutex.Factory, lease, heartbeat time.Duration, params map[string]time.Duration) mutex.Options {
	o := mutex.Options{Lease: lease, Heartbeat: heartbeat, MinLease: defaultMinLease, Params: map[string]time.Duration{}}
	for _, p := range f.Params {
		o.Params[p.Name] = p.Default
	}
	for k, v := range params {
		o.Params[k] = v
	}
	return o
}

// TestLeaseFloor: the audit's short leases, each of which mutexd lock
// lost (exit 76) or never got (the ring at 100 ms), are refused with the
// floor to set; a lease kept only while renewals come at once is warned
// of; the defaults say nothing.
func TestLeaseFloor(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		alg              string
		lease, heartbeat time.Duration
		params           map[string]time.Duration
		refused, warned  string
	}{
		// Granted at 100 ms never (the ring's locate), and lost at its
		// first renewal were it granted.
		{alg: "tokenring", lease: 100 * ms, heartbeat: 200 * ms, refused: "--lease 100ms (--algorithm tokenring, --confirm-window 250ms): `mutexd lock` can never keep a lease this short, even with every renewal answered at once: it renews every third of the lease and stops its command a third of the lease and 50ms before the lease's end; a renewal within 50ms of the ring's last check"},
		// The renewal at 100 ms is made on the grant's check, still
		// fresh: the lease's end does not move, the next renewal comes
		// after the command's SIGTERM.
		{alg: "tokenring", lease: 300 * ms, heartbeat: 100 * ms, refused: "set --lease 460ms or more, or --confirm-window 99ms or less"},
		{alg: "tokenring", lease: 300 * ms, heartbeat: 100 * ms, params: map[string]time.Duration{"confirm-window": 99 * ms}, warned: "--lease 300ms (--algorithm tokenring, --confirm-window 99ms) is kept by `mutexd lock` only while renewals are answered within 50ms"},
		{alg: "tokenring", lease: 500 * ms, heartbeat: time.Second, warned: "set --lease 650ms or more"},
		{alg: "tokenring", lease: 650 * ms, heartbeat: time.Second},
		{alg: "central", lease: 100 * ms, heartbeat: 200 * ms, refused: "--lease 100ms (--algorithm central, --heartbeat 200ms (a beat every 33ms, at most a third of --lease)): `mutexd lock` can never keep a lease this short, even with every renewal answered at once: it renews every third of the lease and stops its command a third of the lease and 50ms before the lease's end; a lease is cut by up to 17ms (its support's age past half a beat), 25ms when answers are late; set --lease 230ms or more"},
		{alg: "central", lease: 300 * ms, heartbeat: time.Second, warned: "set --lease 760ms or more"},
		{alg: "tokenask", lease: 200 * ms, heartbeat: 200 * ms, refused: "set --lease 230ms or more"},
		{alg: "ricartagrawala", lease: 100 * ms, heartbeat: 200 * ms, refused: "--lease 100ms (--algorithm ricartagrawala, --heartbeat 200ms): `mutexd lock` can never keep a lease this short, even with every renewal answered at once: it renews every third of the lease and stops its command a third of the lease and 50ms before the lease's end; set --lease 160ms or more"},
		// Before a majority's first acknowledgement (for good beside an
		// older majority) a renewal is cut by up to a heartbeat, 1.5
		// when a beat is late (TestUnboundedRenewalCut): at 2 s with a
		// 1 s heartbeat a renewal 50 ms late loses the lease. The floor
		// took no cut before: nothing was said.
		{alg: "ricartagrawala", lease: 2 * time.Second, heartbeat: time.Second, warned: "a lease is cut by up to 1s (before a majority first acknowledges this member's lease end"},
		{alg: "bakery", lease: 2 * time.Second, heartbeat: time.Second, warned: "set --lease 2.5s or more, or --heartbeat 750ms or less"},
		{alg: "ricartagrawala", lease: 500 * ms, heartbeat: 100 * ms, warned: "set --lease 700ms or more, or --heartbeat 33ms or less"},
		{alg: "ricartagrawala", lease: 2500 * ms, heartbeat: time.Second},
		// Lamport's renewals are never bounded: the same cut, always.
		{alg: "lamport", lease: 410 * ms, heartbeat: time.Second, warned: "a lease is cut by up to 1s (Lamport's renewals are never bounded: a renewal is counted from when a majority was last heard, and the others beat every heartbeat), 1.5s when answers are late): on a loaded host"},
		{alg: "lamport", lease: 2 * time.Second, heartbeat: time.Second, warned: "set --lease 2.5s or more"},
		{alg: "maekawa", lease: 150 * ms, heartbeat: time.Second, refused: "set --lease 160ms or more"},
		{alg: "majority", lease: 200 * ms, heartbeat: time.Second, warned: "renewals are answered within 50ms"},
		{alg: "lamport", lease: 700 * ms, heartbeat: 100 * ms},
	} {
		f, err := algorithms.Lookup(tc.alg)
		if err != nil {
			t.Fatal(err)
		}
		warning, err := checkLease(f, opts(f, tc.lease, tc.heartbeat, tc.params))
		name := tc.alg + " " + tc.lease.String() + "/" + tc.heartbeat.String()
		switch {
		case tc.refused != "" && (err == nil || !strings.Contains(err.Error(), tc.refused)):
			t.Errorf("%s: refused with %v, want %q", name, err, tc.refused)
		case tc.refused == "" && err != nil:
			t.Errorf("%s: refused: %v", name, err)
		case tc.refused == "" && (tc.warned == "") != (warning == "") || !strings.Contains(warning, tc.warned):
			t.Errorf("%s: warning %q, want %q", name, warning, tc.warned)
		}
	}
	for _, f := range algorithms {
		if w, err := checkLease(f, opts(f, defaultLease, defaultHeartbeat, nil)); w != "" || err != nil {
			t.Errorf("%s at the defaults: %q, %v", f.Name, w, err)
		}
	}
}

// TestLeaseFloorIsTheKeepersEdge: the floor each algorithm reports is
// where the keeper's schedule stops losing the lease, to 10 ms: kept at
// the floor, lost 10 ms below it, whatever the heartbeat.
func TestLeaseFloorIsTheKeepersEdge(t *testing.T) {
	for _, f := range algorithms {
		for _, hb := range []time.Duration{10 * time.Millisecond, 200 * time.Millisecond, time.Second} {
			rule := func(l time.Duration) mutex.Renewal {
				if f.Renewal == nil {
					return mutex.Renewal{}
				}
				return f.Renewal(opts(f, l, hb, nil))
			}
			for _, delay := range []time.Duration{0, marginalDelay} {
				floor := leaseFloor(rule, delay)
				if floor == 0 || !keepable(floor, rule(floor), delay) || keepable(floor-10*time.Millisecond, rule(floor-10*time.Millisecond), delay) {
					t.Errorf("%s, heartbeat %v, answers %v late: floor %v is not the edge", f.Name, hb, delay, floor)
				}
			}
			// The warning's: before the algorithm's bound holds.
			before := func(l time.Duration) mutex.Renewal { return early(rule(l)) }
			if floor := leaseFloor(before, marginalDelay); floor == 0 || !keepable(floor, before(floor), marginalDelay) || keepable(floor-10*time.Millisecond, before(floor-10*time.Millisecond), marginalDelay) {
				t.Errorf("%s, heartbeat %v, before its bound: floor %v is not the edge", f.Name, hb, floor)
			}
		}
	}
}

// TestKeepableFollowsTheKeeper: the rule is the keeper's schedule, not a
// formula beside it. With renewals counted from their asking it loses a
// lease of 150 ms (a renewal due at 50 ms, SIGTERM due at 150 - 50 - 50)
// and keeps one of 151 ms; a longer --grace is what min(grace, lease/3)
// caps, so the default grace is the worst case for leases up to 3 s.
func TestKeepableFollowsTheKeeper(t *testing.T) {
	if keepable(150*time.Millisecond, mutex.Renewal{}, 0) {
		t.Error("150ms kept: the keeper's SIGTERM falls due with the renewal")
	}
	if !keepable(151*time.Millisecond, mutex.Renewal{}, 0) {
		t.Error("151ms lost with renewals answered at once")
	}
	if keepable(time.Second, mutex.Renewal{}, 400*time.Millisecond) {
		t.Error("1s kept with every answer 400ms late (the renewal at 333ms answered after the SIGTERM due at 617ms - 400ms)")
	}
}
