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
// how the algorithm counts a renewed lease (mutex.Renewal: the token
// ring's renewal on a check still fresh does not move the lease's end;
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
// from the asking at best, so the answer's lateness is lost from it).
func keepable(lease time.Duration, rn mutex.Renewal, delay time.Duration) bool {
	cut := min(rn.Cut+delay, max(rn.CutMax, rn.Cut))
	t := time.Unix(1, 0)
	base := t // the instant the lease is counted from
	answered := t.Add(delay)
	end := t.Add(lease - cut)
	if !end.After(answered) {
		return false
	}
	k := newKeeper(answered, end.Add(-delay), lease, defaultGrace, "")
	now := answered
	for renewals := 0; renewals < keptRenewals; {
		a := k.Tick(now)
		if a.Term || a.Kill {
			return false
		}
		if a.Renew {
			renewals++
			sent := now
			if rn.Reuse > 0 && sent.Sub(base) <= rn.Reuse {
				end = base.Add(lease)
			} else {
				base, now = sent, sent.Add(delay)
				end = sent.Add(lease - cut)
			}
			if !end.After(now) {
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

// early is rule rn as it stands before the algorithm's usual bound holds
// (mutex.Renewal.EarlyCut: Ricart-Agrawala's and the bakery's before a
// majority first acknowledged a lease end), the same rule where it has
// none.
func early(rn mutex.Renewal) mutex.Renewal {
	rn.Cut, rn.CutMax = max(rn.Cut, rn.EarlyCut), max(rn.CutMax, rn.EarlyCutMax)
	return rn
}

// checkLease refuses a --lease that mutexd lock can never keep with
// algorithm f under opt (a usage error naming the flags and the floor),
// and returns a warning for one it keeps only with renewals answered at
// once (more than marginalDelay late, it loses them), or only once the
// algorithm's usual bound holds (early).
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
		how += "; a renewal within " + rn.Reuse.String() + " of the ring's last check (the confirm window, at most half the lease) is made on that check and does not move the lease's end"
	case rn.Cut > 0:
		how += fmt.Sprintf("; a lease is cut by up to %v (%s), %v when answers are late",
			rn.Cut.Round(time.Millisecond), rn.Cause, max(rn.CutMax, rn.Cut).Round(time.Millisecond))
	}
	if !keepable(opt.Lease, rn, 0) {
		return "", fmt.Errorf("--lease %v (%s): `mutexd lock` can never keep a lease this short, even with every renewal answered at once: %s; set --lease %v or more%s",
			opt.Lease, with, how, leaseFloor(withLease, 0), knobLowered(opt, rn.Knob, rule))
	}
	if rn.EarlyCut > 0 {
		// Not the refusal's: the bound comes with the first busy
		// heartbeat's acknowledgements.
		how += fmt.Sprintf("; a lease is cut by up to %v (%s), %v when answers are late",
			rn.EarlyCut.Round(time.Millisecond), rn.Cause, max(rn.EarlyCutMax, rn.EarlyCut).Round(time.Millisecond))
	}
	if !keepable(opt.Lease, early(rn), marginalDelay) {
		return fmt.Sprintf("--lease %v (%s) is kept by `mutexd lock` only while renewals are answered within %v (%s): on a loaded host or a lossy link its commands end with exit 76 (lock lost); set --lease %v or more%s",
			opt.Lease, with, marginalDelay, how, leaseFloor(func(l time.Duration) mutex.Renewal { return early(withLease(l)) }, marginalDelay),
			knobLoweredAt(opt, rn.Knob, func(o mutex.Options) mutex.Renewal { return early(rule(o)) }, marginalDelay)), nil
	}
	return "", nil
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
