package delivery

import (
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/sim"
)

var t0 = time.Unix(1000, 0)

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

func TestOutboxResendsThenGivesUp(t *testing.T) {
	o, err := NewOutbox[string](Config{Retry: ms(100), Tries: 3})
	if err != nil {
		t.Fatal(err)
	}
	k := Key{To: 2, ID: 7}
	if err := o.Send(t0, k, "adjust"); err != nil {
		t.Fatal(err)
	}
	if d := o.Deadline(); !d.Equal(t0.Add(ms(100))) {
		t.Fatalf("deadline %v, want +100ms", d.Sub(t0))
	}
	if re, gu := o.Tick(t0.Add(ms(99))); len(re)+len(gu) != 0 {
		t.Fatalf("before the deadline: resend %v, gave up %v", re, gu)
	}
	for try := 2; try <= 3; try++ {
		at := t0.Add(ms(100 * (try - 1)))
		re, gu := o.Tick(at)
		if len(re) != 1 || len(gu) != 0 || re[0].Msg != "adjust" || re[0].Tries != try || !re[0].Last.Equal(at) {
			t.Fatalf("try %d: resend %+v, gave up %+v", try, re, gu)
		}
	}
	re, gu := o.Tick(t0.Add(ms(300)))
	if len(re) != 0 || len(gu) != 1 || gu[0].Outcome != GaveUp || gu[0].Tries != 3 || gu[0].Key != k {
		t.Fatalf("after the last try: resend %+v, gave up %+v", re, gu)
	}
	if o.Len() != 0 || !o.Deadline().IsZero() {
		t.Fatalf("empty outbox: len %d, deadline %v", o.Len(), o.Deadline())
	}
	if _, ok := o.Ack(t0.Add(ms(301)), k); ok {
		t.Fatal("an ack after the give-up was taken")
	}
}

func TestOutboxTriesOneIsATimeout(t *testing.T) {
	o, _ := NewOutbox[int](Config{Retry: ms(200), Tries: 1})
	o.Send(t0, Key{To: 3, ID: 1}, 1)
	re, gu := o.Tick(t0.Add(ms(200)))
	if len(re) != 0 || len(gu) != 1 || gu[0].Outcome != GaveUp {
		t.Fatalf("resend %+v, gave up %+v", re, gu)
	}
}

func TestOutboxAckCancelReplace(t *testing.T) {
	o, _ := NewOutbox[string](Config{Retry: ms(100), Tries: 2, MaxPending: 2})
	a, b, c := Key{2, 1}, Key{3, 1}, Key{4, 1}
	o.Send(t0, a, "a")
	o.Send(t0.Add(ms(10)), b, "b")
	if err := o.Send(t0, c, "c"); !errors.Is(err, ErrFull) {
		t.Fatalf("third send with MaxPending 2: %v, want ErrFull", err)
	}
	if err := o.Send(t0.Add(ms(50)), a, "a2"); err != nil {
		t.Fatalf("replacing a waiting message: %v", err)
	}
	if e, _ := o.Pending(a); e.Msg != "a2" || !e.First.Equal(t0.Add(ms(50))) {
		t.Fatalf("replaced entry %+v", e)
	}
	if es := o.Entries(); len(es) != 2 || es[0].Key != a || es[1].Key != b {
		t.Fatalf("entries %+v, want a then b", es)
	}
	if d := o.Deadline(); !d.Equal(t0.Add(ms(110))) {
		t.Fatalf("deadline %v, want +110ms (b's)", d.Sub(t0))
	}
	r, ok := o.Ack(t0.Add(ms(60)), a)
	if !ok || r.Outcome != Acked || r.Msg != "a2" || !r.At.Equal(t0.Add(ms(60))) {
		t.Fatalf("ack: %+v %v", r, ok)
	}
	if _, ok := o.Ack(t0.Add(ms(61)), a); ok {
		t.Fatal("a second ack was taken")
	}
	rs := o.CancelIf(t0.Add(ms(70)), func(e Entry[string]) bool { return e.To == 3 })
	if len(rs) != 1 || rs[0].Outcome != Cancelled || o.Len() != 0 {
		t.Fatalf("cancel: %+v, %d left", rs, o.Len())
	}
	if _, err := NewOutbox[int](Config{Retry: 0, Tries: 1}); !errors.Is(err, ErrConfig) {
		t.Fatalf("zero Retry: %v", err)
	}
	if _, err := NewOutbox[int](Config{Retry: 1, Tries: 0}); !errors.Is(err, ErrConfig) {
		t.Fatalf("zero Tries: %v", err)
	}
}

