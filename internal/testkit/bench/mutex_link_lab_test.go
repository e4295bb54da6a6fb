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
		case !ok:
			two++
		case late:
			stuck++
		default:
			took = append(took, d)
		}
	}
	r.linkCut[m.alg] = Summarize(took)
	r.linkTwoHolders[m.alg] = two
	r.linkStuck[m.alg] = stuck
}

// linkTimeline is what a link-cut trial recorded, on the bench's clock:
// everything the verdict is made of, so that a recorded trial can be
// judged again (mutex_link_test.go).
type linkTimeline struct {
	cut time.Time
	// leaseEnd is the end of the holder's lease as its client last
	// learned it: the answer to its grant, or to its last confirmed
	// renewal, plus the lease_left_ms that answer carried. Not a full
	// --lease after the answer: a coordinator cuts a lease granted or
	// renewed on support more than half a beat old (lease_left_ms says
	// so; central's 3 s lease is 2.25-3 s), and the member, which counts
	// its lease from its request's sending, ends it there.
	leaseEnd time.Time
	// released is when the holder's release was asked (linkHold after the
	// cut, or as soon as the waiter was granted).
	released time.Time
	// granted is when the waiter's grant came back; zero if it never came
	// while the link was cut.
	granted time.Time
	// holderFence and waiterFence are the two grants' fences.
	holderFence, waiterFence uint64
}

// linkVerdict is what a link-cut trial shows.
type linkVerdict int

const (
	// linkAfterRelease: the waiter was granted after the holder's release
	// was asked (the answer may come back before the release's own).
	linkAfterRelease linkVerdict = iota
	// linkAfterLapse: the waiter was granted before the release, but after
	// the holder's lease ended as its client knew it (its renewals were not
	// confirmed: the coordinator, or a quorum, was beyond the cut link):
	// a handoff, counted from the lapse.
	linkAfterLapse
	// linkTwoHolders: the waiter was granted while the holder's client
	// still held a lease it had been told of, or with a fence not above
	// the holder's: the failure this row measures.
	linkTwoHolders
	// linkNotGranted: the waiter was not granted while the link was cut.
	linkNotGranted
)

// verdict judges a trial, and for a handoff gives its length: from the
// release (or the lapse) to the waiter's grant.
func (tl linkTimeline) verdict() (linkVerdict, time.Duration) {
	switch {
	case tl.granted.IsZero():
		return linkNotGranted, 0
	case tl.waiterFence <= tl.holderFence:
		return linkTwoHolders, 0
	case !tl.granted.Before(tl.released):
		return linkAfterRelease, tl.granted.Sub(tl.released)
	case tl.granted.Before(tl.leaseEnd):
		return linkTwoHolders, 0
	}
	return linkAfterLapse, tl.granted.Sub(tl.leaseEnd)
}

