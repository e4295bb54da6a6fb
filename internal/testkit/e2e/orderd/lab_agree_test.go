package orderd

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/testkit/e2e"
)

// Configuration agreement (issue 30, item 1) on three namespace hosts with
// the real binaries (e2e.AgreeLab): one host's configuration is wrong in
// one way. At every poll there are never two sequencers; every daemon that
// sees the disagreement says so at WARN, naming the member and what
// differs; status and metrics show it; the misconfigured host steps back
// and the majority goes on without it.

// TestLabAgreeOrderdOtherAddress: host 3's member list has member 2 at a
// wrong address. Host 3 steps back and sequences nothing; its sends are
// refused; hosts 1 and 2 keep one order with one sequencer.
func TestLabAgreeOrderdOtherAddress(t *testing.T) {
	a := e2e.NewAgreeLab(t, "orderd", 7600)
	full := a.Members(nil)
	wrong := "10.255.255.254:7600"
	a.Start(1, full)
	a.Start(2, full)
	a.Start(3, a.Members(map[int]string{2: wrong}))
	a.Poll(4*time.Second, func(round int) {
		var seqs []int
		named := map[float64]bool{}
		for i := 1; i <= 3; i++ {
			st := a.Status(i)
			if e2e.Field(st, "node", "core", "sequencer", "role") == "sequencer" {
				seqs = append(seqs, i)
			}
			if s := e2e.Num(st, "node", "core", "sequencer", "sequencer"); s != 0 {
				named[s] = true
			}
		}
		if len(seqs) > 1 || len(named) > 1 {
			t.Fatalf("poll %d: sequencers %v, named %v", round, seqs, named)
		}
		if round == 10 {
			if out, err := a.CLI(1, "send", "--order", "total", fmt.Sprintf("m%d", round)); err != nil {
				t.Errorf("send on host 1: %v: %s", err, out)
			}
		}
	})
	out, err := a.CLI(3, "send", "--order", "total", "from-3")
	if err == nil || !strings.Contains(string(out), "stepped back") {
		t.Errorf("send on host 3 (stepped back): %v: %s", err, out)
	}
	h2 := a.Lab.Host(2).Addr().String() + ":7600"
	a.CheckDisagreement("member 3's member list has member 2 at "+wrong+", ours at "+h2, "member 1's member list has member 2 at "+h2+", ours at "+wrong)
}
