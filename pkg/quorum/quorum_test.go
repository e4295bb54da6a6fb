package quorum

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestMajority(t *testing.T) {
	v, err := Majority(1, 2, 3, 4, 5)
	if err != nil || v.Needed() != 3 {
		t.Fatalf("%v, needed %d", err, v.Needed())
	}
	tl := NewTally(v)
	steps := []struct {
		id      uint32
		yes     bool
		counted bool
		want    Result
	}{
		{1, true, true, Pending}, {1, true, false, Pending}, {9, true, false, Pending},
		{2, false, true, Pending}, {3, true, true, Pending}, {4, false, true, Pending}, {5, true, true, Won},
	}
	for i, s := range steps {
		if got := tl.Vote(s.id, s.yes); got != s.counted {
			t.Fatalf("step %d: vote %d counted %v", i, s.id, got)
		}
		if r := tl.Result(); r != s.want {
			t.Fatalf("step %d: %v, want %v", i, r, s.want)
		}
	}
	tl = NewTally(v)
	tl.Vote(1, false)
	tl.Vote(2, false)
	if tl.Result() != Pending || !slices.Equal(tl.Silent(), []uint32{3, 4, 5}) {
		t.Fatalf("2 no of 5: %v, silent %v", tl.Result(), tl.Silent())
	}
	tl.Vote(3, false)
	if tl.Result() != Lost {
		t.Fatalf("3 no of 5: %v", tl.Result())
	}
	u, _ := Unanimous(1, 2, 3)
	tl = NewTally(u)
	tl.Vote(1, true)
	tl.Vote(2, true)
	if tl.Result() != Pending {
		t.Fatalf("unanimous, 2 of 3 yes: %v", tl.Result())
	}
	tl.Vote(3, true)
	if tl.Result() != Won {
		t.Fatalf("unanimous, 3 of 3 yes: %v", tl.Result())
	}
	tl = NewTally(u)
	tl.Vote(2, false)
	if tl.Result() != Lost {
		t.Fatalf("unanimous, a no: %v", tl.Result())
	}
	if _, err := Majority(1, 1); !errors.Is(err, ErrVoters) {
		t.Fatalf("duplicate voter: %v", err)
	}
	if _, err := Weighted(map[uint32]uint64{1: 0}); !errors.Is(err, ErrVoters) {
		t.Fatalf("zero weight: %v", err)
	}
}

// TestWeightedOracle checks Result against its definition over random
// weights and votes, and that any two Won yes-sets over the same voters
// intersect (the property every quorum algorithm rests on).
func TestWeightedOracle(t *testing.T) {
	for seed := range 500 {
		rnd := rand.New(rand.NewPCG(uint64(seed), 3))
		n := 1 + rnd.IntN(9)
		w := map[uint32]uint64{}
		var total uint64
		for i := 1; i <= n; i++ {
			w[uint32(i)] = 1 + uint64(rnd.IntN(5))
			total += w[uint32(i)]
		}
		v, err := Weighted(w)
		if err != nil {
			t.Fatal(err)
		}
		var won [][]uint32
		for range 20 {
			tl := NewTally(v)
			var yesSet []uint32
			var yes, no uint64
			for _, id := range rnd.Perm(n) {
				if rnd.IntN(3) == 0 {
					continue // silent
				}
				y := rnd.IntN(2) == 0
				tl.Vote(uint32(id+1), y)
				if y {
					yes += w[uint32(id+1)]
					yesSet = append(yesSet, uint32(id+1))
				} else {
					no += w[uint32(id+1)]
				}
			}
			want := Pending
			switch {
			case 2*yes > total:
				want = Won
			case 2*(total-no) <= total:
				want = Lost
			}
			if got := tl.Result(); got != want {
				t.Fatalf("seed %d: weights %v yes %d no %d: %v, want %v", seed, w, yes, no, got, want)
			}
			if want == Won {
				won = append(won, yesSet)
			}
		}
		for i := range won {
			for j := range won {
				if !slices.ContainsFunc(won[i], func(id uint32) bool { return slices.Contains(won[j], id) }) {
					t.Fatalf("seed %d: two winning sets %v and %v do not meet", seed, won[i], won[j])
				}
			}
		}
	}
}

func TestProbe(t *testing.T) {
	t0 := time.Unix(100, 0)
	p, err := Start(t0, ProbeConfig{Timeout: 50 * time.Millisecond, Tries: 3}, 7, []uint32{4, 2, 3, 2})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(p.AskedIDs(), []uint32{2, 3, 4}) || !p.Deadline().Equal(t0.Add(50*time.Millisecond)) {
		t.Fatalf("asked %v, deadline %v", p.AskedIDs(), p.Deadline())
	}
	if p.Answer(2, 6) || !p.Answer(2, 7) || p.Answer(2, 7) || !p.Answer(9, 7) {
		t.Fatal("answers: want a stale nonce and a repeat refused, a member not asked counted")
	}
	if again, over := p.Tick(t0.Add(49*time.Millisecond), nil); again != nil || over {
		t.Fatal("Tick before the deadline did something")
	}
	down := func(id uint32) bool { return id != 4 }
	again, over := p.Tick(t0.Add(50*time.Millisecond), down)
	if !slices.Equal(again, []uint32{3}) || over || p.Tries != 2 {
		t.Fatalf("second try: %v over %v tries %d", again, over, p.Tries)
	}
	again, over = p.Tick(t0.Add(100*time.Millisecond), down)
	if !slices.Equal(again, []uint32{3}) || over || p.Tries != 3 {
		t.Fatalf("third try: %v over %v", again, over)
	}
	if again, over = p.Tick(t0.Add(150*time.Millisecond), down); again != nil || !over || !p.Deadline().IsZero() {
		t.Fatalf("after the last try: %v over %v", again, over)
	}
	if p.Answer(3, 7) {
		t.Fatal("an answer after the end counted")
	}
	q, _ := Start(t0, ProbeConfig{Timeout: time.Second, Tries: 3}, 1, []uint32{2})
	if _, over := q.Tick(t0.Add(time.Second), func(uint32) bool { return false }); !over {
		t.Fatal("nobody reachable to ask again: the probe must end")
	}
	if _, err := Start(t0, ProbeConfig{}, 1, nil); !errors.Is(err, ErrProbeConfig) {
		t.Fatalf("zero config: %v", err)
	}
}
