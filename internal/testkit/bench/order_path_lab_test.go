package bench

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/synclab/synclab/internal/ctl"
	"github.com/synclab/synclab/internal/daemon"
	"github.com/synclab/synclab/internal/trace"
	"github.com/synclab/synclab/pkg/order"
)

// The sequencer's critical path, taken apart: every host records a
// protocol trace (internal/trace: each frame's send and receive, and the
// core's events, on the one clock the namespaces share) while h1 sends
// total-order multicasts one at a time; each multicast's hops are then
// found in the traces by its text (the Submit's and the Append's
// entries carry it) and its number (the acks' match, the commit point):
//
//	h1 -> sequencer (Submit) -> members (Append, entry) -> sequencer
//	(AppendAck, after the member's write) -> members (Append, commit
//	point) -> delivered
//
// four one-way message delays and, on the path, one fdatasync (the
// members' entry: the sequencer's own runs while its Append travels).

// pathStage is one step of the path, measured per multicast.
type pathStage struct {
	name    string
	samples []time.Duration
}

// orderPath is the traced path of total-order multicasts through the
// daemons: its stages, the reply (send call to answer) and the
// end-to-end delivery latency, medians over the multicasts traced.
type orderPath struct {
	stages []*pathStage
	reply  Summary // the send call until its answer (the commit, at h1)
	total  Summary // the send call until delivery, every member
	n      int
}

func (p *orderPath) stage(name string) *pathStage {
	for _, s := range p.stages {
		if s.name == name {
			return s
		}
	}
	s := &pathStage{name: name}
	p.stages = append(p.stages, s)
	return s
}

// tracePath traces n multicasts sent one at a time from h1 (20 ms apart)
// through the sequencer cluster seq leads.
func (o *orderBench) tracePath(seq uint32, n int) orderPath {
	files := map[int]string{}
	for i := range o.procs {
		files[i] = filepath.Join(o.dir, fmt.Sprintf("path-%d-%d.trace", o.run, i))
		var st daemon.TraceStatus
		ctx, cancel := context.WithTimeout(o.ctx, 5*time.Second)
		err := ctl.NewClient(o.control(i), "orderd").Post(ctx, "/v1/trace/start", daemon.TraceRequest{File: files[i]}, &st)
		cancel()
		if err != nil {
			o.fatalf("trace on h%d: %v", i, err)
		}
	}
	type sent struct {
		msg       string
		at, reply time.Time
	}
	var msgs []sent
	for k := range n {
		m := sent{msg: fmt.Sprintf("path-%d-%d", o.run, k), at: time.Now()}
		if _, err := o.send(1, order.TotalOrder, m.msg, false); err != nil {
			o.fatalf("send: %v", err)
		}
		m.reply = time.Now()
		msgs = append(msgs, m)
		o.sleep(20 * time.Millisecond)
	}
	o.sleep(100 * time.Millisecond)
	traces := map[int]*trace.File{}
	for i := range o.procs {
		ctx, cancel := context.WithTimeout(o.ctx, 5*time.Second)
		err := ctl.NewClient(o.control(i), "orderd").Post(ctx, "/v1/trace/stop", nil, nil)
		cancel()
		if err != nil {
			o.fatalf("trace stop on h%d: %v", i, err)
		}
		f, err := trace.ReadFile(files[i])
		if err != nil {
			o.fatalf("trace of h%d: %v", i, err)
		}
		traces[i] = f
	}
	var p orderPath
	var replies, totals []time.Duration
	for _, m := range msgs {
		hops, why := findPath(traces, int(seq), m.msg, m.at)
		if why != "" && p.n == 0 && len(p.stages) == 0 {
			o.logf("%s: not traced whole: %s", m.msg, why)
		}
		if why == "" {
			for _, h := range hops {
				s := p.stage(h.name)
				s.samples = append(s.samples, h.d)
			}
			p.n++
		}
		replies = append(replies, m.reply.Sub(m.at))
		for i, f := range traces {
			if i == int(seq) {
				continue
			}
			if d, ok := deliveredAt(f, m.msg, m.at); ok {
				totals = append(totals, d)
			}
		}
	}
	p.reply, p.total = Summarize(replies), Summarize(totals)
	return p
}