func TestFilter(t *testing.T) {
	f, _ := NewFilter(2)
	steps := []struct {
		from uint32
		id   uint64
		want Verdict
	}{
		{1, 10, New}, {1, 10, Duplicate}, {1, 12, New}, {1, 11, New}, {1, 11, Duplicate},
		{1, 12 + Window, New}, {1, 12, Duplicate}, {1, 11, TooOld}, {1, 13, New},
		{1, 1000, New}, {1, 999, New}, {1, 13, TooOld},
		{2, 5, New}, {3, 1, Refused}, {2, 5, Duplicate},
		{1, 1000 - Window, New}, {1, 1000 - Window - 1, TooOld},
	}
	for i, s := range steps {
		if got := f.Check(s.from, s.id, 0); got != s.want {
			t.Fatalf("step %d: Check(%d, %d) = %v, want %v", i, s.from, s.id, got, s.want)
		}
	}
	f.Forget(2)
	if got := f.Check(3, 1, 0); got != New {
		t.Fatalf("after Forget(2), a new sender: %v", got)
	}
	if _, err := NewFilter(-1); !errors.Is(err, ErrFilterConfig) {
		t.Fatalf("negative MaxSenders: %v", err)
	}
}

// TestFilterForgedTop is issue 29's ring attack on the filter: one message
// "from 1" numbered 2^63 (anyone can send one without a key) made every
// real message of sender 1 TooOld for good. Now the first real message
// stamped after the forged one starts the window again; a late copy of a
// real message stamped before it stays refused, and so do copies of the
// forged one. A forged stamp of 0 (unknown) undoes nothing of the sender's
// history either way.
func TestFilterForgedTop(t *testing.T) {
	f, _ := NewFilter(0)
	for id := uint64(1); id <= 5; id++ {
		if got := f.Check(1, 100+id, 1000+id); got != New {
			t.Fatalf("real %d: %v", id, got)
		}
	}
	if got := f.Check(1, 1<<63, 1500); got != New {
		t.Fatalf("the forged top: %v", got)
	}
	// Sent before the sender heard the forged stamp: refused (a message
	// lost to the attack, like a refused epoch's first frame).
	if got := f.Check(1, 106, 1006); got != TooOld {
		t.Fatalf("a real message stamped before the forged one: %v", got)
	}
	// Stamped after: the window starts again at it.
	for id := uint64(7); id <= 10; id++ {
		if got := f.Check(1, 100+id, 1500+id); got != New {
			t.Fatalf("real message %d stamped after the forged one: %v", 100+id, got)
		}
	}
	for _, c := range []struct {
		id, stamp uint64
		want      Verdict
	}{
		{110, 1510, Duplicate}, // a copy of the last
		{105, 1005, Duplicate}, // a late copy of one acted on before the attack
		{106, 1006, Duplicate}, // one refused during the attack: lost, never acted on twice
		{111, 1511, New},
		{1 << 63, 1500, New}, // the forged one, again: a forger who goes on...
		{112, 1512, New},     // ...is undone again by the sender's next
		{112, 1512, Duplicate},
	} {
		if got := f.Check(1, c.id, c.stamp); got != c.want {
			t.Errorf("Check(1, %d, %d) = %v, want %v", c.id, c.stamp, got, c.want)
		}
	}
	if got := f.Undone(); got != 2 {
		t.Errorf("undone %d, want 2", got)
	}
	// Without stamps the window is as strict as before.
	g, _ := NewFilter(0)
	g.Check(1, 1<<63, 0)
	if got := g.Check(1, 5, 0); got != TooOld {
		t.Errorf("unstamped: %v", got)
	}
}

