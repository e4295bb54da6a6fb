package electd

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/synclab/synclab/pkg/elect/bully"
)

// TestElectdReservedClaimKilled: three real members, 3 leads; 2 holds on
// disk the term it would claim (bully.Config.Reserve) and claims it on
// 3's death without a write of its own first. 3 is SIGKILLed, then 2 at
// an instant swept from 3's death to past 2's claim (before its episode
// ends, at its claim, between its COORDINATOR and the write after it,
// after it), then restarted alone, then 3. Each round: 2's state file
// reads back and covers every term 1 saw 2 lead (its term or its
// reservation), and 2's next claim is above all of them and above the
// reservation: no term claimed twice across SIGKILL and restart, terms
// only up. At least one claim left on its reservation (claims_reserved).
func TestElectdReservedClaimKilled(t *testing.T) {
	c := newCluster(t, "electd", 3)
	seen := filepath.Join(c.Dir, "seen1")
	c.Extra[1] = []string{"--on-change", `echo "$ELECTD_EVENT $ELECTD_LEADER $ELECTD_TERM_RAW" >> ` + seen}
	for i := 1; i <= 3; i++ {
		c.Start(i)
	}
	kill := func(i int) {
		c.Procs[i].Process.Signal(syscall.SIGKILL)
		c.Procs[i].Wait()
	}
	disk := func() (term, reserved uint64) {
		b, err := os.ReadFile(filepath.Join(c.Dir, "h2.state", "core.state"))
		if err != nil {
			t.Fatal(err)
		}
		term, reserved, err = bully.RestoreReserved(b)
		if err != nil {
			t.Fatalf("host 2's state after SIGKILL: %v", err)
		}
		return term, reserved
	}
	// led2 is the highest term host 1 saw 2 lead.
	led2 := func() uint64 {
		b, _ := os.ReadFile(seen)
		var top uint64
		for _, line := range strings.Split(string(b), "\n") {
			var ev string
			var leader uint32
			var term uint64
			if _, err := fmt.Sscanf(line, "%s %d %d", &ev, &leader, &term); err == nil && leader == 2 {
				top = max(top, term)
			}
		}
		return top
	}
	agree := func(want uint32, hosts ...int) uint64 {
		var term uint64
		c.Eventually(fmt.Sprintf("hosts %v agree on %d", hosts, want), electWithin, func() bool {
			var l uint32
			l, term = c.agreed(hosts...)
			return l == want
		})
		return term
	}
	agree(3, 1, 2, 3)
	reservedClaims := 0.0
	for _, after := range []time.Duration{0, 60, 120, 140, 145, 150, 153, 156, 159, 162, 166, 170, 180, 200, 300} {
		after *= time.Millisecond
		kill(3)
		time.Sleep(after)
		if after >= 300*time.Millisecond {
			// Late enough for 2 to have claimed: its status says how.
			agree(2, 1, 2)
			st, err := c.Status(2)
			if err == nil {
				d, _ := st["node"].(map[string]any)["core"].(map[string]any)["detail"].(map[string]any)
				reservedClaims, _ = d["claims_reserved"].(float64)
			}
		}
		kill(2)
		term, reserved := disk()
		sent := led2()
		if sent > max(term, reserved) {
			t.Fatalf("killed %v after the leader: host 1 saw 2 lead term %#x, 2's disk holds %#x (reserved %#x)", after, sent, term, reserved)
		}
		c.Start(2)
		claimed := agree(2, 1, 2)
		if claimed <= max(sent, reserved) || bully.TermOwner(claimed) != 2 {
			t.Fatalf("killed %v after the leader: 2 restarted from %#x (reserved %#x) claims %#x; it led %#x before", after, term, reserved, claimed, sent)
		}
		t.Logf("killed %v after the leader: disk %#x reserved %#x, led before %#x, claims %#x after the restart", after, term, reserved, sent, claimed)
		c.Start(3)
		agree(3, 1, 2, 3)
	}
	if reservedClaims == 0 {
		t.Errorf("no claim left on its reservation (claims_reserved 0): the test did not test it")
	}
}