type hop struct {
	name string
	d    time.Duration
}

// findPath follows one multicast through the traces: the median over the
// members of each member's hop.
func findPath(traces map[int]*trace.File, seq int, msg string, start time.Time) ([]hop, string) {
	hexMsg := hex.EncodeToString([]byte(msg))
	sender := traces[1]
	sq := traces[seq]
	// h1's Submit, and its arrival at the sequencer.
	submitOut, ok := find(sender, start, func(e trace.Event) bool {
		return e.Ev == trace.EvSend && e.Kind == "order_submit" && e.Fields["message"] == hexMsg
	})
	if !ok {
		return nil, "h1 sent no Submit"
	}
	submitIn, ok := find(sq, start, func(e trace.Event) bool {
		return e.Ev == trace.EvRecv && e.Kind == "order_submit" && e.Fields["message"] == hexMsg
	})
	if !ok {
		return nil, "the Submit did not reach the sequencer"
	}
	// The entry's number, from the first Append that carries it.
	var number uint64
	appendOut, ok := find(sq, submitIn.T, func(e trace.Event) bool {
		number, _ = entryNumber(e, trace.EvSend, hexMsg)
		return number != 0
	})
	if !ok {
		return nil, "the sequencer sent no Append of it"
	}
	var appendNet, write, ackNet, commitNet, deliver []time.Duration
	// The member's write, where its daemon traces it (TraceLogWrite;
	// main's build before it does not): before it, it, after it.
	var toWrite, writing, syncing, afterWrite []time.Duration
	var acksIn []time.Time
	var commitOut time.Time
	// The sequencer's frames to the members leave one unicast send after
	// the other; each send runs the receiving namespace's network path
	// and wakes its daemon on the sender's CPU. The hops above are each
	// member's own, from its own frame: the fan-out's spread is not in
	// them, and the later members wait for it. Out: the frames' sends
	// (the clock read before each); in: their arrivals (the members'
	// kernel stamps), which count what a send of several frames at once
	// spends inside the kernel too.
	var appendLast, commitLast time.Time
	var appendIns, commitIns []time.Time
	for i, f := range traces {
		if i == seq {
			continue
		}
		var appendIn, ackOut, commitIn, delivered trace.Event
		if appendIn, ok = find(f, appendOut.T, func(e trace.Event) bool {
			_, ok := entryNumber(e, trace.EvRecv, hexMsg)
			return ok
		}); !ok {
			return nil, fmt.Sprintf("h%d received no Append of it", i)
		}
		sentAt, _ := find(sq, appendOut.T, func(e trace.Event) bool {
			return e.Ev == trace.EvSend && e.Frame == appendIn.Frame
		})
		if ackOut, ok = find(f, appendIn.T, func(e trace.Event) bool {
			return e.Ev == trace.EvSend && e.Kind == "order_append_ack" && uint64(num(e.Fields["match"])) >= number
		}); !ok {
			return nil, fmt.Sprintf("h%d acknowledged no Append of number %d", i, number)
		}
		if w, ok := find(f, appendIn.T, func(e trace.Event) bool {
			return e.Ev == trace.EvLocal && e.Name == daemon.TraceLogWrite
		}); ok && !w.T.After(ackOut.T) {
			synced := time.Duration(num(w.Args["sync_us"])) * time.Microsecond
			d := time.Duration(num(w.Args["write_us"]))*time.Microsecond + synced
			toWrite = append(toWrite, w.T.Add(-d).Sub(appendIn.T))
			writing, syncing = append(writing, d), append(syncing, synced)
			afterWrite = append(afterWrite, ackOut.T.Sub(w.T))
		}
		ackIn, ok := find(sq, ackOut.T, func(e trace.Event) bool { return e.Ev == trace.EvRecv && e.Frame == ackOut.Frame })
		if !ok {
			return nil, fmt.Sprintf("h%d's ack did not reach the sequencer", i)
		}
		// A member slower than the majority may get the commit point
		// before its own ack leaves (and delivers once its write is done).
		if commitIn, ok = find(f, appendIn.T, func(e trace.Event) bool {
			return e.Ev == trace.EvRecv && e.Kind == "order_append" && uint64(num(e.Fields["commit"])) >= number
		}); !ok {
			return nil, fmt.Sprintf("h%d received no commit point %d", i, number)
		}
		commitSent, _ := find(sq, appendOut.T, func(e trace.Event) bool { return e.Ev == trace.EvSend && e.Frame == commitIn.Frame })
		if delivered, ok = find(f, commitIn.T, func(e trace.Event) bool {
			return e.Ev == trace.EvLocal && e.Name == order.EventDelivered && uint64(num(e.Args["seq"])) == number
		}); !ok {
			return nil, fmt.Sprintf("h%d did not deliver number %d", i, number)
		}
		appendIns, commitIns = append(appendIns, appendIn.T), append(commitIns, commitIn.T)
		if sentAt.T.After(appendLast) {
			appendLast = sentAt.T
		}
		if commitSent.T.After(commitLast) {
			commitLast = commitSent.T
		}
		appendNet = append(appendNet, appendIn.T.Sub(sentAt.T))
		write = append(write, ackOut.T.Sub(appendIn.T))
		ackNet = append(ackNet, ackIn.T.Sub(ackOut.T))
		acksIn = append(acksIn, ackIn.T)
		commitNet = append(commitNet, commitIn.T.Sub(commitSent.T))
		deliver = append(deliver, delivered.T.Sub(commitIn.T))
		if commitOut.IsZero() || commitSent.T.Before(commitOut) {
			commitOut = commitSent.T
		}
	}
	// The sequencer commits once a majority holds the entry: itself and
	// the first members' acks (5 hosts: 2).
	slices.SortFunc(acksIn, func(a, b time.Time) int { return a.Compare(b) })
	majority := acksIn[min(len(acksIn)-1, (len(traces)/2+1)-2)]
	hops := []hop{
		{"h1: send call to Submit out (control API, loop)", submitOut.T.Sub(start)},
		{"one-way h1 -> sequencer (Submit)", submitIn.T.Sub(submitOut.T)},
		{"sequencer: Submit in to Append out", appendOut.T.Sub(submitIn.T)},
		{"  then its Appends to the other members: first to last out", appendLast.Sub(appendOut.T)},
		{"  and at the members: first to last Append in", spread(appendIns)},
		{"one-way sequencer -> member (Append)", median(appendNet)},
		{"member: Append in to ack out (its fdatasync)", median(write)},
	}
	if len(writing) == len(write) {
		hops = append(hops,
			hop{"  of which: Append in to its write (wake-up, core, record)", median(toWrite)},
			hop{"  of which: its write, write(2) + fdatasync", median(writing)},
			hop{"  of which: its fdatasync alone (in the daemon)", median(syncing)},
			hop{"  of which: write done to ack out (Advance, the ack's send)", median(afterWrite)})
	}
	return append(hops,
		hop{"one-way member -> sequencer (ack)", median(ackNet)},
		hop{"sequencer: majority's ack in to commit point out", commitOut.Sub(majority)},
		hop{"  then its commit points to the other members: first to last out", commitLast.Sub(commitOut)},
		hop{"  and at the members: first to last commit point in", spread(commitIns)},
		hop{"one-way sequencer -> member (commit point)", median(commitNet)},
		hop{"member: commit point in to delivered", median(deliver)},
	), ""
}

