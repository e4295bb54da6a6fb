package central_test

import (
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/mutex"
	"github.com/synclab/synclab/pkg/mutex/central"
)

// TestRenewalBeforeSyncNotRefused: 4 members, 4 coordinates and member 1
// holds x. Member 1's disk fails and 4 is SIGKILLed: member 1 follows 3,
// the new coordinator, but its sync of 3's term, which re-announces x,
// is withheld (the election's term did not reach its disk). Its disk
// heals and its next frame is a renewal of x, which 3 has not heard of.
// Before the fix 3 refused it (not held): member 1 reported x lost and
// re-announced it no more, while its client, told later, used it to the
// lease's end; a coordinator that heard every member re-announce then
// skipped its wait and granted x inside that lease (TestOracleDiskFaults
// seed 53). Now the renewal waits for member 1's sync (a beat is called
// for it), and is confirmed when 3 may renew an older term's grant.
func TestRenewalBeforeSyncNotRefused(t *testing.T) {
	for _, v := range []central.Variant{central.Coordinator, central.TokenAsk} {
		t.Run(v.String(), func(t *testing.T) {
			r, held := holdingX(t, v)
			r.s.SetDiskFaults(1, 1)
			r.s.Crash(4)
			following3 := func() bool { d := r.core(1).Report().Detail.(central.Detail); return d.Coordinator == 3 }
			if !r.s.RunUntil(following3, 3*time.Second) {
				t.Fatal("member 1 does not follow 3")
			}
			if n := r.s.Counters(1).Withheld; n == 0 {
				t.Fatal("member 1's sync to 3 was not withheld: the test no longer reaches the case")
			}
			r.s.SetDiskFaults(1, 0)
			var err error
			r.s.Do(1, func(c core.Core) { err = c.(*central.Core).Renew(r.s.Clock(1).Now(), held, 0) })
			if err != nil {
				t.Fatal(err)
			}
			renewed := false
			r.s.RunUntil(func() bool {
				for _, e := range r.s.Events() {
					if e.Node == 1 && e.Name == mutex.EventLost {
						t.Fatalf("member 1 lost x: %s", e.String())
					}
					renewed = renewed || e.Node == 1 && e.Name == mutex.EventRenewed && e.At > 2*time.Second
				}
				return renewed
			}, 2*time.Second)
			if !renewed {
				t.Fatalf("member 1's renewal of x not confirmed by 3 within 2 s: %v", r.core(1).Report().Counters)
			}
			if n := r.core(3).Report().Counters["renewals_before_sync"]; n == 0 {
				t.Errorf("3 counted no renewal before member 1's sync: %v", r.core(3).Report().Counters)
			}
		})
	}
}

// TestRenewalUnansweredBlamesOwnDisk: member 1 holds x from coordinator
// 4; its disk fails (every state write) and 4 is SIGKILLed. Member 1
// follows 3, but the election's new term never reaches its disk, so the
// driver keeps home every frame of its Readys: its sync and its renewals.
// The renewal's WARN blamed 3's Hold, or the link to 3 once 3 was ready
// ("the link to it may be broken"), sending the administrator to the
// network while the member's own disk withheld its frames
// (review-central). It names the disk now.
func TestRenewalUnansweredBlamesOwnDisk(t *testing.T) {
	r, held := holdingX(t, central.Coordinator)
	r.s.SetDiskFaults(1, 1)
	r.s.Crash(4)
	following3 := func() bool { d := r.core(1).Report().Detail.(central.Detail); return d.Coordinator == 3 }
	if !r.s.RunUntil(following3, 3*time.Second) {
		t.Fatal("member 1 does not follow 3")
	}
	r.s.Do(1, func(c core.Core) { _ = c.(*central.Core).Renew(r.s.Clock(1).Now(), held, 0) })
	var said []string
	r.s.RunUntil(func() bool {
		said = said[:0]
		for _, e := range r.s.Events() {
			if e.Node == 1 && e.Name == central.EventRenewalUnanswered {
				said = append(said, e.Msg)
			}
		}
		return len(said) > 0
	}, 2*time.Second)
	if n := r.s.Counters(1).Withheld; n == 0 {
		t.Fatal("no frame of member 1 was withheld: the test no longer reaches the case")
	}
	if len(said) == 0 {
		t.Fatal("member 1 did not warn of its unanswered renewal")
	}
	t.Log(said[0])
	for _, w := range []string{"state writes", "disk"} {
		if !strings.Contains(said[0], w) {
			t.Errorf("the warning does not say %q: %s", w, said[0])
		}
	}
	if strings.Contains(said[0], "link to it may be broken") {
		t.Errorf("the warning blames the link: %s", said[0])
	}
}
