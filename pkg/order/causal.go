package order

import (
	"fmt"
	"slices"

	"github.com/synclab/synclab/pkg/wire"
)

// Causal order, as the notes give it: p_i sends m with t(m) = V_i after
// V_i[i]++; p_j holds m back until
//
//	t(m)[i] = V_j[i] + 1       (m is the next message p_j expects from p_i)
//	t(m)[k] <= V_j[k], k != i  (p_j has seen every message p_i had seen)
//
// and on delivery sets V_j[i] = t(m)[i]. V counts causal messages
// delivered, one entry per member in member-ID order: it is not the
// node's event clock (which ticks on every frame), so it is kept here.

type causalMsg struct {
	Sender  uint32   `json:"sender"`
	Seq     uint64   `json:"seq"`
	Vector  []uint64 `json:"vector"`
	Message []byte   `json:"message"`
}

type causalState struct {
	V       []uint64    `json:"v"`
	Pending []causalMsg `json:"pending,omitempty"`
	// Received counts the causal records each member's stream handed on:
	// t(m)[i] must be exactly one more (FIFO), and no t(m)[k] can exceed
	// Received[k] by more than the window k's stream allows.
	Received []uint64 `json:"received"`
}

func (c *Core) causalReceive(from uint32, r wire.OrderRecord) {
	cs := &c.st.Causal
	i := c.pos[from]
	cs.Received[i]++
	if r.Vector[i] != cs.Received[i] {
		c.count("rejected_causal_vector")
		c.events = append(c.events, bugEvent(fmt.Sprintf("member %d's causal message %d carries t[%d]=%d, its %d-th causal message: dropped",
			from, r.Seq, from, r.Vector[i], cs.Received[i])))
		cs.Received[i] = max(cs.Received[i], r.Vector[i])
		return
	}
	for k, t := range r.Vector {
		if k != i && t > cs.Received[k]+uint64(c.cfg.Window)+uint64(len(cs.Pending)) && t > cs.V[k] {
			c.count("rejected_causal_vector")
			c.events = append(c.events, bugEvent(fmt.Sprintf("member %d's causal message %d depends on %d messages of member %d, more than it can have sent: dropped",
				from, r.Seq, t, c.members[k])))
			return
		}
	}
	cs.Pending = append(cs.Pending, causalMsg{Sender: from, Seq: r.Seq, Vector: r.Vector, Message: r.Message})
	c.causalDeliver()
}

// deliverable is the notes' pair of conditions.
func (cs *causalState) deliverable(i int, t []uint64) bool {
	if t[i] != cs.V[i]+1 {
		return false
	}
	for k := range t {
		if k != i && t[k] > cs.V[k] {
			return false
		}
	}
	return true
}

func (c *Core) causalDeliver() {
	cs := &c.st.Causal
	for progress := true; progress; {
		progress = false
		for j := 0; j < len(cs.Pending); j++ {
			m := cs.Pending[j]
			i := c.pos[m.Sender]
			if !cs.deliverable(i, m.Vector) {
				continue
			}
			cs.V[i] = m.Vector[i]
			cs.Pending = slices.Delete(cs.Pending, j, j+1)
			c.deliver(Delivery{Order: Causal, Sender: m.Sender, Seq: m.Seq, Vector: m.Vector, Message: m.Message})
			progress = true
			j--
		}
	}
}

// causalWaits says what a held-back causal message waits for.
func (c *Core) causalWaits(m causalMsg) string {
	cs := &c.st.Causal
	i := c.pos[m.Sender]
	if m.Vector[i] != cs.V[i]+1 {
		return fmt.Sprintf("member %d's causal message #%d (delivered %d)", m.Sender, cs.V[i]+1, cs.V[i])
	}
	for k, t := range m.Vector {
		if k != i && t > cs.V[k] {
			return fmt.Sprintf("member %d's causal message #%d (delivered %d)", c.members[k], t, cs.V[k])
		}
	}
	return "nothing"
}