// spread is the time from the earliest of ts to the latest.
func spread(ts []time.Time) time.Duration {
	if len(ts) == 0 {
		return 0
	}
	return slices.MaxFunc(ts, time.Time.Compare).Sub(slices.MinFunc(ts, time.Time.Compare))
}

// deliveredAt is msg's delivery time at f's host, after start.
func deliveredAt(f *trace.File, msg string, start time.Time) (time.Duration, bool) {
	// A delivered event names the number, not the text: the Append that
	// carried the text gives the number.
	hexMsg := hex.EncodeToString([]byte(msg))
	var number uint64
	if _, ok := find(f, start, func(e trace.Event) bool {
		number, _ = entryNumber(e, trace.EvRecv, hexMsg)
		return number != 0
	}); !ok {
		return 0, false
	}
	d, ok := find(f, start, func(e trace.Event) bool {
		return e.Ev == trace.EvLocal && e.Name == order.EventDelivered && uint64(num(e.Args["seq"])) == number
	})
	return d.T.Sub(start), ok
}

// entryNumber is the number of the entry carrying hexMsg in e, an Append
// sent or received (ev).
func entryNumber(e trace.Event, ev, hexMsg string) (uint64, bool) {
	if e.Ev != ev || e.Kind != "order_append" {
		return 0, false
	}
	entries, _ := e.Fields["entries"].([]any)
	for k, x := range entries {
		if ent, _ := x.(map[string]any); ent != nil && ent["message"] == hexMsg {
			return uint64(num(e.Fields["prev"])) + uint64(k) + 1, true
		}
	}
	return 0, false
}

