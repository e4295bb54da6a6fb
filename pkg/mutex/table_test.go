package mutex_test

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/synclab/synclab/pkg/mutex"
)

var t0 = time.Unix(1000, 0)

func newTable(t *testing.T, shared bool) *mutex.Table {
	t.Helper()
	tb, err := mutex.NewTable(mutex.Limits{Self: 1, Members: 3, MinLease: 100 * time.Millisecond, MaxLease: 3 * time.Second,
		MaxQueue: 8, MaxLocks: 2, Shared: shared})
	if err != nil {
		t.Fatal(err)
	}
	return tb
}

func TestTableRefusals(t *testing.T) {
	tb := newTable(t, false)
	for _, tc := range []struct {
		r    mutex.Request
		want error
	}{
		{mutex.Request{Lock: ""}, mutex.ErrBadLockName},
		{mutex.Request{Lock: "a b"}, mutex.ErrBadLockName},
		{mutex.Request{Lock: "a", Lease: time.Millisecond}, mutex.ErrBadLease},
		{mutex.Request{Lock: "a", Lease: time.Hour}, mutex.ErrBadLease},
		{mutex.Request{Lock: "a", Mode: mutex.Shared}, mutex.ErrSharedUnsupported},
	} {
		if _, err := tb.Enqueue(t0, 1, tc.r); !errors.Is(err, tc.want) {
			t.Errorf("%+v: %v, want %v", tc.r, err, tc.want)
		}
	}
	tb.Enqueue(t0, 1, mutex.Request{Lock: "a"})
	tb.Enqueue(t0, 1, mutex.Request{Lock: "b"})
	if _, err := tb.Enqueue(t0, 1, mutex.Request{Lock: "c"}); !errors.Is(err, mutex.ErrTooManyLocks) {
		t.Errorf("third lock with MaxLocks 2: %v", err)
	}
	// Member 2's share is MaxQueue/2 over 2 others: 2.
	tb.Enqueue(t0, 2, mutex.Request{Lock: "a"})
	tb.Enqueue(t0, 2, mutex.Request{Lock: "a"})
	if _, err := tb.Enqueue(t0, 2, mutex.Request{Lock: "a"}); !errors.Is(err, mutex.ErrQueueFull) {
		t.Errorf("member 2 over its share: %v", err)
	}
	for range 4 {
		tb.Enqueue(t0, 1, mutex.Request{Lock: "a"})
	}
	if _, err := tb.Enqueue(t0, 1, mutex.Request{Lock: "a"}); !errors.Is(err, mutex.ErrQueueFull) {
		t.Errorf("ninth request with MaxQueue 8: %v", err)
	}
	if err := tb.Renew(t0, 99, 0); !errors.Is(err, mutex.ErrUnknownRequest) {
		t.Errorf("renew unknown: %v", err)
	}
	if err := tb.Renew(t0, 1, 0); !errors.Is(err, mutex.ErrNotHolder) {
		t.Errorf("renew waiting: %v", err)
	}
}

func TestTableLifecycle(t *testing.T) {
	tb := newTable(t, false)
	a, _ := tb.Enqueue(t0, 1, mutex.Request{Lock: "db", Client: "x"})
	b, _ := tb.Enqueue(t0, 1, mutex.Request{Lock: "db", Lease: time.Second})
	if g := tb.Grantable("db"); !slices.Equal(g, []mutex.RequestID{a}) {
		t.Fatalf("grantable %v, want the head only", g)
	}
	if _, err := tb.Grant(t0, b, 5, 1); err == nil {
		t.Fatal("granted a request behind the head")
	}
	g, err := tb.Grant(t0, a, 5, 1)
	if err != nil || g.Fence != 5 || g.Lease != 3*time.Second || !g.Expires.Equal(t0.Add(3*time.Second)) {
		t.Fatalf("grant %+v %v", g, err)
	}
	if tb.Grantable("db") != nil {
		t.Fatal("a second exclusive holder is grantable")
	}
	if err := tb.Renew(t0.Add(time.Second), a, 2*time.Second); err != nil || !tb.Renewing("db") {
		t.Fatalf("renew: %v", err)
	}
	tb.ConfirmRenewals(t0.Add(time.Second), "db")
	if exp, _ := tb.Expires(a); !exp.Equal(t0.Add(3 * time.Second)) {
		t.Fatalf("renewed to %v", exp.Sub(t0))
	}
	if d := tb.Deadline(); !d.Equal(t0.Add(3 * time.Second)) {
		t.Fatalf("deadline %v", d.Sub(t0))
	}
	if lost := tb.Expire(t0.Add(2999 * time.Millisecond)); lost != nil {
		t.Fatalf("expired early: %v", lost)
	}
	if lost := tb.Expire(t0.Add(3 * time.Second)); !slices.Equal(lost, []string{"db"}) {
		t.Fatalf("expire: %v", lost)
	}
	g2, _ := tb.Grant(t0.Add(3*time.Second), b, 6, 1)
	st, err := tb.Release(t0.Add(3500*time.Millisecond), b)
	if err != nil || !st.Granted || st.Fence != 6 {
		t.Fatalf("release %+v %v", st, err)
	}
	want := []mutex.Outcome{
		mutex.Granted{ID: a, Lock: "db", Fence: 5, Lease: 3 * time.Second, Expires: t0.Add(3 * time.Second), Epoch: 1},
		mutex.Renewed{ID: a, Lock: "db", Fence: 5, Lease: 2 * time.Second, Expires: t0.Add(3 * time.Second)},
		mutex.Lost{ID: a, Lock: "db", Fence: 5, Reason: mutex.Expired},
		g2,
		mutex.Released{ID: b, Lock: "db", Fence: 6},
	}
	if got := tb.Outcomes(); !slices.Equal(got, want) {
		t.Fatalf("outcomes\n got %+v\nwant %+v", got, want)
	}
	if len(tb.Locks()) != 0 || tb.WaitingTotal() != 0 {
		t.Fatalf("table not empty: %v", tb.Locks())
	}
	c := tb.Counters()
	if c["requests"] != 2 || c["grants"] != 2 || c["renewals"] != 1 || c["lost_expired"] != 1 || c["released"] != 1 {
		t.Fatalf("counters %v", c)
	}
}

