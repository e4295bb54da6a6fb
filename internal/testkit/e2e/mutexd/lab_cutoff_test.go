package mutexd

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/testkit/labnet"
)

// TestLabMutexdHolderCutOff: a partition of one member, the one holding
// the lock, with real binaries. Five namespace hosts run mutexd with the
// distributed bakery (issue 33; 3 s leases, the defaults), and every host
// increments the shared counter in a loop under `mutexd lock counter`,
// each section also writing to the fenced store (linkScript). Once a host
// holds the lock it is cut off from the four others (every link, both
// ways) for 8 s, longer than DeadAfter, then healed. The four must give it
// up and go on granting while it is cut off; it must grant nothing
// meanwhile once its lease ended, and run sections again after the heal;
// and through it all no section overlaps another, the counter equals the
// sections run, and the store refused no write (fences in grant order).
func TestLabMutexdHolderCutOff(t *testing.T) {
	labnet.Require(t)
	for _, alg := range []string{"bakery"} {
		t.Run(alg, func(t *testing.T) { labHolderCutOff(t, alg) })
	}
}

func labHolderCutOff(t *testing.T, alg string) {
	const n = 5
	const cutFor = 8 * time.Second
	l, file, store := fencedLab(t, alg, n)
	lab := l.lab
	stop := l.fencedLoops(file, store)
	time.Sleep(time.Second)
	cut := 0
	for deadline := time.Now().Add(5 * time.Second); cut == 0 && time.Now().Before(deadline); {
		cut = l.holder("counter")
	}
	if cut == 0 {
		_, _, why := stop()
		t.Fatalf("no holder seen in 5 s of every host asking: %v", why)
	}
	var rest []int
	for i := 1; i <= n; i++ {
		if i != cut {
			rest = append(rest, i)
		}
	}
	from := time.Now()
	lab.Split([]int{cut}, rest)
	// Halfway, the others show the cut-off member as down.
	time.Sleep(cutFor / 2)
	down := l.memberState(rest[0], cut)
	time.Sleep(cutFor / 2)
	lab.HealAll()
	healed := time.Now()
	time.Sleep(4 * time.Second)
	done, failed, why := stop()
	t.Logf("%s: h%d cut off from %v for %v: sections %v, failed runs %v", alg, cut, rest, healed.Sub(from).Round(time.Millisecond), done, failed)
	spans := checkFenced(t, file, store, done, why)
	if down != "down" {
		t.Errorf("h%d's status showed the cut-off h%d as %q halfway through the cut, want down", rest[0], cut, down)
	}
	// A lease, its padding and a margin after the cut, the cut-off host
	// holds nothing; the others go on once they gave it up (3.8 s and a
	// probe round).
	name := fmt.Sprintf("h%d", cut)
	var during, alone, after int
	for _, s := range spans {
		switch {
		case s.start > from.Add(5*time.Second).UnixNano() && s.end < healed.UnixNano():
			if s.host == name {
				alone++
			} else {
				during++
			}
		case s.start > healed.UnixNano() && s.host == name:
			after++
		}
	}
	t.Logf("from 5 s into the cut to the heal: %d sections by the four, %d by h%d; after the heal, %d by h%d", during, alone, cut, after, cut)
	if during == 0 {
		t.Errorf("the four hosts ran no section while h%d was cut off: they did not give it up", cut)
	}
	if alone != 0 {
		t.Errorf("h%d, cut off, ran %d sections 5 s into the cut: it granted without a majority", cut, alone)
	}
	if after == 0 {
		t.Errorf("h%d ran no section in the 4 s after the heal: it did not rejoin", cut)
	}
	log := l.procs[rest[0]].Output()
	if !slices.ContainsFunc(strings.Split(log, "\n"), func(line string) bool {
		return strings.Contains(line, "event=member_down") && strings.Contains(line, fmt.Sprintf("member=%d ", cut))
	}) {
		lines := strings.Split(strings.TrimSpace(log), "\n")
		t.Errorf("h%d never logged h%d down; its log ends:\n%s", rest[0], cut, strings.Join(lines[max(0, len(lines)-10):], "\n"))
	}
}
