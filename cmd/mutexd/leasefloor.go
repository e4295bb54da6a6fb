package main

import (
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/synclab/synclab/pkg/mutex"
)

// The lease floor: a cluster --lease that `mutexd lock`, the daemon's own
// client, cannot keep is refused at start, and one it keeps only while
// every renewal is answered at once is warned of. The rule is the keeper
// itself (keeper.go: a renewal every third of the lease, SIGTERM a third
// of the lease and killMargin before the client's deadline) run against
// how the algorithm counts a granted or renewed lease (mutex.Renewal:
// the token ring's renewal on a check still fresh does not move the
// lease's end, and its grant on one is shorter by the check's age;
// central's lease is cut by its support's age past half a beat), on
// paper, with no clock: a loaded host changes how late the answers come,
// never whether a lease this short can be kept when they come at once.

// defaultGrace is `mutexd lock --grace`'s default: the client the floor
// is computed for (a shorter --grace warns its command later, and keeps
// shorter leases; the keeper caps it at a third of the lease, so up to a
// 3 s lease the default is the worst case).
const defaultGrace = time.Second

// marginalDelay is how late every renewal's answer comes in the floor
// that is only warned of: a loaded host's late loop (bully's lab run at
// load 13 had followers 15 ms late) and a tick of the daemon (10 ms by
// default), at both ends of the renewal. A choice, not a measurement: it
// only decides what is warned of.
const marginalDelay = 50 * time.Millisecond

// keptRenewals is how many renewals in a row the keeper must make for a
// lease to count as kept: enough for its schedule to settle (a renewal
// on the token ring's fresh check is followed by one on a new check).
const keptRenewals = 12

// keepable says whether `mutexd lock` with its default --grace keeps a
// lease of lease granted by an algorithm that renews as rn says, each
// grant and renewal answered delay after it was asked (the lease counted
// from the asking at best, so the answer's lateness is lost from it). A
// grant may come on a counting instant up to rn.Reuse old (the token
// ring's next client of the member that holds the token is granted on
// the check its last holder had): every such age is tried.
func keepable(lease time.Duration, rn mutex.Renewal, delay time.Duration) bool {
	step := max(time.Millisecond, rn.Reuse/100)
	for age := time.Duration(0); ; age = min(age+step, rn.Reuse) {
		if !keptFrom(lease, rn, delay, age) {
			return false
		}
		if age >= rn.Reuse {
			return true
		}
	}
}

// keptFrom is keepable for a grant counted from age before its asking:
// mutexd lock anchors it (renews at once) when less than two thirds of
// the lease is left, then keeps it.
func keptFrom(lease time.Duration, rn mutex.Renewal, delay, age time.Duration) bool {
	cut := min(rn.Cut+delay, max(rn.CutMax, rn.Cut))
	t := time.Unix(1, 0)
	base := t.Add(-age) // the instant the lease is counted from
	now := t.Add(delay)
	end := base.Add(lease - cut)
	// renew is a renewal sent now, answered delay later; false: the lease
	// ends before the answer.
	renew := func() (sent time.Time, ok bool) {
		sent = now
		if rn.Reuse > 0 && sent.Sub(base) <= rn.Reuse {
			end = base.Add(lease)
		} else {
			base, end = sent, sent.Add(lease-cut)
		}
		now = sent.Add(delay)
		return sent, end.After(now)
	}
	if !end.After(now) {
		return false
	}
	sent := t
	if needsAnchor(lease, end.Add(-delay).Sub(now), defaultGrace) { // lock.go: acquire's anchor
		var ok bool
		if sent, ok = renew(); !ok {
			return false
		}
	}
	k := newKeeper(now, sent.Add(end.Sub(now)), lease, defaultGrace, "")
	for renewals := 0; renewals < keptRenewals; {
		a := k.Tick(now)
		if a.Term || a.Kill {
			return false
		}
		if a.Renew {
			renewals++
			sent, ok := renew()
			if !ok {
				return false
			}
			if a = k.Renewed(now, renewOutcome{Sent: sent, Left: end.Sub(now)}); a.Term || a.Kill {
				return false
			}
		}
		if a.Wake.IsZero() || !a.Wake.After(now) {
			return false // the keeper waits for nothing: it would not renew again
		}
		now = a.Wake
	}
	return true
}

// leaseFloor is the shortest lease that keepable keeps with answers
// delay late, every longer one being kept too up to ten times it, rounded
// up to 10 ms for the operator; renewal gives the algorithm's rule for
// each lease (it may depend on it). Leases are tried a millisecond apart
// up to a second, a two-hundredth apart beyond, up to an hour (the
// longest --lease); 0: none.
func leaseFloor(renewal func(lease time.Duration) mutex.Renewal, delay time.Duration) time.Duration {
	ok := func(l time.Duration) bool { return keepable(l, renewal(l), delay) }
	step := func(l time.Duration) time.Duration {
		if l < time.Second {
			return time.Millisecond
		}
		return l / 200
	}
	for l := time.Millisecond; l <= time.Hour; l += step(l) {
		if !ok(l) {
			continue
		}
		kept := true
		for m := l; m <= 10*l && kept; m += max(time.Millisecond, l/100) {
			kept = ok(m)
		}
		if kept {
			// Past a second the steps are coarse: the edge is found
			// to the millisecond below (the keeper keeps every lease
			// in between, or the step would have stopped earlier).
			l = (l + time.Millisecond - 1).Truncate(time.Millisecond)
			for l > time.Millisecond && ok(l-time.Millisecond) {
				l -= time.Millisecond
			}
			return (l + 10*time.Millisecond - 1).Truncate(10 * time.Millisecond)
		}
	}
	return 0
}

