package main

import (
	"fmt"
	"time"
)

// keeper is the lease keeper of `mutexd lock` as a deterministic state
// machine: it is told what happened (the time, a renewal's result, the
// child's exit) and says what to do (renew now, signal the child's group,
// when to wake it next). It reads no clock and starts nothing, so a table
// test drives it through any schedule without a real sleep; lockRun.run is
// the thin real-time shell around it.
//
// While renewals succeed the deadline moves on and nothing happens. Once
// the lock is lost (a renewal said so), or the deadline comes so close that
// only the grace period is left (the renewals failed), the child's group
// gets SIGTERM, and SIGKILL a grace period later but never after killMargin
// before the deadline. From SIGTERM on the lock counts as lost: no more
// renewals.
type keeper struct {
	what                   string // the command, for the warnings
	lease, grace           time.Duration
	renewEvery, retryEvery time.Duration
	// deadline is this client's own end of the lease: the time just
	// before the request that granted or renewed it was sent, plus the
	// lease_left_ms the daemon answered. The daemon's lease ends later.
	deadline time.Time

	renewAt   time.Time // when the next renewal is due
	renewing  bool      // a renewal is in flight
	lastRenew error     // the last renewal's failure, nil after a success
	lost      string    // why the lock is gone; "" while held
	lostAt    time.Time
	termSent  bool
	killSent  bool
}

// keeperAction is what the shell does after an input, in this order.
type keeperAction struct {
	Renew bool   // start a renewal now
	Term  bool   // send SIGTERM to the child's group
	Kill  bool   // send SIGKILL to the child's group
	Warn  string // print on stderr (prefixed "mutexd: lock NAME ")
	// Wake is when the shell must call Tick next (zero: only on another
	// input).
	Wake time.Time
}

// renewOutcome is a renewal's result as the keeper sees it.
type renewOutcome struct {
	Sent time.Time     // just before the request left
	Left time.Duration // lease_left_ms of a success
	// Gone says the daemon answered that the grant is over (410, 404,
	// 409): Err says why. Otherwise Err is a failure worth retrying.
	Gone bool
	Err  error
}

func newKeeper(now, deadline time.Time, lease, grace time.Duration, what string) *keeper {
	return &keeper{
		what: what, lease: lease, grace: grace, deadline: deadline,
		renewEvery: max(lease/3, 10*time.Millisecond),
		retryEvery: max(min(lease/10, 250*time.Millisecond), 10*time.Millisecond),
		renewAt:    now.Add(max(min(lease, deadline.Sub(now))/3, 10*time.Millisecond)),
	}
}

// needsAnchor says whether a grant answered with left of its lease to
// the client's deadline must be renewed before the keeper starts (lock.go:
// the anchor): less than two thirds of the lease left (the request waited
// in the queue), or so little that the keeper's SIGTERM falls due before
// its first renewal (a wait of under a third of a lease shorter than
// 450 ms: at 400 ms, a grant with 268 ms left renews at 89 ms and warns
// the command at 85 ms).
func needsAnchor(lease, left, grace time.Duration) bool {
	first := max(min(lease, left)/3, 10*time.Millisecond)
	return left < lease*2/3 || first >= left-killMargin-min(grace, lease/3)
}

// renewAfter is when the next renewal is due after one that left the
// lease left: a third of the lease, or of what is left when a grant or
// renewal came with less than asked (an algorithm may cut a lease to end
// with its majority's support: the central coordinator, Ricart-Agrawala),
// so that the renewal comes well before the warning.
func (k *keeper) renewAfter(left time.Duration) time.Duration {
	return max(min(k.renewEvery, left/3), 10*time.Millisecond)
}

// Lost is why the lock is gone, "" while it is held.
func (k *keeper) Lost() string { return k.lost }

// Tick is a wake-up at now (the timer the last action asked for, or
// any other): it starts a renewal that is due and signals the child when
// its time has come.
func (k *keeper) Tick(now time.Time) keeperAction {
	var a keeperAction
	if !k.renewing && k.lost == "" && !now.Before(k.renewAt) {
		k.renewing = true
		a.Renew = true
	}
	k.signal(now, &a)
	return a
}

// Renewed takes a renewal's result at now.
func (k *keeper) Renewed(now time.Time, r renewOutcome) keeperAction {
	var a keeperAction
	k.renewing = false
	if k.lost == "" {
		switch {
		case r.Err == nil:
			k.lastRenew = nil
			k.deadline = r.Sent.Add(r.Left)
			k.renewAt = now.Add(k.renewAfter(r.Left))
		case r.Gone:
			k.lose(now, r.Err.Error())
			a.Warn = fmt.Sprintf("lost: %s: sending SIGTERM to %s", r.Err, k.what)
		default:
			k.lastRenew = r.Err
			k.renewAt = now.Add(k.retryEvery)
		}
	}
	k.signal(now, &a)
	return a
}

func (k *keeper) lose(now time.Time, why string) {
	if k.lost == "" {
		k.lost, k.lostAt = why, now
	}
}

// signal sends SIGTERM and SIGKILL when their time has come, and sets
// when to wake next.
func (k *keeper) signal(now time.Time, a *keeperAction) {
	killAt := k.deadline.Add(-killMargin)
	// While renewals merely fail, the child is warned at most a third of
	// the lease ahead: a longer grace would end it at the first failure
	// (or, with a short lease, before any renewal).
	termAt := killAt.Add(-min(k.grace, k.lease/3))
	if k.lost != "" {
		termAt = k.lostAt
		killAt = minTime(killAt, k.lostAt.Add(k.grace))
	}
	if !k.termSent && !now.Before(termAt) {
		if k.lost == "" {
			why := "no renewal confirmed in time"
			if k.lastRenew != nil {
				why += ": " + k.lastRenew.Error()
			}
			k.lose(now, why)
			a.Warn = fmt.Sprintf("%s; the lease is about to end: sending SIGTERM to %s", why, k.what)
		}
		k.termSent, a.Term = true, true
	}
	if k.termSent && !k.killSent && !now.Before(killAt) {
		k.killSent, a.Kill = true, true
	}
	switch {
	case !k.termSent:
		a.Wake = termAt
		if !k.renewing && k.renewAt.Before(termAt) {
			a.Wake = k.renewAt
		}
	case !k.killSent:
		a.Wake = killAt
	}
}
