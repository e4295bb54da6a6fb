package web

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/daemon"
	"github.com/synclab/synclab/internal/trace"
)

// scripted answers MemberTrace with its pieces, one per call.
type scripted struct {
	*fake
	pieces []daemon.MemberTrace
}

func (s *scripted) MemberTrace(context.Context, uint32, uint32, uint64, time.Time, time.Duration, int) (daemon.MemberTrace, error) {
	p := s.pieces[0]
	s.pieces = s.pieces[1:]
	return p, nil
}

func lines(from, n int) []byte {
	var b []byte
	for i := from; i < from+n; i++ {
		b = trace.AppendEvent(b, &trace.Event{T: time.Now(), Ev: trace.EvLocal, Name: fmt.Sprintf("e%d", i)})
	}
	return b
}

// TestMemberPieces: what a member sends is read as untrusted input: lines
// cut across pieces joined, a line that does not parse left out and said,
// a gap marked, a line longer than memberPartialMax dropped, and at most
// MaxEvents events kept.
func TestMemberPieces(t *testing.T) {
	one := lines(0, 3)
	cut := bytes.IndexByte(one[len(one)/2:], '"') + len(one)/2 // inside the second or third line
	two := append(append([]byte("not json at all\n"), lines(3, 1)...), lines(4, 1)...)
	src := &scripted{fake: newFake(t), pieces: []daemon.MemberTrace{
		{Member: 3, Answered: true, Window: 1, Offset: 0, Next: uint64(cut), Fresh: true, Data: one[:cut]},
		{Member: 3, Answered: true, Window: 1, Offset: uint64(cut), Next: uint64(len(one)), Data: one[cut:]},
		{Member: 3, Answered: true, Window: 1, Offset: uint64(len(one)), Next: uint64(len(one) + len(two)), Data: two},
		// A gap: the member dropped what the page had not read; the
		// cut line before it is dropped too.
		{Member: 3, Answered: true, Window: 1, Offset: 5000, Next: 5000 + 40, Lost: true, Data: []byte(strings.Repeat("x", 40))},
		{Member: 3, Answered: true, Window: 1, Offset: 9000, Next: 9000 + memberPartialMax + 1, Lost: true, Data: bytes.Repeat([]byte("y"), memberPartialMax+1)},
		{Member: 3, Answered: true, Window: 2, Offset: 0, Next: 1, Fresh: true, Data: lines(100, 20)},
	}}
	s, err := New(Config{Daemon: "electd", Source: src, Table: table, MaxEvents: 10})
	if err != nil {
		t.Fatal(err)
	}
	w := &window{s: s}
	step := func() *memberTrace {
		w.fetchMembers(context.Background(), []uint32{3}, time.Second)
		return w.members[3]
	}
	if m := step(); len(m.events) != 1 || m.view.Lost || !m.view.Answering {
		t.Fatalf("first piece: %d events, %+v", len(m.events), m.view)
	}
	if m := step(); len(m.events) != 3 || m.events[2].Name != "e2" {
		t.Fatalf("the cut line joined: %d events", len(m.events))
	}
	if m := step(); len(m.events) != 5 || !strings.Contains(m.view.Why, "does not parse") {
		t.Fatalf("a bad line: %d events, %+v", len(m.events), m.view)
	}
	if m := step(); !m.view.Lost || len(m.partial) != 40 {
		t.Fatalf("a gap: %+v, partial %d", m.view, len(m.partial))
	}
	if m := step(); m.partial != nil || !strings.Contains(m.view.Why, "longer than") {
		t.Fatalf("an endless line: partial %d bytes, %+v", len(m.partial), m.view)
	}
	if m := step(); len(m.events) != 10 || m.events[9].Name != "e119" || m.window != 2 {
		t.Fatalf("MaxEvents: %d events, the last %q, window %d", len(m.events), m.events[len(m.events)-1].Name, m.window)
	}
}