// linkLeaseEnd is the end of a lease an answer received at got says has
// left ms left.
func linkLeaseEnd(got time.Time, leftMS int64) time.Time {
	return got.Add(time.Duration(leftMS) * time.Millisecond)
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
	// leaseEnd is the holder's lease end as its client knows it, moved by
	// every confirmed renewal (linkTimeline.leaseEnd).
	var leaseEnd atomic.Int64
	leaseEnd.Store(linkLeaseEnd(time.Now(), g.LeaseLeftMS).UnixNano())
	m.logf("link cut trial %d: h%d holds (fence %#x, lease left %d ms), h%d waits, h%d coordinates", trial+1, holder, g.Fence, g.LeaseLeftMS, waiter, m.coordinator())
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
			sent := time.Now()
			var rv mutexGrant
			if err := m.clients[holder].Post(ctx, "/v1/locks/"+hotLock+"/renew", map[string]string{"request": g.Request}, &rv); err != nil {
				m.logf("link cut trial %d: renewal at h%d sent %s: %v", trial+1, holder, sent.Format(stampMillis), err)
			} else {
				now := time.Now()
				leaseEnd.Store(linkLeaseEnd(now, rv.LeaseLeftMS).UnixNano())
				m.logf("link cut trial %d: renewal at h%d sent %s, confirmed %s (lease left %d ms)", trial+1, holder,
					sent.Format(stampMillis), now.Format(stampMillis), rv.LeaseLeftMS)
			}
			cancel()
		}
	}()
	got := make(chan lockGrant, 1)
	var wg mutexGrant // written before got is sent on
	go func() {
		rel := func() error {
			return m.clients[waiter].Post(context.Background(), "/v1/locks/"+hotLock+"/release", map[string]string{"request": wg.Request}, nil)
		}
		if err := m.clients[waiter].Post(m.ctx, "/v1/locks/"+hotLock+"/acquire", struct{}{}, &wg); err != nil {
			m.logf("link cut trial %d: waiter at h%d: %v", trial+1, waiter, err)
			got <- lockGrant{release: func() error { return nil }} // no grant: the zero instant
			return
		}
		got <- lockGrant{time.Now(), rel}
	}()
	m.sleep(100*time.Millisecond + rand.N(mutexLeaseTTL-200*time.Millisecond)) // a random instant of the lease, once the waiter waits
	m.lab.Partition(holder, waiter)
	tl := linkTimeline{cut: time.Now(), holderFence: g.Fence}
	var gr lockGrant
	select {
	case gr = <-got:
	case <-time.After(linkHold):
	}
	close(stopRenew)
	<-renewed
	// The holder holds until its release is asked, or its lease ends.
	tl.released = time.Now()
	tl.leaseEnd = time.Unix(0, leaseEnd.Load())
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
	tl.waiterFence = wg.Fence
	if !late {
		tl.granted = gr.at
	} else if !gr.at.IsZero() && wg.Fence <= g.Fence {
		// Granted after the heal, but the fence must still have grown.
		m.logf("mutexd link h%d-h%d cut %d/%d: h%d granted after the heal with fence %#x, not above h%d's %#x: two holders",
			holder, waiter, trial+1, *mutexTrials, waiter, wg.Fence, holder, g.Fence)
		return 0, false, late
	}
	m.logf("link cut trial %d: cut %s, h%d's lease to %s (fence %#x), release asked %s, h%d granted %s (fence %#x)", trial+1,
		tl.cut.Format(stampMillis), holder, tl.leaseEnd.Format(stampMillis), tl.holderFence, tl.released.Format(stampMillis),
		waiter, gr.at.Format(stampMillis), wg.Fence)
	v, took := tl.verdict()
	switch v {
	case linkTwoHolders:
		m.logf("mutexd link h%d-h%d cut %d/%d: h%d granted %s after the cut (fence %#x) while h%d still held the lock (lease to %s, fence %#x): two holders",
			holder, waiter, trial+1, *mutexTrials, waiter, Millis(gr.at.Sub(tl.cut)), wg.Fence, holder, Millis(tl.leaseEnd.Sub(tl.cut)), g.Fence)
		return 0, false, late
	case linkNotGranted:
		return 0, true, true
	case linkAfterLapse:
		m.logf("mutexd link h%d-h%d cut %d/%d: h%d's renewals were not confirmed and its lease ended %s after the cut; h%d granted %s after that (before the release it asked for)",
			holder, waiter, trial+1, *mutexTrials, holder, Millis(tl.leaseEnd.Sub(tl.cut)), waiter, Millis(took))
	default:
		m.logf("mutexd link h%d-h%d cut %d/%d: h%d held %s past the cut; h%d granted %s after its release", holder, waiter, trial+1, *mutexTrials,
			holder, Millis(tl.released.Sub(tl.cut)), waiter, Millis(took))
	}
	return took, true, false
}

// stampMillis formats the trials' instants in the log.
const stampMillis = "15:04:05.000"

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
