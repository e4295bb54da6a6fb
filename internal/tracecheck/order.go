package tracecheck

import (
	"fmt"
	"slices"

	"github.com/synclab/synclab/internal/trace"
)

// pkg/order's names (eventDelivered, orderTotal,
// orderCausal), written here: pkg/order's own tests check
// their runs with this package (a test asserts they agree).
const (
	eventDelivered = "delivered"
	eventSequencer = "sequencer"
	orderTotal     = "total"
	orderCausal    = "causal"
)

// orderProperties are orderd's promises, from the delivered events every
// member reports (pkg/order: order, sender, seq, and sid for the
// sequencer's total order; skipped_from and skipped_to for numbers caught
// up from a snapshot) and the frames that carry messages.
var orderProperties = []property{
	{name: "total-order", promise: "the total order identical at every member (no two members deliver two total-order messages in opposite orders, nor two messages at one sequencer number)", check: checkTotalOrder},
	{name: "fifo", promise: "each sender's messages delivered in the order it sent them (per order: fifo, causal, total by the sequencer)", check: checkFIFO},
	{name: "no-duplicate", promise: "no message delivered twice at one member", check: checkNoDuplicate},
	{name: "sent", promise: "every message delivered was sent by its sender (a frame of its sender carries it)", check: checkSent},
	{name: "one-sequencer-per-term", promise: "at most one sequencer per term (the total order's numbers come from one member)", check: checkSequencer},
	{name: "causal", promise: "causal delivery: a causal message delivered only after every causal message whose send happened before its own (from the traces' vector clocks)", check: checkCausal},
}

// delivery is one delivered event.
type delivery struct {
	ev       int
	file     string
	member   uint32
	inc      int // the member's incarnation in its file (simulator crashes)
	order    string
	sender   uint32
	seq, sid uint64
	skipped  bool
}

// key names the message: the sequencer's total order by the sender's
// submission ID, every other by the sender's stream number.
func (d *delivery) key() string {
	if d.order == orderTotal && d.sid != 0 {
		return fmt.Sprintf("total %d/sid %d", d.sender, d.sid)
	}
	return fmt.Sprintf("%s %d/%d", d.order, d.sender, d.seq)
}

func (d *delivery) name() string {
	if d.order == orderTotal && d.sid != 0 {
		return fmt.Sprintf("total-order message %d of member %d (number %d)", d.sid, d.sender, d.seq)
	}
	return fmt.Sprintf("%s message %d of member %d", d.order, d.seq, d.sender)
}

// deliveries collects c's deliveries by file, each file's in its order.
func (r *run) deliveries(c *cluster) (map[string][]*delivery, []string) {
	out := map[string][]*delivery{}
	var files []string
	inc := map[string]int{}
	for _, i := range c.events {
		e := &r.d.Events[i]
		if e.Ev != trace.EvLocal {
			continue
		}
		if e.Name == CrashEvent {
			inc[e.File]++
			continue
		}
		if e.Name != eventDelivered {
			continue
		}
		d := &delivery{ev: i, file: e.File, member: r.d.Procs[e.Proc].ID, inc: inc[e.File], order: argStr(&e.Event, "order")}
		s, _ := argU64(&e.Event, "sender")
		d.sender = uint32(s)
		d.seq, _ = argU64(&e.Event, "seq")
		d.sid, _ = argU64(&e.Event, "sid")
		_, d.skipped = e.Args["skipped_from"]
		if out[e.File] == nil {
			files = append(files, e.File)
		}
		out[e.File] = append(out[e.File], d)
	}
	return out, files
}

func (r *run) member(file string) string {
	for _, p := range r.d.Procs {
		if slices.Contains(p.Files, file) {
			return fmt.Sprintf("member %d (%s)", p.ID, p.Host)
		}
	}
	return file
}

