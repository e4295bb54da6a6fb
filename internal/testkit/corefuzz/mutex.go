package corefuzz

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/mutex"
)

// What every mutex core's fuzz target shares: its clients, the fences a
// life grants, the metrics. Each target keeps its own choice of steps (so
// its corpus keeps driving the same paths), its own frames and its own
// invariants.

// LockName is one of names, or one time in four one of 40 others (more
// locks than the fuzz targets' MaxLocks).
func LockName(p *Program, names []string) string {
	name := names[p.Intn(len(names))]
	if p.Intn(4) == 0 {
		name = fmt.Sprintf("n%d", p.Intn(40))
	}
	return name
}

// Mode is exclusive or shared, the program's choice.
func Mode(p *Program) mutex.Mode {
	if p.Bool() {
		return mutex.Shared
	}
	return mutex.Exclusive
}

// Clients are the clients of the mutex core a Driver runs (its Core is a
// mutex.Algorithm): the requests they made in this life of the core,
// renewed and released at the program's choice.
type Clients struct {
	Driver *Driver
	reqs   []mutex.RequestID
}

func (c *Clients) algorithm() mutex.Algorithm { return c.Driver.Core.(mutex.Algorithm) }

// Acquire asks for lock in mode with a lease of 0 to 3 s (0: the
// default), the program's choice, keeps the request if it is taken, and
// drains the core (the write fails if failWrite).
func (c *Clients) Acquire(p *Program, lock string, mode mutex.Mode, failWrite bool) error {
	lease := time.Duration(p.Intn(4)) * time.Second
	if id, err := c.algorithm().Acquire(c.Driver.Now, mutex.Request{Lock: lock, Mode: mode, Lease: lease}); err == nil {
		c.reqs = append(c.reqs, id)
	}
	return c.Driver.Drain(failWrite)
}

// Touch releases or renews (for 0 to 3 s) one of the requests, the
// program's choice (nothing without one), and drains the core.
func (c *Clients) Touch(p *Program, failWrite bool) error {
	if len(c.reqs) > 0 {
		id := c.reqs[p.Intn(len(c.reqs))]
		if p.Bool() {
			_ = c.algorithm().Release(c.Driver.Now, id)
		} else {
			_ = c.algorithm().Renew(c.Driver.Now, id, time.Duration(p.Intn(4))*time.Second)
		}
	}
	return c.Driver.Drain(failWrite)
}

// Forget drops the requests: after a restart the new life knows none.
func (c *Clients) Forget() { c.reqs = nil }

// Fences checks that the grants of one life carry, per lock, a fence above
// the one before, or the same when both are shared (readers together share
// one). Clear it on a restart: a new life's fences are bounded by its
// disk, which the target checks its own way.
type Fences map[string]lastGrant

type lastGrant struct {
	fence  uint64
	shared bool
}

// Granted records fence, granted exclusive for lock, or says why it may
// not be.
func (f Fences) Granted(lock string, fence uint64) error {
	return f.GrantedMode(lock, mutex.Exclusive, fence)
}

// GrantedMode records fence, granted for lock in mode, or says why it may
// not be.
func (f Fences) GrantedMode(lock string, mode mutex.Mode, fence uint64) error {
	last, shared := f[lock], mode == mutex.Shared
	if fence < last.fence || fence == last.fence && !(shared && last.shared) {
		return fmt.Errorf("lock %s: granted fence %#x (%v) after %#x", lock, fence, mode, last.fence)
	}
	f[lock] = lastGrant{fence, shared}
	return nil
}

// OnEvent is a Driver's Ready that hands f every event of that name.
func OnEvent(name string, f func(e core.Event) error) func(core.Ready) error {
	return func(rd core.Ready) error {
		for _, e := range rd.Events {
			if e.Name != name {
				continue
			}
			if err := f(e); err != nil {
				return err
			}
		}
		return nil
	}
}

// EventArg returns the value that follows key in e's Args (nil without
// one).
func EventArg(e core.Event, key string) any {
	for i := 0; i+1 < len(e.Args); i += 2 {
		if e.Args[i] == key {
			return e.Args[i+1]
		}
	}
	return nil
}

