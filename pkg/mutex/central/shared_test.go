package central_test

import (
	"testing"
	"time"

	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/mutex"
	"github.com/synclab/synclab/pkg/mutex/central"
)

// fencedResource is what a resource behind a lock does with fences: it
// keeps the highest it has seen and refuses an access with a lower one.
type fencedResource struct {
	highest uint64
	refused []string
}

func (f *fencedResource) access(who string, fence uint64) {
	if fence < f.highest {
		f.refused = append(f.refused, who+": "+central.FenceText(fence)+" below "+central.FenceText(f.highest))
		return
	}
	f.highest = fence
}

// TestReadersGrantedTogetherShareAFence: readers granted together, one of
// them a remote member whose grant is slow on the wire, all use a fenced
// resource at their grant and at their release, and none is refused.
// The coordinator (n4) grants n2, n3 and itself shared when n1's
// exclusive lock is released; the grant to n2 takes 100 ms, so n3 uses
// the resource and releases before n2's grant arrives, and n1 joins the
// readers in the meantime. With a fence per reader (f1 < f2 < f3 in queue
// order) the resource would see n3's f2 and then n2's f1, and refuse the
// lock's rightful holder; readers together share one fence, and the next
// writer's is above it.
func TestReadersGrantedTogetherShareAFence(t *testing.T) {
	r := &scenarioRun{t: t}
	r.newCluster(4, nil)
	s := r.s
	s.Run(4 * time.Second)
	if !r.core(4).Report().Detail.(central.Detail).Coordinates {
		t.Fatalf("n4 does not coordinate: %+v", r.core(4).Report().Detail)
	}
	reqs := map[uint32]mutex.RequestID{}
	acquire := func(id uint32, mode mutex.Mode) {
		s.Do(id, func(c core.Core) {
			req, err := c.(*central.Core).Acquire(s.Clock(id).Now(), mutex.Request{Lock: "db", Mode: mode})
			if err != nil {
				t.Fatalf("n%d: acquire: %v", id, err)
			}
			reqs[id] = req
		})
	}
	release := func(id uint32) {
		s.Do(id, func(c core.Core) {
			if err := c.(*central.Core).Release(s.Clock(id).Now(), reqs[id]); err != nil {
				t.Fatalf("n%d: release: %v", id, err)
			}
		})
	}
	from := len(s.Events())
	acquire(1, mutex.Exclusive)
	s.Run(20 * time.Millisecond)
	for _, id := range []uint32{2, 3, 4} {
		acquire(id, mutex.Shared)
	}
	s.Run(20 * time.Millisecond)
	s.SetLink(4, 2, sim.LinkConfig{Delay: 100 * time.Millisecond})
	release(1)
	s.Run(10 * time.Millisecond)
	release(3)
	acquire(1, mutex.Shared) // joins the readers that hold
	s.Run(200 * time.Millisecond)
	for _, id := range []uint32{1, 2, 4} {
		release(id)
	}
	s.Run(20 * time.Millisecond)
	acquire(3, mutex.Exclusive) // the next writer
	s.Run(20 * time.Millisecond)

	// Every holder uses the resource as it is granted and as it releases,
	// in the order the events happened.
	res := &fencedResource{}
	granted := map[uint32]time.Duration{}
	released := map[uint32]time.Duration{}
	fences := map[uint32][]uint64{}
	for _, e := range s.Events()[from:] {
		if e.Name != mutex.EventGranted && e.Name != mutex.EventReleased {
			continue
		}
		f, _ := e.Arg("fence")
		fence := f.(uint64)
		who := e.Name + " n" + string(rune('0'+e.Node))
		res.access(who, fence)
		if e.Name == mutex.EventGranted {
			fences[e.Node] = append(fences[e.Node], fence)
			granted[e.Node] = e.At
		} else if _, ok := released[e.Node]; !ok {
			released[e.Node] = e.At
		}
	}
	if !(released[3] > 0 && granted[2] > released[3]) {
		t.Fatalf("the race was not run: n3 released at %v, n2 granted at %v", released[3], granted[2])
	}
	if len(res.refused) > 0 {
		t.Errorf("the resource refused rightful holders: %v", res.refused)
	}
	// n1 (exclusive), then n2, n3, n4 and n1 (shared), then n3 (exclusive).
	readers := []uint64{fences[2][0], fences[3][0], fences[4][0], fences[1][1]}
	for _, f := range readers {
		if f != readers[0] {
			t.Errorf("readers together hold fences %v, want one", readers)
			break
		}
	}
	if !(fences[1][0] < readers[0] && readers[0] < fences[3][1]) {
		t.Errorf("writer %d, readers %d, writer %d: not increasing", fences[1][0], readers[0], fences[3][1])
	}
}
