package orderd

import (
	"bufio"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/pkg/order"
)

// orderLog is host i's deliveries (`orderd log --json`), nil if it does
// not answer.
func (c *cluster) orderLog(i int) []order.Delivery {
	out, err := c.orderd(i, "log", "--json")
	if err != nil {
		return nil
	}
	var ds []order.Delivery
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var d order.Delivery
		if json.Unmarshal(sc.Bytes(), &d) == nil {
			ds = append(ds, d)
		}
	}
	return ds
}

// TestLabOrderdSenderDies: a sender's FIFO and causal messages reach one
// member only (its links to the three others cut, 20% of datagrams lost
// at every host) and the sender is SIGKILLed for good; that member then
// multicasts a causal successor. The three others must still deliver the
// dead sender's messages (relayed: its stream can no longer resend them)
// and the successor after its cause, each exactly once, the same at every
// survivor.
func TestLabOrderdSenderDies(t *testing.T) {
	const n = 5
	l := newLabOrderd(t, n)
	c, lab := l.c, l.lab
	c.Eventually("every host answers and knows a sequencer", 10*time.Second, func() bool {
		for i := 1; i <= n; i++ {
			if c.sequencer(i) == 0 {
				return false
			}
		}
		return true
	})
	for i := 1; i <= n; i++ {
		lab.Loss(i, 20)
	}
	for _, i := range []int{3, 4, 5} {
		lab.Partition(1, i)
	}
	sent := []string{"f_A", "m_A"}
	for k, o := range []string{"fifo", "causal"} {
		if out, err := c.orderd(1, "send", "--order", o, sent[k]); err != nil {
			t.Fatalf("send %s: %v %s", o, err, out)
		}
	}
	has := func(i int, texts ...string) bool {
		var got []string
		for _, d := range c.orderLog(i) {
			got = append(got, string(d.Message))
		}
		for _, s := range texts {
			if !slices.Contains(got, s) {
				return false
			}
		}
		return true
	}
	c.Eventually("host 2 delivers host 1's messages", 10*time.Second, func() bool { return has(2, sent...) })
	l.procs[1].Kill()
	killed := time.Now()
	lab.HealAll()
	if out, err := c.orderd(2, "send", "--order", "causal", "m_C"); err != nil {
		t.Fatalf("send m_C: %v %s", err, out)
	}
	c.Eventually("hosts 2-5 deliver the dead sender's messages and the successor", 30*time.Second, func() bool {
		for i := 2; i <= n; i++ {
			if !has(i, "f_A", "m_A", "m_C") {
				return false
			}
		}
		return true
	})
	t.Logf("every survivor delivered host 1's messages %v after its SIGKILL (relay after 3 s, 20%% loss)", time.Since(killed).Round(time.Millisecond))
	for i := 2; i <= n; i++ {
		var texts []string
		for _, d := range c.orderLog(i) {
			texts = append(texts, string(d.Message))
		}
		for _, s := range []string{"f_A", "m_A", "m_C"} {
			if k := countOf(texts, s); k != 1 {
				t.Errorf("host %d delivered %q %d times: %v", i, s, k, texts)
			}
		}
		if slices.Index(texts, "m_C") < slices.Index(texts, "m_A") {
			t.Errorf("host %d delivered m_C before its cause m_A: %v", i, texts)
		}
	}
	relayed := 0.0
	for i := 2; i <= n; i++ {
		st, err := c.Status(i)
		if err != nil {
			t.Fatalf("status %d: %v", i, err)
		}
		counters, _ := st["node"].(map[string]any)["core"].(map[string]any)["counters"].(map[string]any)
		v, _ := counters["relayed_records"].(float64)
		relayed += v
	}
	if relayed == 0 {
		t.Errorf("no member relayed a record: %s", fmt.Sprint(relayed))
	}
}

func countOf(xs []string, x string) int {
	n := 0
	for _, v := range xs {
		if v == x {
			n++
		}
	}
	return n
}
