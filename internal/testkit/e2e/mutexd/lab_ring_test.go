package mutexd

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/ctl"
	"github.com/synclab/synclab/internal/testkit/e2e"
	"github.com/synclab/synclab/internal/testkit/labnet"
)

// TestLabMutexdRingFirstMakerKilled: a token ring just started on 5
// namespace hosts (fresh state, the LAN's 3 s lease); h1's client asks
// first, so h1's daemon makes the ring's first token and grants it, and is
// SIGKILLed within a second, before its client renews (a renewal is a
// check the others would see). Two clients, at h2 and h3, ask at the same
// instant just after. Both are granted (the first within a lease and the
// recovery's few seconds; the second once the first releases), with fences
// above h1's and growing, the second only after the first's release: the
// promises of h1's token are waited out, and the two waiting members'
// searches for the token do not defeat each other. The time from the kill
// to the first grant is logged (scripts/bench.sh mutex measures it).
func TestLabMutexdRingFirstMakerKilled(t *testing.T) {
	labnet.Require(t)
	const n = 5
	lab := labnet.New(t, n)
	l := &labMutexd{t: t, lab: lab, dir: e2e.ShortDir(t), n: n, procs: map[int]*labnet.Proc{}, extra: []string{"--algorithm", "tokenring", "--lease", "3s"}}
	l.key = e2e.KeyFile(t, l.dir)
	for i := 1; i <= n; i++ {
		l.start(i)
	}
	for i := 1; i <= n; i++ {
		l.waitUp(i)
	}
	client := func(i int) *ctl.Client { return ctl.NewClient(l.control(i), "mutexd") }
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var first mutexGrant
	if err := client(1).Post(ctx, "/v1/locks/ring/acquire", map[string]any{"client": "first"}, &first); err != nil {
		t.Fatal(err)
	}
	time.Sleep(rand.N(time.Second))
	if err := l.procs[1].Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	type outcome struct {
		host          int
		g             mutexGrant
		at, releasing time.Time
		err           error
	}
	got := make(chan outcome, 2)
	for _, h := range []int{2, 3} {
		go func() {
			var g mutexGrant
			err := client(h).Post(ctx, "/v1/locks/ring/acquire", map[string]any{"client": "after the kill"}, &g)
			o := outcome{host: h, g: g, at: time.Now(), err: err}
			if err == nil {
				o.releasing = time.Now()
				o.err = client(h).Post(ctx, "/v1/locks/ring/release", map[string]any{"request": g.Request}, nil)
			}
			got <- o
		}()
	}
	a, b := <-got, <-got
	for _, o := range []outcome{a, b} {
		if o.err != nil {
			t.Fatalf("h%d: %v", o.host, o.err)
		}
	}
	if b.at.Before(a.at) {
		a, b = b, a
	}
	t.Logf("h1 (fence %d) killed; h%d granted %v after the kill (fence %d), h%d %v after (fence %d)",
		first.Fence, a.host, a.at.Sub(killed).Round(time.Millisecond), a.g.Fence, b.host, b.at.Sub(killed).Round(time.Millisecond), b.g.Fence)
	if !(first.Fence < a.g.Fence && a.g.Fence < b.g.Fence) {
		t.Errorf("fences %d (h1), %d (h%d), %d (h%d): want strictly increasing in grant order", first.Fence, a.g.Fence, a.host, b.g.Fence, b.host)
	}
	if b.at.Before(a.releasing) {
		t.Errorf("h%d's grant came %v after the kill, before h%d asked to release (%v)", b.host, b.at.Sub(killed), a.host, a.releasing.Sub(killed))
	}
}