// TestOracle runs a sender's Outbox and a receiver's Filter over a channel
// that loses, duplicates and reorders, over many seeds, and checks against
// a plain record of what happened: every message is acted on at most once;
// an Acked message was acted on; a message acted on ends Acked or GaveUp
// (its acks may all be lost), never pending; the outbox's deadline is never
// passed without Tick having something to do, and Tick before it has nothing.
func TestOracle(t *testing.T) {
	seeds := 50
	if sim.Soak() { // -soak or SYNCLAB_SOAK=1
		seeds = 1000
	}
	for seed := range seeds {
		oracleRun(t, uint64(seed))
	}
}

type packet struct {
	at  time.Time
	ack bool
	id  uint64
}

func oracleRun(t *testing.T, seed uint64) {
	rnd := rand.New(rand.NewPCG(seed, 42))
	loss := rnd.Float64() * 0.6
	dup := rnd.Float64() * 0.3
	cfg := Config{Retry: ms(20 + rnd.IntN(50)), Tries: 1 + rnd.IntN(5)}
	o, _ := NewOutbox[uint64](cfg)
	f, _ := NewFilter(0)
	acted := map[uint64]int{}
	ended := map[uint64]Outcome{}
	var net []packet
	now := t0
	transmit := func(p packet) {
		if rnd.Float64() < loss {
			return
		}
		for n := 1 + boolInt(rnd.Float64() < dup); n > 0; n-- {
			p.at = now.Add(ms(1 + rnd.IntN(2*int(cfg.Retry/time.Millisecond))))
			net = append(net, p)
		}
	}
	const msgs = 40
	next := uint64(1)
	for step := 0; step < 4000 && (next <= msgs || o.Len() > 0 || len(net) > 0); step++ {
		if next <= msgs && rnd.IntN(4) == 0 {
			k := Key{To: 2, ID: next}
			if err := o.Send(now, k, next); err != nil {
				t.Fatalf("seed %d: send: %v", seed, err)
			}
			transmit(packet{id: next})
			next++
		}
		now = now.Add(ms(1 + rnd.IntN(10)))
		if d := o.Deadline(); !d.IsZero() && now.Before(d) {
			if re, gu := o.Tick(now); len(re)+len(gu) != 0 {
				t.Fatalf("seed %d: Tick before the deadline did something", seed)
			}
		} else if !d.IsZero() {
			re, gu := o.Tick(now)
			if len(re)+len(gu) == 0 {
				t.Fatalf("seed %d: deadline %v passed and Tick had nothing to do", seed, d)
			}
			for _, e := range re {
				transmit(packet{id: e.Msg})
			}
			for _, r := range gu {
				ended[r.ID] = r.Outcome
			}
		}
		var later []packet
		for _, p := range net {
			if p.at.After(now) {
				later = append(later, p)
				continue
			}
			if p.ack {
				if r, ok := o.Ack(now, Key{To: 2, ID: p.id}); ok {
					ended[r.ID] = r.Outcome
				}
				continue
			}
			// Stamped in the order numbered, the same in every copy.
			if f.Check(1, p.id, 1000+p.id) == New {
				acted[p.id]++
			}
			transmit(packet{ack: true, id: p.id})
		}
		net = later
	}
	for id := uint64(1); id < next; id++ {
		if acted[id] > 1 {
			t.Fatalf("seed %d: message %d acted on %d times", seed, id, acted[id])
		}
		switch ended[id] {
		case Acked:
			if acted[id] != 1 {
				t.Fatalf("seed %d: message %d acked but never acted on", seed, id)
			}
		case GaveUp:
		default:
			t.Fatalf("seed %d: message %d never ended (outbox %d left)", seed, id, o.Len())
		}
	}
	if loss == 0 && dup == 0 {
		for id, out := range ended {
			if out != Acked {
				t.Fatalf("seed %d: lossless channel, message %d %v", seed, id, out)
			}
		}
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
