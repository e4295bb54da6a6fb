package tokenring_test

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/diagram"
	"github.com/synclab/synclab/internal/testkit/mutexscript"
	"github.com/synclab/synclab/internal/testkit/scenario"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/mutex"
	"github.com/synclab/synclab/pkg/mutex/tokenring"
	"github.com/synclab/synclab/pkg/wire"
)

// TestScenarios replays the scripts in testdata/scenarios on a
// deterministic network (every frame takes 1 ms; members are ticked at
// their Deadline only) and compares what happens with the output recorded
// in the file, like bully's and etcd-io/raft's interaction tests, through
// internal/testkit/mutexscript, the harness every lock core's scripts share. A
// script is a sequence of commands ("> cmd args"), each followed by its
// expected output; lines starting with # are comments. After a deliberate
// change of behaviour, regenerate the files with
//
//	go test ./pkg/mutex/tokenring -run TestScenarios -rewrite
//
// and read the diff: it is the change, in protocol terms.
//
// Commands: mutexscript's (run D; acquire ID LOCK, which prints its
// request; release ID REQ; renew ID REQ; crash ID: its persisted state
// survives, frames to it are lost; restart ID: from its persisted state;
// counts: frames delivered by kind since the last counts), and
//
//	cluster N           N members with IDs 1..N, the LAN defaults, vouching on
//	pause ID D          member ID stops for D and goes on as if nothing happened (frames wait)
//	drop KIND           the next frame of KIND (token, token_ack, ...) is lost
//	status              every live member's view of each lock
//
// Each command prints what it caused, at the time it happened (ms since
// the start): the typed outcomes and the ring's events, one per line.
//
// Every script's run is traced (internal/testkit/scenario's Tracer) and laid out
// by internal/diagram: a line per member, one arrow per frame the network
// delivered, and the drawing's order is the run's true happened-before
// (the tracer's vector clocks: CheckCausality). With -scenario.traces DIR
// the traces are written there, one directory per script; with
// -mutexscript.out DIR the drawings.
func TestScenarios(t *testing.T) {
	scenario.Files(t, func(t *testing.T, script string) string {
		return mutexscript.Run(t, script, mutexscript.Setup{
			Net:          newScenarioRing,
			Prefix:       func(d time.Duration, id uint32) string { return fmt.Sprintf("%6dms %d", d.Milliseconds(), id) },
			ShowRequests: true,
			Kinds:        wire.Kinds(),
			Commands: map[string]func(r *mutexscript.Script, a scenario.Args){
				"pause": func(r *mutexscript.Script, a scenario.Args) {
					ring := r.N.(*scenarioRing)
					ring.paused[a.ID(1)] = ring.now.Add(a.Duration(2))
				},
				"drop": func(r *mutexscript.Script, a scenario.Args) {
					k, ok := kindNamed(a.F[1])
					if !ok {
						t.Fatalf("%q: no kind %q", a.Line, a.F[1])
					}
					r.N.(*scenarioRing).drop[k]++
				},
				"status": func(r *mutexscript.Script, _ scenario.Args) { r.N.(*scenarioRing).status() },
			},
		})
	})
}

// scenarioRing is the deterministic network of a scenario.
type scenarioRing struct {
	t       *testing.T
	ids     []uint32
	cores   map[uint32]*tokenring.Core
	disk    map[uint32][]byte
	down    map[uint32]bool
	paused  map[uint32]time.Time // until when
	now     time.Time
	net     []frame
	drop    map[wire.Kind]int
	counts  map[wire.Kind]int
	out     io.Writer
	grantOf map[uint32]map[mutex.RequestID]bool
	tr      *scenario.Tracer // every send, delivery and event (-scenario.traces DIR)
	// delivered counts the frames handed to a core since the ring began:
	// the arrows of its diagram.
	delivered int
}

func (r *scenarioRing) at() string { return fmt.Sprintf("%6dms", r.now.Sub(t0).Milliseconds()) }

func (r *scenarioRing) start(id uint32) {
	cfg := tokenring.DefaultLANConfig()
	cfg.ID, cfg.Members, cfg.Persisted = id, r.ids, r.disk[id]
	cfg.Rand = rand.New(rand.NewPCG(uint64(id), 1))
	c, err := tokenring.New(cfg)
	if err != nil {
		r.t.Fatal(err)
	}
	r.cores[id] = c
	delete(r.down, id)
	c.Tick(r.now)
	r.flush(id)
}