func checkTotalOrder(r *run, c *cluster) Result {
	byFile, files := r.deliveries(c)
	var t tally
	// Each member's total-order messages, in delivery order.
	pos := map[string]map[string]int{}
	at := map[string]map[string]*delivery{}
	number := map[uint64]*delivery{} // sequencer number -> the first delivery seen
	msgs := map[string]bool{}
	for _, f := range files {
		pos[f], at[f] = map[string]int{}, map[string]*delivery{}
		for _, d := range byFile[f] {
			if d.order != orderTotal || d.skipped {
				continue
			}
			msgs[d.key()] = true
			if _, seen := pos[f][d.key()]; !seen {
				pos[f][d.key()] = len(pos[f])
				at[f][d.key()] = d
			}
			if d.sid == 0 {
				continue
			}
			if o := number[d.seq]; o == nil {
				number[d.seq] = d
			} else if o.key() != d.key() {
				t.violation(fmt.Sprintf("sequencer number %d is %s at %s but %s at %s",
					d.seq, o.name(), r.member(o.file), d.name(), r.member(d.file)), r.refs([2]int{o.ev, d.ev}))
			}
		}
	}
	for x, fa := range files {
		for _, fb := range files[x+1:] {
			var common []string
			for k := range pos[fa] {
				if _, ok := pos[fb][k]; ok {
					common = append(common, k)
				}
			}
			slices.SortFunc(common, func(p, q string) int { return pos[fa][p] - pos[fa][q] })
			for i := 1; i < len(common); i++ {
				p, q := common[i-1], common[i]
				if pos[fb][p] > pos[fb][q] {
					a1, a2, b1, b2 := at[fa][p], at[fa][q], at[fb][q], at[fb][p]
					t.violation(fmt.Sprintf("%s delivered %s before %s, %s the other way round",
						r.member(fa), a1.name(), a2.name(), r.member(fb)), r.refs([2]int{b1.ev, b2.ev}, a1.ev, a2.ev))
				}
			}
		}
	}
	t.checked = len(msgs)
	return t.result(fmt.Sprintf("%s delivered in total order, in one order at all %s", plural(len(msgs), "message"), plural(len(files), "member")), "inversions")
}

func checkFIFO(r *run, c *cluster) Result {
	byFile, files := r.deliveries(c)
	var t tally
	for _, f := range files {
		last := map[string]*delivery{} // incarnation, order, sender -> its last delivery
		for _, d := range byFile[f] {
			if d.skipped {
				continue
			}
			n := d.seq
			if d.order == orderTotal {
				if d.sid == 0 {
					continue // Lamport's total order: the stream's order is not promised
				}
				n = d.sid
			}
			t.checked++
			k := fmt.Sprintf("%d/%s/%d", d.inc, d.order, d.sender)
			if p := last[k]; p != nil {
				pn := p.seq
				if d.order == orderTotal {
					pn = p.sid
				}
				if n < pn {
					t.violation(fmt.Sprintf("%s delivered %s after %s", r.member(f), p.name(), d.name()), r.refs([2]int{p.ev, d.ev}))
				}
			}
			last[k] = d
		}
	}
	return t.result(fmt.Sprintf("%s: each sender's in its order at every member", plural(t.checked, "delivery")), "deliveries out of order")
}

func checkNoDuplicate(r *run, c *cluster) Result {
	byFile, files := r.deliveries(c)
	var t tally
	for _, f := range files {
		seen := map[string]*delivery{}
		for _, d := range byFile[f] {
			if d.skipped {
				continue
			}
			t.checked++
			k := fmt.Sprintf("%d/%s", d.inc, d.key())
			if p := seen[k]; p != nil {
				t.violation(fmt.Sprintf("%s delivered %s twice", r.member(f), d.name()), r.refs([2]int{p.ev, d.ev}))
				continue
			}
			seen[k] = d
		}
	}
	return t.result(fmt.Sprintf("%s, each message once per member", plural(t.checked, "delivery")), "duplicates")
}

// carried lists, for each message key, the first event of a frame its
// sender sent that carries it: a record of its stream, a submission to
// the sequencer, or the sequencer's log entry of its own message.
func (r *run) carried(c *cluster) map[string]int {
	out := map[string]int{}
	add := func(k string, i int) {
		// The sender's own send first: it marks when the message left.
		if j, ok := out[k]; !ok || (r.d.Events[j].Ev != trace.EvSend && r.d.Events[i].Ev == trace.EvSend) {
			out[k] = i
		}
	}
	for _, i := range c.events {
		e := &r.d.Events[i]
		if (e.Ev != trace.EvSend && e.Ev != trace.EvRecv) || e.From == 0 || (e.Ev == trace.EvSend && e.From != r.d.Procs[e.Proc].ID) {
			continue
		}
		switch e.Kind {
		case "order_record":
			typ, _ := e.Fields["type"].(string)
			seq, ok := fieldU64(e.Fields["seq"])
			if ok {
				add(fmt.Sprintf("%s %d/%d", typ, e.From, seq), i)
			}
		case "order_submit":
			if sid, ok := fieldU64(e.Fields["sid"]); ok {
				add(fmt.Sprintf("total %d/sid %d", e.From, sid), i)
			}
		case "order_append", "order_fetch_reply":
			entries, _ := e.Fields["entries"].([]any)
			for _, x := range entries {
				m, _ := x.(map[string]any)
				s, ok1 := fieldU64(m["sender"])
				sid, ok2 := fieldU64(m["sid"])
				if ok1 && ok2 && uint32(s) == e.From {
					add(fmt.Sprintf("total %d/sid %d", s, sid), i)
				}
			}
		}
	}
	return out
}