// find is the first event of f at or after from that matches.
func find(f *trace.File, from time.Time, match func(trace.Event) bool) (trace.Event, bool) {
	i, _ := slices.BinarySearchFunc(f.Events, from, func(e trace.Event, t time.Time) int { return e.T.Compare(t) })
	for ; i < len(f.Events); i++ {
		if match(f.Events[i]) {
			return f.Events[i], true
		}
	}
	return trace.Event{}, false
}

// num reads a number of a trace's fields (read as json.Number).
func num(v any) float64 {
	switch n := v.(type) {
	case float64:
		return n
	case json.Number:
		f, _ := n.Float64()
		return f
	}
	return 0
}

// fdatasyncTime measures this disk's fdatasync of a 200-byte record, by
// at once files at the same moment (the lab's hosts share one disk: the
// members write an entry together), written as orderd's log writes it
// (prealloc: into space allocated ahead, the file's size unchanged) or
// as builds before it did (appended, the file growing: ext4 then
// commits the new size through its journal with every fdatasync).
func (o *orderBench) fdatasyncTime(n, at int, prealloc bool) Summary {
	files := make([]*os.File, at)
	for k := range files {
		f, err := os.CreateTemp(o.dir, "fdatasync-*")
		if err != nil {
			o.fatalf("fdatasync probe: %v", err)
		}
		defer os.Remove(f.Name())
		defer f.Close()
		if prealloc {
			if err := unix.Fallocate(int(f.Fd()), 0, 0, 1<<20); err != nil {
				o.fatalf("fdatasync probe: fallocate: %v", err)
			}
			if err := f.Sync(); err != nil {
				o.fatalf("fdatasync probe: %v", err)
			}
		}
		files[k] = f
	}
	rec := []byte(strings.Repeat("x", 200))
	var mu sync.Mutex
	var samples []time.Duration
	for k := range n {
		var wg sync.WaitGroup
		for _, f := range files {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := f.WriteAt(rec, int64(k*len(rec))); err != nil {
					return
				}
				start := time.Now()
				if unix.Fdatasync(int(f.Fd())) == nil {
					mu.Lock()
					samples = append(samples, time.Since(start))
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		o.sleep(2 * time.Millisecond)
	}
	return Summarize(samples)
}