// flush sends what member id wants sent and prints what it reported.
func (r *scenarioRing) flush(id uint32) {
	c := r.cores[id]
	rd := c.Ready()
	if rd.State != nil {
		r.disk[id] = rd.State
	}
	c.Advance(true)
	for _, e := range rd.Events {
		r.tr.Local(r.now, id, e) // a Ready's events before its sends, as a daemon traces them
	}
	for _, m := range rd.Messages {
		m.From = id
		var tos []uint32
		for _, to := range r.ids {
			if to != id && (m.To == core.Broadcast || m.To == to) {
				tos = append(tos, to)
			}
		}
		for i, tf := range r.tr.Send(r.now, id, tos, m.Kind, m.Payload) {
			if r.drop[m.Kind] > 0 {
				r.drop[m.Kind]--
				fmt.Fprintf(r.out, "%s %d->%d %v dropped\n", r.at(), id, tos[i], m.Kind)
				continue
			}
			r.net = append(r.net, frame{at: r.now.Add(time.Millisecond), to: tos[i], m: m, tf: tf})
		}
	}
	for _, e := range rd.Events {
		switch e.Name {
		case mutex.EventGranted, mutex.EventRenewed, mutex.EventLost, mutex.EventReleased:
			continue // shown as outcomes
		}
		fmt.Fprintf(r.out, "%s %d %s", r.at(), id, e.Name)
		for i := 0; i+1 < len(e.Args); i += 2 {
			fmt.Fprintf(r.out, " %v=%s", e.Args[i], r.value(e.Args[i+1]))
		}
		io.WriteString(r.out, "\n")
	}
	for _, o := range c.Outcomes() {
		switch o := o.(type) {
		case mutex.Granted:
			fmt.Fprintf(r.out, "%s %d granted request=%d lock=%s fence=%s lease=%v generation=%s\n", r.at(), id, o.ID, o.Lock, fence(o.Fence), o.Lease, gen(o.Epoch))
		case mutex.Renewed:
			fmt.Fprintf(r.out, "%s %d renewed request=%d lock=%s fence=%s\n", r.at(), id, o.ID, o.Lock, fence(o.Fence))
		case mutex.Lost:
			fmt.Fprintf(r.out, "%s %d lost request=%d lock=%s fence=%s reason=%s\n", r.at(), id, o.ID, o.Lock, fence(o.Fence), o.Reason)
		case mutex.Released:
			fmt.Fprintf(r.out, "%s %d released request=%d lock=%s fence=%s\n", r.at(), id, o.ID, o.Lock, fence(o.Fence))
		}
	}
}

// value prints an event argument: generations as round/owner, times as ms
// since the start.
func (r *scenarioRing) value(v any) string {
	switch v := v.(type) {
	case time.Time:
		return fmt.Sprintf("%dms", v.Sub(t0).Milliseconds())
	}
	return fmt.Sprint(v)
}

func fence(f uint64) string { return fmt.Sprintf("%d:%d", f>>40, f&(1<<40-1)) }

func gen(g uint64) string {
	return fmt.Sprintf("%d/%d", tokenring.GenerationRound(g), tokenring.GenerationOwner(g))
}

func (r *scenarioRing) live(id uint32) bool {
	if r.down[id] {
		return false
	}
	until, paused := r.paused[id]
	return !paused || !r.now.Before(until)
}

// run lets d pass: frames arrive, members are ticked at their deadlines.
func (r *scenarioRing) run(d time.Duration) {
	end := r.now.Add(d)
	for {
		next := end
		for _, f := range r.net {
			if f.at.Before(next) && r.live(f.to) {
				next = f.at
			}
		}
		for _, id := range r.ids {
			if until, ok := r.paused[id]; ok && until.After(r.now) && until.Before(next) {
				next = until
			}
			if !r.live(id) {
				continue
			}
			if dl := r.cores[id].Deadline(); !dl.IsZero() && dl.Before(next) {
				next = dl
			}
		}
		if next.After(r.now) {
			r.now = next
		}
		for id, until := range r.paused {
			if !r.now.Before(until) {
				delete(r.paused, id)
			}
		}
		slices.SortStableFunc(r.net, func(a, b frame) int { return a.at.Compare(b.at) })
		var later []frame
		due := r.net
		r.net = nil // what the deliveries send goes here
		for _, f := range due {
			switch {
			case r.down[f.to]:
				// lost with the member
			case f.at.After(r.now) || !r.live(f.to):
				later = append(later, f)
			default:
				f.m.Time = r.now
				r.counts[f.m.Kind]++
				r.delivered++
				r.tr.Recv(r.now, f.tf)
				if err := r.cores[f.to].Step(f.m); err != nil {
					fmt.Fprintf(r.out, "%s %d refused %v from %d: %v\n", r.at(), f.to, f.m.Kind, f.m.From, err)
				}
				r.flush(f.to)
			}
		}
		r.net = append(later, r.net...)
		for _, id := range r.ids {
			if r.live(id) {
				if dl := r.cores[id].Deadline(); !dl.IsZero() && !dl.After(r.now) {
					r.cores[id].Tick(r.now)
					r.flush(id)
				}
			}
		}
		if !r.now.Before(end) {
			return
		}
	}
}

