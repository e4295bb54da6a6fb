package clock

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"sync"
	"testing"
	"testing/quick"
)

// TestLamportNotesExample replays the course notes' Lamport clock example (P1, P2, P3 ticking 6, 8, 10):
// P1, P2, P3 clocks advance by 6, 8 and 10 per period; m1 P1->P2, m2
// P2->P3 are fine, m3 (sent at 60) arrives at P2 at 56 and m4 (sent at 69)
// at P1 at 54, and the receivers are corrected to 61 and 70.
func TestLamportNotesExample(t *testing.T) {
	var p [4]Lamport // p[1..3]
	rate := [4]uint64{0, 6, 8, 10}
	var m1, m2, m3, m4 uint64
	check := func(what string, got, want uint64) {
		t.Helper()
		if got != want {
			t.Errorf("%s = %d, want %d", what, got, want)
		}
	}
	for period := 1; period <= 9; period++ {
		for i := 1; i <= 3; i++ {
			p[i].Advance(rate[i])
		}
		switch period {
		case 1:
			m1 = p[1].Now()
			check("m1 sent", m1, 6)
		case 2:
			check("m1 received by P2", p[2].Witness(m1), 16)
		case 3:
			m2 = p[2].Now()
			check("m2 sent", m2, 24)
		case 4:
			check("m2 received by P3", p[3].Witness(m2), 40)
		case 6:
			m3 = p[3].Now()
			check("m3 sent", m3, 60)
		case 7:
			check("P2 clock before m3", p[2].Now(), 56)
			check("m3 received by P2 (corrected)", p[2].Witness(m3), 61)
		case 8:
			m4 = p[2].Now()
			check("m4 sent", m4, 69)
		case 9:
			check("P1 clock before m4", p[1].Now(), 54)
			check("m4 received by P1 (corrected)", p[1].Witness(m4), 70)
		}
	}
}

// TestLamportRules checks the increment rules of the notes' chapter on logical time.
func TestLamportRules(t *testing.T) {
	var a, b Lamport
	if a.Tick() != 1 || a.Send() != 2 || a.Now() != 2 {
		t.Fatal("tick/send")
	}
	if got := b.Receive(2); got != 3 {
		t.Fatalf("Receive(2) on a fresh clock = %d, want 3", got)
	}
	b.Set(10)
	if got := b.Receive(2); got != 11 {
		t.Fatalf("Receive(2) at 10 = %d, want 11", got)
	}
	b.Restore(5)
	if b.Now() != 11 {
		t.Fatalf("Restore lowered the clock to %d", b.Now())
	}
	b.Restore(100)
	if b.Now() != 100 {
		t.Fatalf("Restore(100) = %d", b.Now())
	}
	b.Set(math.MaxUint64 - 1)
	if b.Receive(math.MaxUint64) != math.MaxUint64 || b.Tick() != math.MaxUint64 || b.Witness(math.MaxUint64) != math.MaxUint64 {
		t.Fatal("the clock wrapped instead of saturating")
	}
}

func TestLamportConcurrent(t *testing.T) {
	var l Lamport
	var wg sync.WaitGroup
	seen := make([][]uint64, 8)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 1000 {
				if i%2 == 0 {
					seen[g] = append(seen[g], l.Tick())
				} else {
					seen[g] = append(seen[g], l.Receive(uint64(i)))
				}
			}
		}()
	}
	wg.Wait()
	all := map[uint64]bool{}
	for _, s := range seen {
		for _, v := range s {
			if all[v] {
				t.Fatalf("stamp %d issued twice", v)
			}
			all[v] = true
		}
	}
}

func TestLamportLessIsATotalOrder(t *testing.T) {
	f := func(t1 uint64, id1 uint32, t2 uint64, id2 uint32) bool {
		t1, t2 = t1%4, t2%4 // make ties common
		id1, id2 = id1%3, id2%3
		lt, gt := LamportLess(t1, id1, t2, id2), LamportLess(t2, id2, t1, id1)
		same := t1 == t2 && id1 == id2
		// exactly one of <, >, = holds, and < follows the stamp first
		return (lt != gt || same) && !(same && lt) && (t1 >= t2 || lt)
	}
	if err := quick.Check(f, nil); err != nil {
		t.Fatal(err)
	}
	if !LamportLess(3, 1, 3, 2) || LamportLess(3, 2, 3, 1) || !LamportLess(2, 9, 3, 1) {
		t.Fatal("notes' tie-break by process number")
	}
}

