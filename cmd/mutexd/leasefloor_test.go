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
		{alg: "tokenring", lease: 100 * ms, heartbeat: 200 * ms, refused: "--lease 100ms (--algorithm tokenring, --confirm-window 250ms): `mutexd lock` can never keep a lease this short, even with every renewal answered at once: it renews every third of the lease and stops its command a third of the lease and 50ms before the lease's end; a grant to the next client of the member that holds the token, and a renewal, within 50ms of the ring's last check"},
		// The renewal at 100 ms is made on the grant's check, still
		// fresh: the lease's end does not move, the next renewal comes
		// after the command's SIGTERM. A grant to a member's next client
		// on a check 99 ms old has 201 ms left, and SIGTERM due 51 ms on,
		// before the renewal at 67 ms.
		{alg: "tokenring", lease: 300 * ms, heartbeat: 100 * ms, refused: "set --lease 650ms or more, or --confirm-window 74ms or less; a program that renews through the HTTP API more often than every third of its lease may ask for 300ms itself per request (lease_ms 300 on a cluster whose --lease is 650ms or more; the shortest a request may ask is 100ms)"},
		{alg: "tokenring", lease: 300 * ms, heartbeat: 100 * ms, params: map[string]time.Duration{"confirm-window": 99 * ms}, refused: "set --lease 350ms or more, or --confirm-window 74ms or less"},
		{alg: "tokenring", lease: 300 * ms, heartbeat: 100 * ms, params: map[string]time.Duration{"confirm-window": 74 * ms}, warned: "--lease 300ms (--algorithm tokenring, --confirm-window 74ms) is kept by `mutexd lock` only while renewals are answered within 50ms"},
		// review-mutex3: a second client of the member holding the token,
		// granted on its check up to the confirm window old, was stopped
		// before its first renewal at 500 ms (warned of) and 600 ms
		// (accepted); TestRingSecondGrantKeptAboveTheFloor runs it.
		{alg: "tokenring", lease: 500 * ms, heartbeat: time.Second, refused: "set --lease 650ms or more, or --confirm-window 175ms or less"},
		{alg: "tokenring", lease: 650 * ms, heartbeat: time.Second, warned: "set --lease 850ms or more"},
		{alg: "tokenring", lease: 850 * ms, heartbeat: time.Second},
		{alg: "central", lease: 100 * ms, heartbeat: 200 * ms, refused: "--lease 100ms (--algorithm central, --heartbeat 200ms (a beat every 33ms, at most a third of --lease)): `mutexd lock` can never keep a lease this short, even with every renewal answered at once: it renews every third of the lease and stops its command a third of the lease and 50ms before the lease's end; a lease is cut by up to 17ms (its support's age past half a beat), 25ms when answers are late; set --lease 230ms or more"},
		{alg: "central", lease: 300 * ms, heartbeat: time.Second, warned: "set --lease 760ms or more"},
		{alg: "tokenask", lease: 200 * ms, heartbeat: 200 * ms, refused: "set --lease 230ms or more"},
		{alg: "ricartagrawala", lease: 100 * ms, heartbeat: 200 * ms, refused: "--lease 100ms (--algorithm ricartagrawala): `mutexd lock` can never keep a lease this short, even with every renewal answered at once: it renews every third of the lease and stops its command a third of the lease and 50ms before the lease's end; set --lease 160ms or more; a program that renews through the HTTP API more often than every third of its lease may ask for 100ms itself per request (lease_ms 100 on a cluster whose --lease is 160ms or more; the shortest a request may ask is 100ms)"},
		// review-mutex3: a renewal is confirmed once a majority was heard
		// since its asking and counted from it (permission's renewFrom),
		// so nothing is cut, before a majority's first acknowledgement
		// or after, Lamport's included (TestFloorKeptInSim and
		// TestFloorKeptAtEveryHeartbeatPhase run them; TestRenewalNotCut
		// measures it): the leases mutexmsgs warned of for a heartbeat's
		// cut are kept, and say nothing.
		{alg: "ricartagrawala", lease: 2 * time.Second, heartbeat: time.Second},
		{alg: "bakery", lease: 2 * time.Second, heartbeat: time.Second},
		{alg: "ricartagrawala", lease: 500 * ms, heartbeat: 100 * ms},
		{alg: "lamport", lease: 410 * ms, heartbeat: time.Second},
		{alg: "lamport", lease: 300 * ms, heartbeat: time.Second, warned: "--lease 300ms (--algorithm lamport) is kept by `mutexd lock` only while renewals are answered within 50ms (it renews every third of the lease and stops its command a third of the lease and 50ms before the lease's end): on a loaded host or a lossy link its commands end with exit 76 (lock lost); set --lease 400ms or more"},
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
	// Below the shortest lease a request may ask, the HTTP API is no way
	// around the floor: the refusal does not offer it.
	f, _ := algorithms.Lookup("lamport")
	if _, err := checkLease(f, opts(f, 50*ms, time.Second, nil)); err == nil || !strings.HasSuffix(err.Error(), "; set --lease 160ms or more") {
		t.Errorf("lamport 50ms/1s: refused with %v, want it to end with the floor", err)
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