func TestTableReleaseAfterExpiry(t *testing.T) {
	tb := newTable(t, false)
	a, _ := tb.Enqueue(t0, 1, mutex.Request{Lock: "db", Lease: time.Second})
	tb.Grant(t0, a, 1, 1)
	if _, err := tb.Release(t0.Add(time.Second), a); !errors.Is(err, mutex.ErrExpired) {
		t.Fatalf("release after the lease: %v", err)
	}
	if out := tb.Outcomes(); len(out) != 2 || out[1] != (mutex.Lost{ID: a, Lock: "db", Fence: 1, Reason: mutex.Expired}) {
		t.Fatalf("outcomes %+v", out)
	}
}

// TestTableSharedOracle drives a shared/exclusive table with random
// requests, grants of whatever is grantable, releases and expiries, and
// checks what no schedule may break: never a writer beside anyone, every
// grant in queue order per mode rule, and no writer overtaken by a reader
// queued after it.
func TestTableSharedOracle(t *testing.T) {
	for seed := range 100 {
		rnd := rand.New(rand.NewPCG(uint64(seed), 7))
		tb, _ := mutex.NewTable(mutex.Limits{Self: 1, MinLease: time.Millisecond, MaxLease: time.Second, Shared: true})
		now := t0
		queuedAt := map[mutex.RequestID]int{}
		modeOf := map[mutex.RequestID]mutex.Mode{}
		n := 0
		for range 300 {
			now = now.Add(time.Duration(rnd.IntN(50)) * time.Millisecond)
			switch rnd.IntN(4) {
			case 0, 1:
				m := mutex.Mode(rnd.IntN(2))
				id, err := tb.Enqueue(now, 1, mutex.Request{Lock: "x", Mode: m, Lease: time.Duration(1+rnd.IntN(500)) * time.Millisecond})
				if err != nil {
					t.Fatal(err)
				}
				n++
				queuedAt[id], modeOf[id] = n, m
			case 2:
				for _, id := range tb.Grantable("x") {
					// Every waiting request queued before id is also granted
					// now or already, or id is a reader and it a reader.
					if _, err := tb.Grant(now, id, uint64(n), 1); err != nil {
						t.Fatalf("seed %d: grantable %d refused: %v", seed, id, err)
					}
				}
			case 3:
				if hs := tb.Holders("x"); len(hs) > 0 {
					tb.Release(now, hs[rnd.IntN(len(hs))])
				}
			}
			tb.Expire(now)
			hs := tb.Holders("x")
			writers := 0
			for _, h := range hs {
				if modeOf[h] == mutex.Exclusive {
					writers++
				}
			}
			if writers > 1 || writers == 1 && len(hs) > 1 {
				t.Fatalf("seed %d: holders %v with %d writers", seed, hs, writers)
			}
			var ls mutex.LockStatus
			ls.Name = "x"
			tb.Fill(now, &ls)
			for _, h := range ls.Holders {
				for _, w := range ls.Queue {
					if modeOf[w.ID] == mutex.Exclusive && queuedAt[w.ID] < queuedAt[h.ID] && h.WaitedMS >= 0 && modeOf[h.ID] == mutex.Shared {
						// A reader holding while an older writer waits is
						// allowed only if the reader was granted together with
						// readers ahead of the writer: never, by the rule.
						t.Fatalf("seed %d: reader %d granted over older writer %d", seed, h.ID, w.ID)
					}
				}
			}
		}
	}
}

// TestConfirmAfterExpiry: a renewal confirmed once the lease has ended,
// before anything expired it, loses the lease (a frame stepped before a
// late Tick must not bring a lease back), for one request and for a lock.
func TestConfirmAfterExpiry(t *testing.T) {
	for _, whole := range []bool{false, true} {
		tb := newTable(t, false)
		a, _ := tb.Enqueue(t0, 1, mutex.Request{Lock: "db"})
		if _, err := tb.Grant(t0, a, 5, 1); err != nil {
			t.Fatal(err)
		}
		if err := tb.Renew(t0.Add(2800*time.Millisecond), a, 0); err != nil {
			t.Fatal(err)
		}
		late := t0.Add(3300 * time.Millisecond)
		if whole {
			tb.ConfirmRenewals(late, "db")
		} else if !tb.ConfirmRenewal(late, late.Add(-2*time.Second), a) {
			t.Fatal("no renewal pending")
		}
		if exp, held := tb.Expires(a); held {
			t.Errorf("whole lock %v: a lease that ended at 3 s renewed at 3.3 s until %v", whole, exp.Sub(t0))
		}
	}
}
