package node

import (
	"bytes"
	"encoding/binary"
	"errors"
	"maps"
	"net/netip"
	"testing"
	"time"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/wire"
)

// windowed is a node whose driver answers trace queries with a full
// chunk of 'x's, recording what it was asked.
func windowed(t *testing.T, id uint32, asked *[]wire.TraceQuery, mutate func(*Config)) *Node {
	n, _ := newNode(t, id, func(c *Config) {
		c.TraceWindow = func(from uint32, q *wire.TraceQuery, now time.Time) (wire.TraceChunk, bool) {
			*asked = append(*asked, *q)
			return wire.TraceChunk{Flags: wire.TraceFresh, Window: 5, Offset: 10, End: 10 + 2*wire.MaxTraceChunkData,
				Data: bytes.Repeat([]byte("x"), wire.MaxTraceChunkData)}, true
		}
		if mutate != nil {
			mutate(c)
		}
	})
	return n
}

// TestTraceQueryAnswered: member 1 asks member 2 for its window; 2's
// driver is asked what 1 asked for, and its chunk comes back under the
// query's ID, never as much as twice the query's size (keys on: both
// frames signed).
func TestTraceQueryAnswered(t *testing.T) {
	var asked []wire.TraceQuery
	key := func(c *Config) { c.Keys = []wire.Key{testKey} }
	a, _ := newNode(t, 1, key)
	// b traces (its window is on): vectors on, which its chunks must not
	// carry (a forged query carries none).
	b := windowed(t, 2, &asked, func(c *Config) { key(c); c.Vectors = true })
	id, err := a.QueryTrace(t0, 2, wire.TraceQuery{Window: 5, After: 10, From: wire.NTPTimeFromTime(t0)})
	if err != nil {
		t.Fatal(err)
	}
	var qlen int
	for _, s := range a.Ready().Sends {
		q := a.Finalize(s, t0)
		qlen = len(q)
		if err := b.Receive(Inbound{From: members[1], Data: q, Time: t0}); err != nil {
			t.Fatal(err)
		}
	}
	if len(asked) != 1 || asked[0].Window != 5 || asked[0].After != 10 || asked[0].ID != id {
		t.Fatalf("the driver was asked %+v", asked)
	}
	if _, ok := a.TraceAnswer(id); ok {
		t.Fatal("an answer before it came")
	}
	for _, s := range b.Ready().Sends {
		ans := b.Finalize(s, t0)
		if len(ans) >= 2*qlen {
			t.Fatalf("an answer of %d bytes to a query of %d", len(ans), qlen)
		}
		var f wire.Frame
		if err := f.UnmarshalBinary(ans); err != nil || f.Vector != nil {
			t.Fatalf("the chunk's frame carries a vector: %v %v", f.Vector, err)
		}
		if err := a.Receive(Inbound{From: members[2], Data: ans, Time: t0}); err != nil {
			t.Fatal(err)
		}
	}
	c, ok := a.TraceAnswer(id)
	if !ok || c.QueryID != id || c.Window != 5 || c.Offset != 10 || len(c.Data) != wire.MaxTraceChunkData {
		t.Fatalf("answer %+v, %v", c, ok)
	}
	if news := a.TraceNews(); len(news) != 1 || news[0] != id {
		t.Fatalf("news %v", news)
	}
	a.EndTraceQuery(id)
	if _, ok := a.TraceAnswer(id); ok {
		t.Fatal("an ended query still answers")
	}
	if st := a.Status(); st.FramesIn["trace_chunk"] != 1 || st.FramesOut["trace_query"] != 1 {
		t.Fatalf("frames %v %v", st.FramesIn, st.FramesOut)
	}
}