// newScenarioRing is the cluster command: N members on a new network, started.
func newScenarioRing(r *mutexscript.Script, a scenario.Args) mutexscript.Net {
	ring := &scenarioRing{t: r.T, cores: map[uint32]*tokenring.Core{}, disk: map[uint32][]byte{}, down: map[uint32]bool{},
		paused: map[uint32]time.Time{}, now: t0, drop: map[wire.Kind]int{}, counts: map[wire.Kind]int{}, out: r.Out}
	for i := 1; i <= int(a.Uint(1)); i++ {
		ring.ids = append(ring.ids, uint32(i))
	}
	ring.tr = scenario.Traced(r.T, "mutexd", ring.ids, t0)
	for _, id := range ring.ids {
		ring.start(id)
	}
	return ring
}

// The network as mutexscript drives it.

func (r *scenarioRing) Elapsed() time.Duration { return r.now.Sub(t0) }
func (r *scenarioRing) Run(d time.Duration)    { r.run(d) }
func (r *scenarioRing) Crash(id uint32)        { r.down[id] = true }
func (r *scenarioRing) Restart(id uint32)      { r.start(id) }
func (r *scenarioRing) Delivered(k wire.Kind) uint64 {
	return uint64(r.counts[k])
}
func (r *scenarioRing) ResetCounts() { clear(r.counts) }

// Do calls f on member id's core, then sends what it wants sent and
// prints what it reported.
func (r *scenarioRing) Do(id uint32, f func(c mutex.Algorithm, now time.Time)) error {
	f(r.cores[id], r.now)
	r.flush(id)
	return nil
}

// Draw lays the run out: a line per member, an arrow per delivered
// frame, in the run's happened-before order.
func (r *scenarioRing) Draw(t testing.TB, dir, name string) {
	traces, err := r.tr.Files()
	if err != nil {
		t.Fatal(err)
	}
	d, err := diagram.Build(traces)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Procs) != len(r.ids) {
		t.Errorf("%d lines for %d members", len(d.Procs), len(r.ids))
	}
	if d.Arrows() != r.delivered || r.delivered == 0 {
		t.Errorf("%d arrows for %d delivered frames", d.Arrows(), r.delivered)
	}
	if err := d.CheckCausality(); err != nil {
		t.Error(err)
	}
	if dir == "" {
		return
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := d.WriteSVG(&b, diagram.Options{}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".svg"), b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// status prints every live member's view of each lock.
func (r *scenarioRing) status() {
	for _, id := range r.ids {
		if r.down[id] {
			fmt.Fprintf(r.out, "%d down\n", id)
			continue
		}
		st := r.cores[id].Report()
		if len(st.Locks) == 0 {
			fmt.Fprintf(r.out, "%d no locks\n", id)
		}
		for _, l := range st.Locks {
			d := l.Detail.(tokenring.LockDetail)
			fmt.Fprintf(r.out, "%d %s token=%s promised=%s fence=%s holder=%s queue=%d\n", id, l.Name,
				orDash(d.Token), gen(d.Promised), fence(l.Fence), holder(l.Holder), len(l.Queue))
		}
	}
}

func kindNamed(name string) (wire.Kind, bool) {
	for k := wire.Kind(1); k < 64; k++ {
		if k.String() == name {
			return k, true
		}
	}
	return 0, false
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func holder(h *mutex.RequestStatus) string {
	if h == nil {
		return "-"
	}
	return fmt.Sprintf("#%d", h.ID)
}
