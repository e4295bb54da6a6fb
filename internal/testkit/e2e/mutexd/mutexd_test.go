package mutexd

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/ctl"
	"github.com/synclab/synclab/internal/testkit/e2e"
)

type mutexGrant struct {
	Request     string `json:"request"`
	Lock        string `json:"lock"`
	Fence       uint64 `json:"fence"`
	LeaseMS     int64  `json:"lease_ms"`
	LeaseLeftMS int64  `json:"lease_left_ms"`
	Generation  uint64 `json:"generation"`
}

type mutexLocks struct {
	Incarnation uint32 `json:"incarnation"`
	Locks       []struct {
		Name   string `json:"name"`
		Holder *struct {
			ID     uint64 `json:"id"`
			Client string `json:"client"`
			Fence  uint64 `json:"fence"`
		} `json:"holder"`
		Queue []struct {
			ID uint64 `json:"id"`
		} `json:"queue"`
	} `json:"locks"`
}

func ctlStatus(err error) int {
	var ce *ctl.Error
	if errors.As(err, &ce) {
		return ce.Status
	}
	return 0
}

// TestMutexdControlAPI drives the lock calls of three real mutexd daemons
// on loopback: grants move between members with growing fences, a second
// acquirer waits and times out with 504, renew and release answer 200,
// 404 and 410 as documented, bad input is 400, and a request whose client
// went away is withdrawn.
func TestMutexdControlAPI(t *testing.T) {
	c := newCluster(t, "mutexd", 3)
	for i := 1; i <= 3; i++ {
		c.Start(i, "--lease", "1s")
	}
	for i := 1; i <= 3; i++ {
		c.Eventually(fmt.Sprintf("host %d up", i), 5*time.Second, func() bool { _, err := c.Status(i); return err == nil })
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl := map[int]*ctl.Client{}
	for i := 1; i <= 3; i++ {
		cl[i] = ctl.NewClient(c.Control(i), "mutexd")
		defer cl[i].Close()
	}

	var g1 mutexGrant
	if err := cl[1].Post(ctx, "/v1/locks/db/acquire", map[string]any{"client": "test one"}, &g1); err != nil {
		t.Fatal(err)
	}
	if g1.Lock != "db" || g1.Fence == 0 || g1.LeaseMS != 1000 || g1.LeaseLeftMS <= 0 || g1.LeaseLeftMS > 1000 || g1.Generation == 0 {
		t.Fatalf("grant %+v", g1)
	}
	var locks mutexLocks
	if err := cl[1].Get(ctx, "/v1/locks", &locks); err != nil {
		t.Fatal(err)
	}
	if len(locks.Locks) != 1 || locks.Locks[0].Holder == nil || locks.Locks[0].Holder.Client != "test one" ||
		fmt.Sprintf("%d-%d", locks.Incarnation, locks.Locks[0].Holder.ID) != g1.Request {
		t.Errorf("locks %+v, grant %+v", locks, g1)
	}

	// The algorithm and its promises, the same on every member.
	var alg struct {
		Name       string `json:"name"`
		Guarantees struct {
			Survives []string `json:"survives"`
		} `json:"guarantees"`
	}
	if err := cl[3].Get(ctx, "/v1/algorithm", &alg); err != nil || alg.Name != "tokenring" || !slices.Contains(alg.Guarantees.Survives, "crash") {
		t.Errorf("algorithm %+v, %v: want the token ring, surviving crashes", alg, err)
	}

	// The ring offers no shared mode: a shared request is refused, clearly.
	err := cl[2].Post(ctx, "/v1/locks/db/acquire", map[string]any{"mode": "shared", "timeout_ms": 300}, nil)
	if ctlStatus(err) != http.StatusBadRequest || !strings.Contains(err.Error(), "shared mode is not offered") {
		t.Errorf("shared acquire on the ring: %v, want 400 saying shared mode is not offered", err)
	}

	// The ring keeps no vector clocks: a vector is refused, clearly.
	err = cl[2].Post(ctx, "/v1/locks/other/acquire", map[string]any{"after": "1:1.1", "timeout_ms": 300}, nil)
	if ctlStatus(err) != http.StatusBadRequest || !strings.Contains(err.Error(), "does not order requests by vector timestamps") {
		t.Errorf("acquire after a vector on the ring: %v, want 400 saying it keeps no vectors", err)
	}
	if err := cl[2].Get(ctx, "/v1/vector", nil); ctlStatus(err) != http.StatusBadRequest {
		t.Errorf("vector on the ring: %v, want 400", err)
	}

	// Held at host 1: host 2 waits, and gives up after its timeout.
	start := time.Now()
	err = cl[2].Post(ctx, "/v1/locks/db/acquire", map[string]any{"timeout_ms": 300}, nil)
	if ctlStatus(err) != http.StatusGatewayTimeout || time.Since(start) < 300*time.Millisecond {
		t.Errorf("acquire of a held lock with a 300 ms timeout: %v after %v", err, time.Since(start))
	}

	// Renewal, then release; a second release is 404.
	var rn struct {
		LeaseLeftMS int64  `json:"lease_left_ms"`
		Fence       uint64 `json:"fence"`
	}
	if err := cl[1].Post(ctx, "/v1/locks/db/renew", map[string]any{"request": g1.Request, "lease_ms": 800}, &rn); err != nil ||
		rn.Fence != g1.Fence || rn.LeaseLeftMS <= 0 || rn.LeaseLeftMS > 800 {
		t.Errorf("renew: %v %+v", err, rn)
	}
	if err := cl[1].Post(ctx, "/v1/locks/db/release", map[string]any{"request": g1.Request}, nil); err != nil {
		t.Errorf("release: %v", err)
	}
	if err := cl[1].Post(ctx, "/v1/locks/db/release", map[string]any{"request": g1.Request}, nil); ctlStatus(err) != http.StatusNotFound {
		t.Errorf("second release: %v, want 404", err)
	}
	if err := cl[1].Post(ctx, "/v1/locks/db/renew", map[string]any{"request": g1.Request}, nil); ctlStatus(err) != http.StatusGone {
		t.Errorf("renewal after release: %v, want 410", err)
	}

	// The token moves: host 2 and then host 3 get it, fences growing.
	var g2, g3 mutexGrant
	if err := cl[2].Post(ctx, "/v1/locks/db/acquire", nil, &g2); err != nil || g2.Fence <= g1.Fence {
		t.Fatalf("host 2: %v %+v after fence %d", err, g2, g1.Fence)
	}
	cl[2].Post(ctx, "/v1/locks/db/release", map[string]any{"request": g2.Request}, nil)
	if err := cl[3].Post(ctx, "/v1/locks/db/acquire", nil, &g3); err != nil || g3.Fence <= g2.Fence {
		t.Fatalf("host 3: %v %+v after fence %d", err, g3, g2.Fence)
	}

	// A lease that is not renewed runs out: the release is 410.
	time.Sleep(1100 * time.Millisecond)
	if err := cl[3].Post(ctx, "/v1/locks/db/release", map[string]any{"request": g3.Request}, nil); ctlStatus(err) != http.StatusGone && ctlStatus(err) != http.StatusNotFound {
		t.Errorf("release after the lease: %v, want 410 (or 404 once the expiry was noticed)", err)
	}

	// A waiting client that goes away is withdrawn.
	var g4 mutexGrant
	if err := cl[1].Post(ctx, "/v1/locks/db/acquire", nil, &g4); err != nil {
		t.Fatal(err)
	}
	short, stop := context.WithTimeout(ctx, 200*time.Millisecond)
	cl[2].Post(short, "/v1/locks/db/acquire", nil, nil)
	stop()
	c.Eventually("host 2 withdraws the request of a client that left", 2*time.Second, func() bool {
		var l mutexLocks
		return cl[2].Get(ctx, "/v1/locks", &l) == nil && len(l.Locks) == 1 && len(l.Locks[0].Queue) == 0
	})
	cl[1].Post(ctx, "/v1/locks/db/release", map[string]any{"request": g4.Request}, nil)

	// Bad input names the problem.
	for _, b := range []struct {
		path string
		body any
		want string
	}{
		{"/v1/locks/a%20b/acquire", nil, "lock name"},
		{"/v1/locks/db/acquire", map[string]any{"lease_ms": 50}, "lease_ms 50"},
		{"/v1/locks/db/acquire", map[string]any{"lease_ms": 5000}, "lease_ms 5000"},
		{"/v1/locks/db/acquire", map[string]any{"lease": 500}, `unknown field "lease"`},
		{"/v1/locks/db/acquire", map[string]any{"timeout_ms": -1}, "timeout_ms"},
		{"/v1/locks/db/renew", map[string]any{"request": "x"}, "INCARNATION-ID"},
		{"/v1/locks/db/release", nil, "empty"},
	} {
		err := cl[1].Post(ctx, b.path, b.body, nil)
		if ctlStatus(err) != http.StatusBadRequest || !strings.Contains(err.Error(), b.want) {
			t.Errorf("POST %s %v: %v, want 400 naming %q", b.path, b.body, err, b.want)
		}
	}
	if err := cl[1].Post(ctx, "/v1/locks/db/renew", map[string]any{"request": "1-1"}, nil); ctlStatus(err) != http.StatusGone {
		t.Errorf("a handle of another run: %v, want 410", err)
	}
	st, err := c.Status(1)
	if err != nil {
		t.Fatal(err)
	}
	api, _ := st["node"].(map[string]any)["core"].(map[string]any)["api"].(map[string]any)
	if api["acquire/bad_request"].(float64) < 5 {
		t.Errorf("bad requests not counted: %v", api)
	}

	out, err := exec.Command(filepath.Join(e2e.BinDir(), "mutexd"), "status", "--control", c.Control(3)).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "Lock ") || !strings.Contains(string(out), "db ") {
		t.Errorf("status (%v):\n%s", err, out)
	}
}
