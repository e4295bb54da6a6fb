package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"
)

// One broken link: issue 29's item 9. The link between the holder and a
// waiter is cut (two nft rules on the bridge: both still reach the three
// others) at a random instant of the holder's lease; the holder keeps the
// lock, renewing it, for linkHold, longer than any member's DeadAfter
// (3.8 s with the defaults), then releases it. A waiter granted before
// that release is a second holder: the failure this measures. Otherwise
// the figure is the handoff across the broken link: from the release to
// the waiter's grant.

// linkHold is how long the holder keeps the lock after the cut.
const linkHold = 6 * time.Second

// linkCut runs *mutexTrials trials and records, by algorithm, the
// handoffs (r.linkCut) and how many trials had two holders
// (r.linkTwoHolders).
func (m *mutexBench) linkCut(r *mutexResults) {
	m.b.Helper()
	var took []time.Duration
	two, stuck := 0, 0
	for trial := range *mutexTrials {
		d, ok, late := m.linkCutTrial(trial)
		switch {
		case late:
			stuck++
		case !ok:
			two++
		default:
			took = append(took, d)
		}
	}
	r.linkCut[m.alg] = Summarize(took)
	r.linkTwoHolders[m.alg] = two
	r.linkStuck[m.alg] = stuck
}

// linkCutTrial returns the handoff across the cut link, or false if the
// waiter was granted while the holder still held; late if the waiter was
// not granted within failoverLimit of the release while the link was cut
// (it must be, once the link heals, or the run stops).
func (m *mutexBench) linkCutTrial(trial int) (_ time.Duration, _ bool, late bool) {
	m.b.Helper()
	holder := 1 + trial%mutexHosts
	waiter := 1 + (trial+1)%mutexHosts
	var g mutexGrant
	if err := m.clients[holder].Post(m.ctx, "/v1/locks/"+hotLock+"/acquire", struct{}{}, &g); err != nil {
		m.fatal(err)
	}
	// renewedAt is when the holder's last renewal (or its grant) came
	// back: its lease ends a lease after that at the latest. A waiter
	// granted after that, even before the release, is no second holder:
	// the holder's renewals failed (cut off from the coordinator or
	// quorum), its lease lapsed, and its client knows it.
	var renewedAt atomic.Int64
	renewedAt.Store(time.Now().UnixNano())
	// The holder's client renews a third of a lease at a time, as mutexd
	// lock does, until it releases.
	stopRenew := make(chan struct{})
	renewed := make(chan struct{})
	go func() {
		defer close(renewed)
		for {
			select {
			case <-stopRenew:
				return
			case <-time.After(mutexLeaseTTL / 3):
			}
			ctx, cancel := context.WithTimeout(m.ctx, mutexLeaseTTL/3)
			if err := m.clients[holder].Post(ctx, "/v1/locks/"+hotLock+"/renew", map[string]string{"request": g.Request}, nil); err != nil {
				m.logf("link cut trial %d: renewal at h%d: %v", trial+1, holder, err)
			} else {
				renewedAt.Store(time.Now().UnixNano())
			}
			cancel()
		}
	}()
	got := make(chan lockGrant, 1)
	go func() {
		rel, err := m.acquire(m.ctx, waiter, hotLock)
		if err != nil {
			m.logf("link cut trial %d: waiter at h%d: %v", trial+1, waiter, err)
			rel = func() error { return nil }
		}
		got <- lockGrant{time.Now(), rel}
	}()
	m.sleep(100*time.Millisecond + rand.N(mutexLeaseTTL-200*time.Millisecond)) // a random instant of the lease, once the waiter waits
	m.lab.Partition(holder, waiter)
	cut := time.Now()
	var gr lockGrant
	var released time.Time
	select {
	case gr = <-got:
	case <-time.After(linkHold):
	}
	close(stopRenew)
	<-renewed
	// The holder holds until its release is asked: a grant before that is
	// a second holder; one after it, the handoff (the waiter's answer may
	// come back before the release's own).
	released = time.Now()
	if err := m.clients[holder].Post(context.Background(), "/v1/locks/"+hotLock+"/release", map[string]string{"request": g.Request}, nil); err != nil {
		m.logf("link cut trial %d: release at h%d: %v", trial+1, holder, err)
	}
	if gr.release == nil {
		select {
		case gr = <-got:
		case <-time.After(failoverLimit):
			m.logf("mutexd link h%d-h%d cut %d/%d: h%d not granted within %v of the holder's release; healing the link",
				holder, waiter, trial+1, *mutexTrials, waiter, failoverLimit)
			late = true
			m.lab.Heal(holder, waiter)
			select {
			case gr = <-got:
			case <-time.After(failoverLimit):
				m.fatalf("link cut trial %d: the waiter at h%d was not granted within %v of the link's heal either", trial+1, waiter, failoverLimit)
			}
		}
	}
	m.lab.Heal(holder, waiter)
	defer func() {
		if err := gr.release(); err != nil {
			m.logf("link cut trial %d: release at h%d: %v", trial+1, waiter, err)
		}
		m.sleep(2 * time.Second) // the link heard again on both sides
	}()
	lapsed := time.Unix(0, renewedAt.Load()).Add(mutexLeaseTTL)
	if gr.at.Before(released) && gr.at.Before(lapsed) {
		m.logf("mutexd link h%d-h%d cut %d/%d: h%d granted %s after the cut while h%d still held the lock: two holders",
			holder, waiter, trial+1, *mutexTrials, waiter, Millis(gr.at.Sub(cut)), holder)
		return 0, false, late
	}
	if gr.at.Before(released) {
		// The holder's lease lapsed first: the handoff is from then.
		m.logf("mutexd link h%d-h%d cut %d/%d: h%d's renewals failed and its lease lapsed %s after the cut; h%d granted %s after that (before the release it asked for)",
			holder, waiter, trial+1, *mutexTrials, holder, Millis(lapsed.Sub(cut)), waiter, Millis(gr.at.Sub(lapsed)))
		released = lapsed
	}
	if late {
		return 0, true, true
	}
	took := gr.at.Sub(released)
	m.logf("mutexd link h%d-h%d cut %d/%d: h%d held %s past the cut; h%d granted %s after its release", holder, waiter, trial+1, *mutexTrials,
		holder, Millis(released.Sub(cut)), waiter, Millis(took))
	return took, true, false
}

// linkCutRows adds the broken link's row: the handoff after the release,
// and the trials with two holders (an algorithm not measured: "-").
func (m *mutexBench) linkCutRows(t *Table, r *mutexResults, systems []string) {
	cells := make([]string, len(systems))
	for i, sys := range systems {
		s, ok := r.linkCut[sys]
		if !ok {
			cells[i] = "-"
			continue
		}
		two, stuck := r.linkTwoHolders[sys], r.linkStuck[sys]
		text := fmt.Sprintf("%s / %s, two holders in %d of %d", Millis(s.P50), Millis(s.Max), two, *mutexTrials)
		if s.N == 0 {
			text = fmt.Sprintf("two holders in %d of %d", two, *mutexTrials)
		}
		if stuck > 0 {
			text += fmt.Sprintf(", not granted until the heal in %d", stuck)
		}
		cells[i] = Verdict(text, two == 0)
	}
	t.Row(fmt.Sprintf("link holder-waiter cut, holder keeps it %v: waiter granted after the release, p50 / max", linkHold), "0 two holders", cells...)
}
