package common

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/testkit/e2e"
)

// A member configured right that hears the wrong one first, at the start,
// does not step back: it waits for the others (StartGrace, 500 ms).
// Member 3 has other priorities and is up first; member 1 starts, then
// member 2 50 ms later. Member 1 used to hear member 3's answer before
// member 2 was up, step back at once at WARN ("this member's
// configuration is in the minority ...") and agree again a moment later:
// a false alarm on a correct host in most runs of a one-host mismatch
// (and, in electd, a start-up with two leaders while the higher one stood
// back). A correct member may still step back, rightly, when its partner
// is not heard within StartGrace (the partner may be the wrong one): on
// a loaded machine member 2 may take that long to start, so only a step
// back sooner than StartGrace after a member's start fails the test.
func TestStartTieWaitsForTheOthers(t *testing.T) {
	c := newCluster(t, "electd", 3)
	c.Start(3, "--priorities", "1=5")
	c.Eventually("member 3 up", 10*time.Second, func() bool { _, err := c.Status(3); return err == nil })
	c.Start(1)
	time.Sleep(50 * time.Millisecond)
	c.Start(2)
	standing := func(i int) string {
		st, err := c.Status(i)
		if err != nil {
			return ""
		}
		s, _ := e2e.Field(st, "node", "agreement", "standing").(string)
		return s
	}
	c.Eventually("members 1 and 2 agreed, member 3 stepped back", 10*time.Second, func() bool {
		return standing(1) == "agreed" && standing(2) == "agreed" && standing(3) == "stepped_back"
	})
	for _, i := range []int{1, 2} {
		b, _ := os.ReadFile(c.LogPath(i))
		log := string(b)
		started, back := logTime(t, log, "msg=started"), logTime(t, log, `msg="stepping back`)
		if !back.IsZero() && back.Sub(started) < 500*time.Millisecond {
			t.Errorf("host %d, configured right, stepped back %v after its start, before StartGrace:\n%s", i, back.Sub(started), e2e.TailString(log, 2000))
		}
		if !strings.Contains(log, "member 3's priorities differs") {
			t.Errorf("host %d did not say what member 3 has wrong", i)
		}
	}
}

// logTime is the time of the first line of log holding what (zero: none).
func logTime(t *testing.T, log, what string) time.Time {
	t.Helper()
	for _, line := range strings.Split(log, "\n") {
		if !strings.Contains(line, what) || !strings.HasPrefix(line, "time=") {
			continue
		}
		ts, _, _ := strings.Cut(strings.TrimPrefix(line, "time="), " ")
		at, err := time.Parse(time.RFC3339Nano, ts)
		if err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		return at
	}
	return time.Time{}
}
