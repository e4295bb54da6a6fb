package central_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/mutex"
	"github.com/synclab/synclab/pkg/mutex/central"
	"github.com/synclab/synclab/pkg/wire"
)

// TestOverCapFreezeSaid: review-central3 F4 and F3. Members run a 5 s
// lease; 3 is SIGKILLed and 2 takes over, in its Hold. Forged syncs "from
// member 1" fill its cap (3 x 512 holds of 5 s), then one more re-announces
// a 1 s hold and a 5 s one, over the cap: neither is kept, and 2 grants
// nothing until the 5 s one would end and its Hold has run whole. The WARN said "before 1.02s from
// now", the first hold's end; and it was said once per member and term,
// so a later hold over the cap that moved the end further was never said.
// Once 2's Hold was over, its beats said nothing of the stop, and the
// followers' status said "granting" while 2 granted nothing. Now the WARN
// says when the stop really ends (its "until" is when the next lock is
// granted), again when a later hold moves it, and every member's status
// says that the coordinator grants nothing until then.
func TestOverCapFreezeSaid(t *testing.T) {
	r := reannounceLeases(t, 3, 0, func(uint32) time.Duration { return 5 * time.Second })
	r.s.Start()
	r.s.Run(7 * time.Second) // every member started a lease ago
	var own mutex.RequestID
	r.s.Do(3, func(c core.Core) { own, _ = c.(*central.Core).Acquire(r.s.Clock(3).Now(), mutex.Request{Lock: "own"}) })
	if !r.s.RunUntil(func() bool { st, _ := r.core(3).Lookup(own); return st.Granted }, time.Second) {
		t.Fatal("3 not granted its own lock")
	}
	r.s.Crash(3)
	co := r.core(2)
	if !r.s.RunUntil(func() bool { return co.Report().Detail.(central.Detail).Coordinates }, 5*time.Second) {
		t.Fatal("2 does not take over")
	}
	if co.Report().Detail.(central.Detail).Ready {
		t.Fatal("2 skipped its Hold: the test no longer forges in the Hold")
	}
	inc := r.core(1).Incarnation()
	holds := func(i int, left ...uint32) []wire.CentralSyncEntry {
		var entries []wire.CentralSyncEntry
		for j, l := range left {
			entries = append(entries, wire.CentralSyncEntry{Name: fmt.Sprintf("f%d.%d", i, j), Held: true,
				LeaseMS: 5000, LeftMS: l, Seq: uint64(j + 1), Fence: 1})
		}
		return entries
	}
	fill := make([]uint32, wire.MaxSyncEntries)
	for j := range fill {
		fill[j] = 5000 // still held at the second sync over the cap
	}
	for i := range 3 { // member 1's share (1024) and one sync's
		r.forgeSync(2, inc+1+uint32(i), uint32(1<<20+i), holds(i, fill...))
	}
	if n := co.Report().Counters["sync_holds_over_cap"]; n != 0 {
		t.Fatalf("%d holds over the cap before the sync meant to pass it: the cap is no longer 1536", n)
	}
	first := r.s.Now()
	r.forgeSync(2, inc+4, 1<<20+3, holds(3, 1000, 5000))
	said := warned(t, r.s, 2, central.EventHoldsOverCap)
	if len(said) != 1 {
		t.Fatalf("2 said %s %d times after the first sync over the cap, want once: %q", central.EventHoldsOverCap, len(said), said)
	}
	if n := co.Report().Counters["sync_holds_over_cap"]; n != 2 {
		t.Fatalf("sync_holds_over_cap %d, want 2", n)
	}
	// 3 s on, still in the Hold, one more hold over the cap, of 5 s: the
	// stop ends later than said, and 2.5 s after the Hold.
	r.s.Run(3 * time.Second)
	if co.Report().Detail.(central.Detail).Ready {
		t.Fatal("2's Hold ended before the second sync over the cap: the test no longer extends the stop in the Hold")
	}
	second := r.s.Now()
	r.forgeSync(2, inc+5, 1<<20+4, holds(4, 5000))
	var untils []time.Time
	for _, e := range r.s.EventsNamed(central.EventHoldsOverCap) {
		if e.Node == 2 {
			u, _ := e.Arg("until")
			untils = append(untils, u.(time.Time))
		}
	}
	said = warned(t, r.s, 2, central.EventHoldsOverCap)
	if len(untils) != 2 {
		t.Fatalf("2 said %s %d times, want twice (the second hold over the cap moves the stop's end): %q", central.EventHoldsOverCap, len(untils), said)
	}
	start := r.s.Config().Start
	for i, from := range []time.Time{first, second} {
		// The 5 s hold not kept, padded, from its sync, or the Hold's end
		// if later (the first): not the 1 s hold's end (1.02 s).
		if left := untils[i].Sub(from); left < 5*time.Second || left > 6*time.Second || i == 1 && left > 5200*time.Millisecond {
			t.Errorf("WARN %d says 2 grants nothing until %v, %v after its sync: want the 5 s hold's end, or the Hold's", i+1, untils[i].Sub(start), left)
		}
		if !strings.Contains(said[i], "grants no lock at all until") || !strings.Contains(said[i], "the longest hold not kept would end") {
			t.Errorf("WARN %d does not say until when 2 grants nothing and why: %s", i+1, said[i])
		}
	}
	// 2's Hold ends before the stop; then a beat: the followers are told.
	if !r.s.RunUntil(func() bool { return co.Report().Detail.(central.Detail).Ready }, 5*time.Second) {
		t.Fatal("2's Hold does not end")
	}
	r.s.Run(1100 * time.Millisecond)
	if d := co.Report().Detail.(central.Detail); d.FrozenLeftMS <= 0 {
		t.Fatalf("the stop ended a beat after 2's Hold: the test no longer looks inside it (frozen %d ms)", d.FrozenLeftMS)
	}
	if lines, _ := statusText(t, co); !strings.Contains(lines, "GRANTING NOTHING until") || !strings.Contains(lines, "central_holds_over_cap") {
		t.Errorf("coordinator 2's status does not say until when it grants nothing, and why:\n%s", lines)
	}
	d1 := r.core(1).Report().Detail.(central.Detail)
	if d1.Ready || d1.GrantsFrom.Sub(untils[1]).Abs() > 50*time.Millisecond {
		t.Errorf("member 1 says coordinator 2 grants from %v (ready %v), want its stop's end %v", d1.GrantsFrom.Sub(start), d1.Ready, untils[1].Sub(start))
	}
	if lines, _ := statusText(t, r.core(1)); !strings.Contains(lines, "coordinator grants nothing until") || strings.Contains(lines, "granting") {
		t.Errorf("member 1's status does not say that coordinator 2 grants nothing:\n%s", lines)
	}
	// No lock before the stop ends; then at once.
	var asked mutex.RequestID
	r.s.Do(2, func(c core.Core) { asked, _ = c.(*central.Core).Acquire(r.s.Clock(2).Now(), mutex.Request{Lock: "y"}) })
	if !r.s.RunUntil(func() bool { st, _ := co.Lookup(asked); return st.Granted }, 5*time.Second) {
		t.Fatalf("y not granted after the stop: %v", co.Report().Counters)
	}
	if at := r.s.Now(); at.Before(untils[1]) || at.Sub(untils[1]) > 100*time.Millisecond {
		t.Errorf("y granted at %v, want at the stop's end %v", at.Sub(start), untils[1].Sub(start))
	}
	r.s.Run(100 * time.Millisecond) // the beat's transit, which member 1 counts in
	if lines, _ := statusText(t, r.core(1)); !strings.Contains(lines, "granting") {
		t.Errorf("member 1's status does not say granting after the stop:\n%s", lines)
	}
}