// checkLease refuses a --lease that mutexd lock can never keep with
// algorithm f under opt (a usage error naming the flags and the floor),
// and returns a warning for one it keeps only with renewals answered at
// once (more than marginalDelay late, it loses them).
func checkLease(f mutex.Factory, opt mutex.Options) (warning string, err error) {
	rule := func(o mutex.Options) mutex.Renewal {
		if f.Renewal == nil {
			return mutex.Renewal{}
		}
		return f.Renewal(o)
	}
	withLease := func(l time.Duration) mutex.Renewal {
		o := opt
		o.Lease = l
		return rule(o)
	}
	rn := rule(opt)
	with := fmt.Sprintf("--algorithm %s", f.Name)
	if len(rn.Flags) > 0 {
		with += ", " + strings.Join(rn.Flags, ", ")
	}
	how := "it renews every third of the lease and stops its command a third of the lease and " + killMargin.String() + " before the lease's end"
	switch {
	case rn.Reuse > 0:
		how += "; a grant to the next client of the member that holds the token, and a renewal, within " + rn.Reuse.String() + " of the ring's last check (the confirm window, at most half the lease) are made on that check: the grant's lease is shorter by the check's age, and the renewal does not move the lease's end"
	case rn.Cut > 0:
		how += fmt.Sprintf("; a lease is cut by up to %v (%s), %v when answers are late",
			rn.Cut.Round(time.Millisecond), rn.Cause, max(rn.CutMax, rn.Cut).Round(time.Millisecond))
	}
	if !keepable(opt.Lease, rn, 0) {
		floor := leaseFloor(withLease, 0)
		return "", fmt.Errorf("--lease %v (%s): `mutexd lock` can never keep a lease this short, even with every renewal answered at once: %s; set --lease %v or more%s%s",
			opt.Lease, with, how, floor, knobLowered(opt, rn.Knob, rule), perRequest(opt, floor))
	}
	if !keepable(opt.Lease, rn, marginalDelay) {
		return fmt.Sprintf("--lease %v (%s) is kept by `mutexd lock` only while renewals are answered within %v (%s): on a loaded host or a lossy link its commands end with exit 76 (lock lost); set --lease %v or more%s",
			opt.Lease, with, marginalDelay, how, leaseFloor(withLease, marginalDelay), knobLoweredAt(opt, rn.Knob, rule, marginalDelay)), nil
	}
	return "", nil
}

// perRequest is the refusal's last resort, where it applies: the
// cluster's --lease is only every request's longest (and default) one,
// and each algorithm's cut keeps a lease's end within MaxLease of what it
// rests on (the ring's check, central's support, the majority last
// heard), so a shorter lease a request asks for is cut only by what of
// that age exceeds the difference. A program that renews through the
// HTTP API more often than `mutexd lock` may ask for --lease itself per
// request, down to the shortest lease a request may ask; "" when --lease
// is shorter than that.
func perRequest(opt mutex.Options, floor time.Duration) string {
	if floor == 0 || opt.MinLease > opt.Lease {
		return ""
	}
	return fmt.Sprintf("; a program that renews through the HTTP API more often than every third of its lease may ask for %v itself per request (lease_ms %d on a cluster whose --lease is %v or more; the shortest a request may ask is %v)",
		opt.Lease, opt.Lease.Milliseconds(), floor, opt.MinLease)
}

// knobLowered says which value of the setting knob, at most its present
// one, would let --lease be kept (the largest, a millisecond apart), ""
// if none would.
func knobLowered(opt mutex.Options, knob string, rule func(mutex.Options) mutex.Renewal) string {
	return knobLoweredAt(opt, knob, rule, 0)
}

// knobLoweredAt is knobLowered with answers delay late.
func knobLoweredAt(opt mutex.Options, knob string, rule func(mutex.Options) mutex.Renewal, delay time.Duration) string {
	set := func(d time.Duration) mutex.Options {
		o := opt
		o.Params = maps.Clone(opt.Params)
		if knob == "heartbeat" {
			o.Heartbeat = d
		} else {
			o.Params[knob] = d
		}
		return o
	}
	cur := opt.Heartbeat
	if knob != "heartbeat" {
		cur = opt.Params[knob]
	}
	if knob == "" {
		return ""
	}
	for d := cur.Truncate(time.Millisecond); d >= time.Millisecond; d -= time.Millisecond {
		if keepable(opt.Lease, rule(set(d)), delay) {
			return fmt.Sprintf(", or --%s %v or less", knob, d)
		}
	}
	return ""
}