// TestTraceQueryRefusals: each way a query is refused is counted under its
// reason, and the driver is never asked.
func TestTraceQueryRefusals(t *testing.T) {
	var asked []wire.TraceQuery
	query := func(from *Node, to uint32) []byte {
		id := uint64(from.ID())<<32 | 1
		p, _ := wire.TraceQuery{ID: id}.AppendBinary(nil)
		from.own = append(from.own, core.Message{To: to, Kind: wire.KindTraceQuery, Payload: p})
		sends := from.Ready().Sends
		if len(sends) != 1 {
			t.Fatalf("%d sends", len(sends))
		}
		return from.Finalize(sends[0], t0)
	}
	t.Run("not a member", func(t *testing.T) {
		asked = nil
		four := maps.Clone(members)
		four[4] = netip.MustParseAddrPort("127.0.0.14:7000")
		stranger, _ := newNode(t, 4, func(c *Config) { c.Members = four })
		b := windowed(t, 2, &asked, nil)
		if err := b.Receive(Inbound{From: four[4], Data: query(stranger, 2), Time: t0}); !errors.Is(err, core.ErrUnknownMember) {
			t.Fatalf("%v", err)
		}
		if b.Status().Dropped["unknown_member"] != 1 || len(asked) != 0 || len(b.Ready().Sends) != 0 {
			t.Fatalf("dropped %v, asked %v", b.Status().Dropped, asked)
		}
	})
	t.Run("a member's address, another source", func(t *testing.T) {
		asked = nil
		a, _ := newNode(t, 1, nil)
		b := windowed(t, 2, &asked, nil)
		b.Receive(Inbound{From: netip.MustParseAddrPort("127.0.0.99:7000"), Data: query(a, 2), Time: t0})
		if b.Status().Dropped["wrong_source"] != 1 || len(asked) != 0 {
			t.Fatalf("dropped %v, asked %v", b.Status().Dropped, asked)
		}
	})
	t.Run("unsigned, with a key", func(t *testing.T) {
		asked = nil
		a, _ := newNode(t, 1, nil)
		b := windowed(t, 2, &asked, func(c *Config) { c.Keys = []wire.Key{testKey} })
		if err := b.Receive(Inbound{From: members[1], Data: query(a, 2), Time: t0}); err == nil {
			t.Fatal("an unsigned query taken")
		}
		if len(asked) != 0 || len(b.Ready().Sends) != 0 || len(b.Status().Dropped) != 1 {
			t.Fatalf("dropped %v, asked %v", b.Status().Dropped, asked)
		}
	})
	t.Run("oversize", func(t *testing.T) {
		asked = nil
		a, _ := newNode(t, 1, nil)
		b := windowed(t, 2, &asked, nil)
		p, _ := wire.TraceQuery{ID: 1}.AppendBinary(nil)
		a.own = append(a.own, core.Message{To: 2, Kind: wire.KindTraceQuery, Payload: append(p, make([]byte, 1000)...)})
		errs := deliver(t, a, b, t0)
		if len(errs) != 1 || !errors.Is(errs[0], wire.DecodeBadLength) || len(asked) != 0 {
			t.Fatalf("errors %v, asked %v", errs, asked)
		}
		// An answer whose length field says more than a chunk holds.
		id, _ := b.QueryTrace(t0, 1, wire.TraceQuery{})
		b.Ready()
		c, _ := wire.TraceChunk{QueryID: id, End: 10, Data: []byte("0123456789")}.AppendBinary(nil)
		binary.BigEndian.PutUint16(c[2:], wire.MaxTraceChunkData+1)
		a.own = append(a.own, core.Message{To: 2, Kind: wire.KindTraceChunk, Payload: append(c, make([]byte, wire.MaxTraceChunkData+1-10)...)})
		errs = deliver(t, a, b, t0)
		if len(errs) != 1 || !errors.Is(errs[0], wire.DecodeOversized) {
			t.Fatalf("errors %v", errs)
		}
		if _, ok := b.TraceAnswer(id); ok {
			t.Fatal("an oversize chunk taken")
		}
		if d := b.Status().Dropped; len(d) != 2 {
			t.Fatalf("dropped %v", d)
		}
	})
	t.Run("too frequent", func(t *testing.T) {
		asked = nil
		a, _ := newNode(t, 1, nil)
		b := windowed(t, 2, &asked, nil)
		limited := 0
		for i := range 50 {
			now := t0.Add(time.Duration(i) * time.Millisecond)
			a.traces.asking = nil // a asks faster than it would: b's budget is under test
			id, err := a.QueryTrace(now, 2, wire.TraceQuery{})
			if err != nil {
				t.Fatal(err)
			}
			a.EndTraceQuery(id)
			for _, err := range deliver(t, a, b, now) {
				if errors.Is(err, ErrTraceLimited) {
					limited++
				} else if err != nil {
					t.Fatal(err)
				}
			}
		}
		// 50 asks over 49ms: the burst, and one per traceAnswerEvery.
		want := 50 - traceAnswerBurst - 4
		if limited != want || len(asked) != 50-want || b.Status().Dropped["trace_limited"] != uint64(want) {
			t.Fatalf("limited %d (want %d), answered %d, dropped %v", limited, want, len(asked), b.Status().Dropped)
		}
	})
	t.Run("no window kept", func(t *testing.T) {
		a, _ := newNode(t, 1, nil)
		b, _ := newNode(t, 2, nil)
		if errs := deliver(t, a, b, t0); len(errs) != 0 {
			t.Fatal(errs)
		}
		a.QueryTrace(t0, 2, wire.TraceQuery{})
		errs := deliver(t, a, b, t0)
		if len(errs) != 1 || !errors.Is(errs[0], ErrTraceUnavailable) || b.Status().Dropped["trace_unavailable"] != 1 || len(b.Ready().Sends) != 0 {
			t.Fatalf("errors %v, dropped %v", errs, b.Status().Dropped)
		}
	})
	t.Run("unsolicited chunk", func(t *testing.T) {
		a, _ := newNode(t, 1, nil)
		b, _ := newNode(t, 2, nil)
		c, _ := wire.TraceChunk{QueryID: 99}.AppendBinary(nil)
		a.own = append(a.own, core.Message{To: 2, Kind: wire.KindTraceChunk, Payload: c})
		errs := deliver(t, a, b, t0)
		if len(errs) != 1 || !errors.Is(errs[0], ErrTraceUnsolicited) || b.Status().Dropped["trace_unsolicited"] != 1 {
			t.Fatalf("errors %v, dropped %v", errs, b.Status().Dropped)
		}
		// Another member's answer to a query of b to a.
		id, _ := b.QueryTrace(t0, 1, wire.TraceQuery{})
		b.Ready()
		three, _ := newNode(t, 3, nil)
		c, _ = wire.TraceChunk{QueryID: id}.AppendBinary(nil)
		three.own = append(three.own, core.Message{To: 2, Kind: wire.KindTraceChunk, Payload: c})
		if errs := deliver(t, three, b, t0); len(errs) != 1 || !errors.Is(errs[0], ErrTraceUnsolicited) {
			t.Fatalf("errors %v", errs)
		}
	})
}