func TestVectorCompare(t *testing.T) {
	v := func(m map[uint32]uint64) Vector { return VectorOf(m) }
	for _, tc := range []struct {
		a, b Vector
		want Ordering
	}{
		{Vector{}, Vector{}, Equal},
		{v(map[uint32]uint64{1: 1}), v(map[uint32]uint64{1: 1}), Equal},
		{v(map[uint32]uint64{1: 1}), v(map[uint32]uint64{1: 2}), Before},
		{v(map[uint32]uint64{1: 1}), v(map[uint32]uint64{1: 1, 2: 1}), Before},
		{v(map[uint32]uint64{1: 2, 2: 1}), v(map[uint32]uint64{1: 1}), After},
		{v(map[uint32]uint64{1: 2}), v(map[uint32]uint64{2: 1}), Concurrent},
		{v(map[uint32]uint64{1: 2, 2: 1}), v(map[uint32]uint64{1: 1, 2: 2}), Concurrent},
		{Vector{}, v(map[uint32]uint64{7: 1}), Before},
	} {
		if got := Compare(tc.a, tc.b); got != tc.want {
			t.Errorf("Compare(%v, %v) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
	if Ordering(9).String() != "ordering(9)" || Concurrent.String() != "concurrent" {
		t.Fatal("Ordering.String")
	}
}

func TestVectorCopySemantics(t *testing.T) {
	var a Vector
	a.Tick(1)
	c := a.Clone()
	a.Tick(1)
	if c.Get(1) != 1 || a.Get(1) != 2 {
		t.Fatalf("clone shares storage: %v %v", a, c)
	}
	var b Vector
	b.Receive(2, a)
	a.Tick(1)
	a.Set(5, 3)
	if b.Get(1) != 2 || b.Get(5) != 0 || b.Get(2) != 1 {
		t.Fatalf("Receive kept a reference to the stamp: %v", b)
	}
	a.Set(1, 0)
	if a.Get(1) != 0 || a.Len() != 1 || len(a.IDs()) != 1 {
		t.Fatalf("Set 0 did not remove the entry: %v", a)
	}
}

// event is one event of a random execution, for the oracle.
type event struct {
	proc    uint32
	vec     Vector
	lamport uint64
	preds   []int // direct predecessors: previous local event, send of a received message
}

// TestVectorCapturesHappensBefore runs random executions and compares Compare
// with happens-before computed from the event graph (the oracle), and checks
// that happens-before implies Lamport order.
func TestVectorCapturesHappensBefore(t *testing.T) {
	for seed := range uint64(30) {
		r := rand.New(rand.NewPCG(seed, 7))
		const procs = 4
		var vecs [procs + 1]Vector
		var lams [procs + 1]Lamport
		last := [procs + 1]int{-1, -1, -1, -1, -1}
		type msg struct {
			to   uint32
			vec  Vector
			lam  uint64
			send int
		}
		var inflight []msg
		var evs []event
		add := func(p uint32, extra int) {
			e := event{proc: p, vec: vecs[p].Clone(), lamport: lams[p].Now()}
			if last[p] >= 0 {
				e.preds = append(e.preds, last[p])
			}
			if extra >= 0 {
				e.preds = append(e.preds, extra)
			}
			last[p] = len(evs)
			evs = append(evs, e)
		}
		for range 60 {
			p := uint32(r.IntN(procs) + 1)
			switch k := r.IntN(3); {
			case k == 0:
				vecs[p].Tick(p)
				lams[p].Tick()
				add(p, -1)
			case k == 1:
				vecs[p].Tick(p)
				lam := lams[p].Send()
				add(p, -1)
				to := uint32(r.IntN(procs) + 1)
				inflight = append(inflight, msg{to, vecs[p].Clone(), lam, len(evs) - 1})
			case len(inflight) > 0:
				i := r.IntN(len(inflight))
				m := inflight[i]
				inflight = append(inflight[:i], inflight[i+1:]...)
				vecs[m.to].Receive(m.to, m.vec)
				lams[m.to].Receive(m.lam)
				add(m.to, m.send)
			}
		}
		// Oracle: reach[i][j] = i happens before j (transitive closure).
		n := len(evs)
		reach := make([][]bool, n)
		for j := range n {
			reach[j] = make([]bool, n)
		}
		for j := range n {
			for _, p := range evs[j].preds {
				reach[p][j] = true
				for i := range n {
					if reach[i][p] {
						reach[i][j] = true
					}
				}
			}
		}
		for i := range n {
			for j := range n {
				want := Concurrent
				switch {
				case i == j:
					want = Equal
				case reach[i][j]:
					want = Before
				case reach[j][i]:
					want = After
				}
				got := Compare(evs[i].vec, evs[j].vec)
				if got != want {
					t.Fatalf("seed %d: events %d, %d: Compare = %v, oracle %v", seed, i, j, got, want)
				}
				if back := Compare(evs[j].vec, evs[i].vec); (got == Before) != (back == After) || (got == Concurrent) != (back == Concurrent) {
					t.Fatalf("seed %d: Compare not antisymmetric for %d, %d", seed, i, j)
				}
				if reach[i][j] && evs[i].lamport >= evs[j].lamport {
					t.Fatalf("seed %d: %d -> %d but Lamport %d >= %d", seed, i, j, evs[i].lamport, evs[j].lamport)
				}
			}
		}
	}
}

func TestVectorMergeIsUpperBound(t *testing.T) {
	f := func(ma, mb map[uint32]uint64) bool {
		a, b := VectorOf(ma), VectorOf(mb)
		m := a.Clone()
		m.Merge(b)
		oa, ob := Compare(a, m), Compare(b, m)
		return (oa == Before || oa == Equal) && (ob == Before || ob == Equal) &&
			Compare(a, b) == invert(Compare(b, a))
	}
	if err := quick.Check(f, nil); err != nil {
		t.Fatal(err)
	}
}

func invert(o Ordering) Ordering {
	switch o {
	case Before:
		return After
	case After:
		return Before
	}
	return o
}

func TestVectorEncoding(t *testing.T) {
	v := VectorOf(map[uint32]uint64{3: 7, 1: 1 << 40, 0xffffffff: 2})
	b, err := v.AppendBinary([]byte{0xaa})
	if err != nil {
		t.Fatal(err)
	}
	want := []byte{0xaa, 0, 3,
		0, 0, 0, 1, 0, 0, 1, 0, 0, 0, 0, 0,
		0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 7,
		0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 2}
	if !bytes.Equal(b, want) || v.EncodedLen() != len(want)-1 {
		t.Fatalf("encoding % x", b)
	}
	var d Vector
	if err := d.UnmarshalBinary(b[1:]); err != nil || Compare(d, v) != Equal {
		t.Fatalf("decode: %v, %v", d, err)
	}
	allocs := testing.AllocsPerRun(100, func() { _ = d.UnmarshalBinary(b[1:]) })
	if allocs != 0 {
		t.Fatalf("decoding into a vector with room allocates %v times", allocs)
	}
	for _, tc := range []struct {
		in   []byte
		want error
		off  int
	}{
		{[]byte{0}, ErrVectorLength, 1},
		{[]byte{0, 1, 0, 0, 0, 1}, ErrVectorLength, 0},
		{[]byte{0x04, 0x01}, ErrVectorTooLong, 0},
		{append([]byte{0, 2}, append(want[3+12:3+24], want[3:3+12]...)...), ErrVectorUnsorted, 14},
		{[]byte{0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0}, ErrVectorZero, 6},
	} {
		err := d.UnmarshalBinary(tc.in)
		var de *VectorDecodeError
		if !errors.Is(err, tc.want) || !errors.As(err, &de) || de.Offset != tc.off {
			t.Errorf("% x: err = %v, want %v at %d", tc.in, err, tc.want, tc.off)
		}
		if d.Len() != 0 {
			t.Errorf("% x: failed decode left %v", tc.in, d)
		}
	}
}

func FuzzVectorUnmarshal(f *testing.F) {
	v := VectorOf(map[uint32]uint64{1: 3, 2: 9})
	b, _ := v.MarshalBinary()
	f.Add(b)
	f.Add([]byte{0, 0})
	f.Add([]byte{0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, in []byte) {
		var v Vector
		if err := v.UnmarshalBinary(in); err != nil {
			return
		}
		out, err := v.AppendBinary(nil)
		if err != nil || !bytes.Equal(out, in) {
			t.Fatalf("round trip % x -> %v -> % x (%v)", in, v, out, err)
		}
	})
}
