package daemon

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/ctl"
	"github.com/synclab/synclab/internal/node"
	"github.com/synclab/synclab/internal/transport"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/wire"
)

// clusterLab is three daemons on an in-memory network with configuration
// agreement on; algo names each one's algorithm (a different one is a
// misconfigured member).
func clusterLab(t *testing.T, algo ...string) []*Daemon {
	t.Helper()
	net := transport.NewMemNetwork()
	dir := shortDir(t)
	var ds []*Daemon
	for i, a := range algo {
		id := uint32(i + 1)
		cfg := testConfig(t, net, dir, id, len(algo))
		cfg.Version, cfg.Commit = "9.9.9-test", "abc123"
		cfg.Agreement = &node.Agreement{Algorithm: a}
		cfg.ClusterFacts = func(c core.Core) (string, []wire.StatusFact) {
			return "member\x1b[1m of " + strings.Repeat("a very long role ", 10), []wire.StatusFact{
				{Tag: wire.FactOffset, Value: uint64(-int64(id)) /* two's complement */}, {Tag: wire.FactLeader, Value: 3}, {Tag: wire.FactLeader, Value: 4}}
		}
		d, err := New(cfg, livenessFactory(id, len(algo)))
		if err != nil {
			t.Fatal(err)
		}
		ds = append(ds, d)
	}
	return ds
}

func clusterStatus(t *testing.T, path string, timeout string) ClusterStatus {
	t.Helper()
	var st ClusterStatus
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	if err := ctl.NewClient(path, "testd").Get(ctx, "/v1/cluster?timeout="+timeout, &st); err != nil {
		t.Fatal(err)
	}
	return st
}

// TestClusterStatusAllAnswer: every member answers, the call returns as
// soon as the last answer is in (long before its deadline), and each row
// says what its member said: build, uptime, standing, the binary's facts
// (sorted, one per tag, strings clipped and cleaned), the clocks' offset.
func TestClusterStatusAllAnswer(t *testing.T) {
	ds := clusterLab(t, "a", "a", "a")
	for _, d := range ds {
		start(t, d)
	}
	path := ds[1].Config().ControlPath
	eventually(t, "agreement", func() bool {
		a := status(t, path).Node.Agreement
		return a != nil && len(a.Agree) == 3
	})
	// The longest deadline there is: a timer never fires early, so a
	// call that waited for it took at least that long, and one that
	// returned on the last answer did not, however loaded the host.
	began := time.Now()
	st := clusterStatus(t, path, MaxClusterTimeout.String())
	if took := time.Since(began); took >= MaxClusterTimeout {
		t.Fatalf("took %v: waited for the deadline although every member answered", took)
	}
	if !st.Complete || st.Answered != 3 || st.Members != 3 || st.From != 2 || len(st.Rows) != 3 {
		t.Fatalf("status %+v", st)
	}
	for _, r := range st.Rows {
		if !r.Reachable || !r.Agrees || r.Version != "9.9.9-test" || r.Commit != "abc123" || r.Standing != "agreed" || r.Algorithm != "a" || r.Incarnation == 0 {
			t.Errorf("row %+v", r)
		}
		if len(r.Role) > wire.MaxStatusString || strings.Contains(r.Role, "\x1b") || r.Facts["leader"] != "3" || string(r.Facts["offset_ns"]) != fmt.Sprint(-int(r.ID)) {
			t.Errorf("member %d's role %q, facts %v", r.ID, r.Role, r.Facts)
		}
		if r.Self != (r.ID == 2) || (r.Config == "self") != r.Self || r.Clock == nil || !r.Clock.Wall {
			t.Errorf("row %+v", r)
		}
		if r.Self {
			continue
		}
		// The sim clocks are id ms ahead: member 1 is 1 ms behind member
		// 2, member 3 1 ms ahead, within the measurement's bound.
		want := (int64(r.ID) - 2) * int64(time.Millisecond)
		if r.Clock.OffsetNs == nil || abs(*r.Clock.OffsetNs-want) > r.Clock.OffsetBoundNs+int64(100*time.Microsecond) || r.RTTNs <= 0 || r.HeardAgoNs == nil {
			t.Errorf("member %d: clock %+v, want offset %v; rtt %v", r.ID, r.Clock, want, r.RTTNs)
		}
	}
}

func abs(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

// TestClusterStatusDownAndDiffering: member 3 runs another algorithm (it
// answers, marked as differing, naming the difference), member 2 was
// stopped (a row all the same, unreachable, with when it was last heard).
func TestClusterStatusDownAndDiffering(t *testing.T) {
	ds := clusterLab(t, "a", "a", "b")
	ctx2, stop2 := context.WithCancel(context.Background())
	done2 := make(chan error, 1)
	go func() { done2 <- ds[1].Run(ctx2) }()
	start(t, ds[0])
	start(t, ds[2])
	path := ds[0].Config().ControlPath
	eventually(t, "member 3 differs", func() bool {
		a := status(t, path).Node.Agreement
		return a != nil && len(a.Differ) == 1 && len(a.Agree) == 2
	})
	stop2()
	if err := <-done2; err != nil {
		t.Fatal(err)
	}
	st := clusterStatus(t, path, "300ms")
	if st.Complete || st.Answered != 2 || len(st.Rows) != 3 {
		t.Fatalf("status %+v", st)
	}
	r2, r3 := st.Rows[1], st.Rows[2]
	if r2.Reachable || r2.HeardAgoNs == nil || !strings.Contains(r2.Why, "no answer within 300ms") || !strings.Contains(r2.Why, "ago") || r2.Version != "" {
		t.Errorf("member 2's row %+v", r2)
	}
	if !r3.Reachable || r3.Agrees || r3.Config != "differs" || r3.Algorithm != "b" || r3.Version != "9.9.9-test" ||
		len(r3.Differs) == 0 || !strings.Contains(r3.Differs[0], "member 3's algorithm differs (a here, b there)") {
		t.Errorf("member 3's row %+v", r3)
	}
	if r3.Fingerprint == st.Rows[0].Fingerprint || r3.Fingerprint == "" {
		t.Errorf("fingerprints %q %q", r3.Fingerprint, st.Rows[0].Fingerprint)
	}
}

// TestClusterStatusRefusals: a bad deadline is a 400; a daemon outside any
// cluster has no lab to show (409).
func TestClusterStatusRefusals(t *testing.T) {
	ds := clusterLab(t, "a", "a")
	start(t, ds[0])
	c := ctl.NewClient(ds[0].Config().ControlPath, "testd")
	var e *ctl.Error
	for _, q := range []string{"1h", "1ms", "soon"} {
		if err := c.Get(context.Background(), "/v1/cluster?timeout="+q, nil); !errors.As(err, &e) || e.Status != http.StatusBadRequest {
			t.Errorf("timeout %s: %v", q, err)
		}
	}
	cfg := testConfig(t, nil, shortDir(t), 0, 0)
	cfg.Members, cfg.Datagrams = nil, true
	d, err := New(cfg, func(core.Env) (core.Core, error) { return &counter{}, nil })
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.ClusterStatus(context.Background(), time.Second); !errors.As(err, &e) || e.Code != "no_cluster" {
		t.Errorf("standalone: %v", err)
	}
}