// TestTraceQueriesBounded: a node asks each member at the pace it
// answers; at most MaxTraceQueries wait; only other members are asked; a
// query no driver ended is forgotten after traceQueryTTL.
func TestTraceQueriesBounded(t *testing.T) {
	a, _ := newNode(t, 1, nil)
	a.Tick(t0)
	for i := range traceAnswerBurst {
		if _, err := a.QueryTrace(t0, 2, wire.TraceQuery{}); err != nil && i < MaxTraceQueries {
			t.Fatalf("query %d: %v", i, err)
		} else if i >= MaxTraceQueries && !errors.Is(err, ErrTraceBusy) {
			t.Fatalf("query %d past MaxTraceQueries: %v", i, err)
		}
	}
	for _, m := range []uint32{1, 4} {
		if _, err := a.QueryTrace(t0, m, wire.TraceQuery{}); !errors.Is(err, ErrNotMember) {
			t.Fatalf("member %d: %v", m, err)
		}
	}
	a.Tick(t0.Add(traceQueryTTL + time.Second))
	if len(a.traces.pending) != 0 {
		t.Fatalf("%d queries left after the TTL", len(a.traces.pending))
	}
	b, _ := newNode(t, 1, nil)
	for range traceAnswerBurst {
		id, _ := b.QueryTrace(t0, 3, wire.TraceQuery{})
		b.EndTraceQuery(id)
	}
	if _, err := b.QueryTrace(t0, 3, wire.TraceQuery{}); !errors.Is(err, ErrTraceBusy) {
		t.Fatalf("faster than member 3 answers: %v", err)
	}
	if _, err := b.QueryTrace(t0, 2, wire.TraceQuery{}); err != nil {
		t.Fatalf("member 2 has its own pace: %v", err)
	}
}