// CheckMetrics: the core's metrics are valid, and no family has more than
// maxSamples samples (0: no bound): a hostile peer may make counters grow,
// never their number beyond the core's bounds.
func CheckMetrics(c interface{ Metrics(*core.MetricSet) }, maxSamples int) error {
	var m core.MetricSet
	c.Metrics(&m)
	if err := m.Err(); err != nil {
		return err
	}
	for _, fam := range m.Families() {
		if maxSamples > 0 && len(fam.Samples) > maxSamples {
			return fmt.Errorf("%s: %d samples, at most %d", fam.Name, len(fam.Samples), maxSamples)
		}
	}
	return nil
}

// Inputs are the programs a plain (non-fuzz) test runs a mutex target on
// to show that its grant checks are reached: seeds (the target's f.Add
// inputs), the stored corpus of target (testdata/fuzz/<target>, if any),
// and n programs of size bytes drawn from a fixed seed.
func Inputs(t testing.TB, target string, seeds [][]byte, n, size int) [][]byte {
	t.Helper()
	ins := slices.Clone(seeds)
	files, _ := filepath.Glob(filepath.Join("testdata", "fuzz", target, "*"))
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		_, lit, ok := strings.Cut(string(b), "[]byte(")
		lit, _ = strings.CutSuffix(strings.TrimSpace(lit), ")")
		in, err := strconv.Unquote(lit)
		if !ok || err != nil {
			t.Fatalf("%s: not a []byte corpus entry (%v)", name, err)
		}
		ins = append(ins, []byte(in))
	}
	r := rand.New(rand.NewPCG(uint64(len(target)), 7))
	for range n {
		b := make([]byte, size)
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		ins = append(ins, b)
	}
	return ins
}

// MustReach runs run, a mutex target's body, on its Inputs (64 generated
// programs of 1500 bytes beside seeds and the stored corpus) and fails t
// unless every one of kinds (the variants run picks from a program, as it
// names them) reached a grant: a target whose grant checks never run
// cannot fail them.
func MustReach(t *testing.T, target string, seeds [][]byte, kinds []string, run func(t testing.TB, in []byte) (kind string, grants int)) {
	t.Helper()
	ins := Inputs(t, target, seeds, 64, 1500)
	grants := map[string]int{}
	for _, in := range ins {
		k, n := run(t, in)
		grants[k] += n
	}
	for _, k := range kinds {
		t.Logf("%s %s: %d grants over %d programs", target, k, grants[k], len(ins))
		if grants[k] == 0 {
			t.Errorf("%s %s: no grant in %d programs: its fence checks never run", target, k, len(ins))
		}
	}
}

// checkLeases: a grant or a renewal a Ready reports holds its lock past
// the clock's reading, the driver's Now: a lock is never reported held
// with its lease over (a lease counted from a frame's stamp, read late,
// or from a check long past, can be: what mutexd's "a grant read too
// late" warns of).
func (d *Driver) checkLeases(rd core.Ready) error {
	for _, e := range rd.Events {
		if e.Name != mutex.EventGranted && e.Name != mutex.EventRenewed {
			continue
		}
		if exp, ok := EventArg(e, "expires").(time.Time); ok && !exp.After(d.Now) {
			return fmt.Errorf("%s (%v) reported at %v with its lease over at %v", e.Name, e.Args, d.Now.Format(time.RFC3339Nano), exp.Format(time.RFC3339Nano))
		}
	}
	return nil
}

// Late is how long a frame waits to be read, as Driver.Late reads it:
// mostly not at all, else a loop's stall (milliseconds), a paused process
// (seconds, past a lease), or any time up to 71 minutes.
func (p *Program) Late() time.Duration {
	switch p.Intn(8) {
	case 0, 1, 2, 3:
		return 0
	case 4:
		return time.Duration(1+p.Intn(50)) * time.Millisecond
	case 5:
		return time.Duration(1+p.Intn(40)) * 100 * time.Millisecond
	case 6:
		return time.Duration(1+p.Intn(60)) * time.Second
	}
	return time.Duration(p.raw(4)) * time.Microsecond
}