func fieldU64(v any) (uint64, bool) {
	e := trace.Event{Args: map[string]any{"v": v}}
	return argU64(&e, "v")
}

func checkSent(r *run, c *cluster) Result {
	byFile, files := r.deliveries(c)
	carried := r.carried(c)
	var t tally
	for _, f := range files {
		for _, d := range byFile[f] {
			if d.skipped {
				continue
			}
			t.checked++
			if _, ok := carried[d.key()]; ok || d.sender == d.member {
				continue // a frame of its sender carries it, or it is the sender's own
			}
			ff := r.files[f]
			if ff == nil || ff.Header.Clock != trace.ClockTrue {
				t.unsure(fmt.Sprintf("%s delivered %s, which no frame of its sender in the traces carries; it may have been sent before the traces began", r.member(f), d.name()),
					r.refs([2]int{d.ev, -1}))
				continue
			}
			t.violation(fmt.Sprintf("%s delivered %s, which no frame of its sender carries in the simulator's traces (which cover the whole run)", r.member(f), d.name()),
				r.refs([2]int{d.ev, -1}))
		}
	}
	return t.result(fmt.Sprintf("%s, each of a message its sender sent", plural(t.checked, "delivery")), "deliveries")
}

func checkCausal(r *run, c *cluster) Result {
	byFile, files := r.deliveries(c)
	carried := r.carried(c)
	// Each causal message's send: its sender's first frame carrying it,
	// when that is a send of the sender's own.
	type msg struct {
		key  string
		send int
		d    *delivery
	}
	var msgs []msg
	seen := map[string]bool{}
	for _, f := range files {
		for _, d := range byFile[f] {
			k := d.key()
			if d.order != orderCausal || d.skipped || seen[k] {
				continue
			}
			seen[k] = true
			if i, ok := carried[k]; ok && r.d.Events[i].Ev == trace.EvSend {
				msgs = append(msgs, msg{k, i, d})
			}
		}
	}
	var t tally
	for _, f := range files {
		idx := map[string]int{} // key -> position of its delivery here
		for n, d := range byFile[f] {
			if d.order == orderCausal && !d.skipped {
				if _, ok := idx[d.key()]; !ok {
					idx[d.key()] = n
				}
			}
		}
		for _, m2 := range msgs {
			p2, ok := idx[m2.key]
			if !ok {
				continue
			}
			t.checked++
			for _, m1 := range msgs {
				if m1.key == m2.key || !r.before(r.at(m1.send), r.at(m2.send), true) {
					continue
				}
				d2 := byFile[f][p2]
				p1, ok := idx[m1.key]
				switch {
				case ok && p1 < p2:
					continue
				case ok:
					t.violation(fmt.Sprintf("%s delivered %s before %s, though the send of the second happened before the send of the first",
						r.member(f), d2.name(), m1.d.name()), r.refs([2]int{m1.send, m2.send}, byFile[f][p1].ev, d2.ev))
				case r.files[f] != nil && r.files[f].Header.Clock == trace.ClockTrue:
					t.violation(fmt.Sprintf("%s delivered %s but never %s, whose send happened before its own",
						r.member(f), d2.name(), m1.d.name()), r.refs([2]int{m1.send, m2.send}, d2.ev))
				default:
					t.unsure(fmt.Sprintf("%s delivered %s, and %s, whose send happened before its own, not in its trace: delivered before the trace began?",
						r.member(f), d2.name(), m1.d.name()), r.refs([2]int{m1.send, m2.send}, d2.ev))
				}
			}
		}
	}
	return t.result(fmt.Sprintf("%s of %s checked against every causal message sent before it", plural(t.checked, "delivery"), plural(len(msgs), "causal message")), "deliveries")
}

func checkSequencer(r *run, c *cluster) Result {
	first := map[uint64]int{} // term -> the first sequencer event
	var t tally
	for _, i := range c.events {
		e := &r.d.Events[i]
		if e.Ev != trace.EvLocal || e.Name != eventSequencer {
			continue
		}
		term, ok := argU64(&e.Event, "term")
		if !ok {
			continue
		}
		j, seen := first[term]
		if !seen {
			first[term] = i
			t.checked++
			continue
		}
		if a, b := r.d.Procs[r.d.Events[j].Proc].ID, r.d.Procs[e.Proc].ID; a != b {
			t.violation(fmt.Sprintf("term %d has two sequencers: member %d and member %d", term, a, b), r.refs([2]int{j, i}))
		}
	}
	return t.result(fmt.Sprintf("%s, each with one sequencer", plural(t.checked, "term")), "terms")
}
