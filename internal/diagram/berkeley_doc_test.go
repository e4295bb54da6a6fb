package diagram

import (
	"bytes"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/internal/testkit/docdiagram"
	"github.com/synclab/synclab/internal/trace"
	"github.com/synclab/synclab/pkg/clock"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/timesync/berkeley"
)

// TestBerkeleyDocDiagram draws the docs' time-synchronisation diagram: one
// Berkeley round of the notes' example, four machines whose clocks are
// apart (the notes' 3:00, 3:25, 2:50 and 3:10 as milliseconds), on the
// simulator: the master's polls, every member's reading, the
// adjustments and their acknowledgements. The round drawn starts at the
// master's first polls after its first round (which waits for its
// start); the election of the master before it is not the story.
func TestBerkeleyDocDiagram(t *testing.T) {
	s := sim.New(sim.Config{Seed: 1, DefaultLink: sim.LANLink()})
	ids := []uint32{1, 2, 3, 4}
	offsets := []time.Duration{0, 25 * time.Millisecond, -10 * time.Millisecond, 10 * time.Millisecond}
	for i, id := range ids {
		s.AddNode(id, netip.AddrPort{}, func(env core.Env) core.Core {
			env.Members, env.Rand = ids, s.NewRand()
			c, err := berkeley.New(env, berkeley.Config{})
			if err != nil {
				t.Fatalf("node %d: %v", id, err)
			}
			return c
		}, clock.SimConfig{Offset: offsets[i]})
	}
	r := RecordSim(t, s, "timed")
	s.Start()
	s.Run(3 * time.Second)
	all := r.Draw(t, s, "", "")
	// The second round: the first waits out the new master's start.
	var polls []time.Time
	for _, e := range all.Events {
		if e.Ev == trace.EvSend && e.Kind == "clock_poll" {
			polls = append(polls, e.T)
		}
	}
	slices.SortFunc(polls, time.Time.Compare)
	if len(polls) == 0 {
		t.Fatal("no poll in 3 s")
	}
	poll := polls[len(polls)-1]
	for _, p := range polls {
		if p.Sub(polls[0]) >= 500*time.Millisecond {
			poll = p
			break
		}
	}
	start := all.Start
	files, err := SimFiles(s, r.bufs) // closed already by Draw: read again
	if err != nil {
		t.Fatal(err)
	}
	from := poll.Sub(start)
	d, err := Build(Window(files, from, from+100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, m := range d.Messages {
		if m.Send >= 0 && m.Recv >= 0 {
			kinds[m.Kind]++
		}
	}
	// Three polls of three members, their readings, three adjustments
	// and their acknowledgements.
	if kinds["clock_poll"] < 3 || kinds["clock_reading"] < 3 || kinds["clock_adjust"] != 3 || kinds["clock_adjust_ack"] != 3 {
		t.Errorf("the round drawn holds %v", kinds)
	}
	var svg bytes.Buffer
	if err := d.WriteSVG(&svg, Options{}); err != nil {
		t.Fatal(err)
	}
	docdiagram.Check(t, "time-berkeley", svg.Bytes())
}
