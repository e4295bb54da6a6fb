package mutexd

import (
	"context"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/ctl"
	"github.com/synclab/synclab/internal/testkit/browser"
	"github.com/synclab/synclab/internal/testkit/e2e"
	"github.com/synclab/synclab/internal/web"
)

// TestWebLiveGrant: `mutexd web` on host 1 of three real mutexd members
// on loopback. A grant to a client of host 1 shows in its row (Holds)
// within a second of the grant, in headless Chromium, with no script
// error; a request waiting at host 2 shows in its row (Waiting); the
// checker's verdicts over the window are not violations.
func TestWebLiveGrant(t *testing.T) {
	c := newCluster(t, "mutexd", 3)
	for i := 1; i <= 3; i++ {
		c.Start(i, "--lease", "5s")
	}
	for i := 1; i <= 3; i++ {
		c.Eventually("host up", 5*time.Second, func() bool { _, err := c.Status(i); return err == nil })
	}
	w := c.StartWeb(1, "--window", "5s")
	var st web.State
	c.Eventually("the page has the table", 20*time.Second, func() bool {
		var err error
		st, err = w.State()
		return err == nil && st.Table != nil && st.Cluster.Answered == 3 && st.Trace.Diagram > 0
	})
	w.Refuses("/api/state", "/v1/locks/db/acquire")
	t.Logf("headers %q, row 1 %q", st.Table.Headers, st.Table.Rows[0].Cells)

	b := browser.Launch(t)
	p := b.Open(t, w.Base+"/", 1280, 900)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	holds := e2e.WebCell(1, "Holds")
	if _, err := p.WaitFor(ctx, holds+`.indexOf("0") === 0`, 20*time.Second); err != nil {
		t.Fatal(err)
	}
	cl := map[int]*ctl.Client{1: ctl.NewClient(c.Control(1), "mutexd"), 2: ctl.NewClient(c.Control(2), "mutexd")}
	defer cl[1].Close()
	defer cl[2].Close()
	var g mutexGrant
	if err := cl[1].Post(ctx, "/v1/locks/db/acquire", map[string]any{"client": "web test"}, &g); err != nil {
		t.Fatal(err)
	}
	granted := time.Now()
	shown, err := p.WaitFor(ctx, holds+`.indexOf("1") === 0`, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	lag := shown.Sub(granted)
	t.Logf("the page showed the grant (fence %d) %v after it", g.Fence, lag.Round(time.Millisecond))
	if lag > time.Second {
		t.Errorf("the page showed the grant %v after it, want within a second", lag)
	}
	// A request waiting at host 2 shows in its row.
	wctx, wcancel := context.WithCancel(ctx)
	waited := make(chan error, 1)
	go func() { waited <- cl[2].Post(wctx, "/v1/locks/db/acquire", map[string]any{"timeout_ms": 4000}, nil) }()
	if _, err := p.WaitFor(ctx, e2e.WebCell(2, "Waiting")+` === "1"`, 5*time.Second); err != nil {
		t.Errorf("the waiting request at host 2: %v", err)
	}
	wcancel()
	<-waited
	c.Eventually("the verdicts over the grant", 10*time.Second, func() bool {
		st, err = w.State()
		for _, r := range st.Verdicts.Results {
			if r.Property == "exclusive" && r.Checked > 0 {
				return true
			}
		}
		return false
	})
	for _, r := range st.Verdicts.Results {
		if r.Verdict == "violated" {
			t.Errorf("violated over a healthy run: %+v", r)
		}
	}
	t.Logf("verdicts: %+v", st.Verdicts.Results)
	p.CheckNoScriptError(t)
	w.Stop()
	if left := c.WebTraceFiles(1); len(left) != 0 {
		t.Errorf("web left its window's files: %v", left)
	}
}
