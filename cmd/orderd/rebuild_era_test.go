package main

import (
	"flag"
	"math/rand/v2"
	"net/netip"
	"testing"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/synclab/synclab/internal/daemon"
	"github.com/synclab/synclab/pkg/clock"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/order"
)

// TestRebuiltCoreNewEra: the core factory orderd hands the daemon builds
// every core after the first (a step back's rebuild, from the same state
// directory) in a submission era after the last one's, even when the
// disk holds nothing of that era (its write failed): a send of the old
// core still waiting for its submission ID must never take a new core's
// message for its own (order.Core.EraAfter).
func TestRebuiltCoreNewEra(t *testing.T) {
	set := flag.NewFlagSet("run", flag.ContinueOnError)
	for _, f := range runFlags() {
		if err := f.Apply(set); err != nil {
			t.Fatal(err)
		}
	}
	if err := set.Parse(nil); err != nil {
		t.Fatal(err)
	}
	cfg := &daemon.Config{ID: 1, Members: map[uint32]netip.AddrPort{
		1: netip.MustParseAddrPort("127.0.0.1:1"), 2: netip.MustParseAddrPort("127.0.0.1:2"), 3: netip.MustParseAddrPort("127.0.0.1:3")}}
	factory, err := build(cli.NewContext(cli.NewApp(), set, nil), cfg)
	if err != nil {
		t.Fatal(err)
	}
	env := core.Env{ID: 1, Members: []uint32{1, 2, 3}, Now: time.Unix(1e9, 0), Rand: rand.New(rand.NewPCG(1, 1)), Lamport: new(clock.Lamport)}
	var eras []uint64
	for range 3 {
		c, err := factory(env) // the same (empty) state each time
		if err != nil {
			t.Fatal(err)
		}
		eras = append(eras, c.(*order.Core).Era())
	}
	if eras[1] <= eras[0] || eras[2] <= eras[1] {
		t.Fatalf("cores built from the same state had submission eras %v, want each after the last", eras)
	}
}
