package central_test

import (
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/elect/bully"
	"github.com/synclab/synclab/pkg/mutex/central"
)

// detail is member id's central status.
func detail(s *sim.Sim, id uint32) central.Detail {
	return s.Core(id).(*central.Core).Report().Detail.(central.Detail)
}

// bullyDetail is member id's coordinator election's own status.
func bullyDetail(s *sim.Sim, id uint32) bully.Detail {
	return s.Core(id).(*central.Core).Election().(*bully.Core).Detail()
}

// TestCoordinatorCrashHint: a SIGKILLed coordinator's sockets are closed
// by its kernel at once, and every member's link to it says so a link
// delay later (a hint). Each member probes it (bully.HintProbes probes
// HintProbe apart) and, none answered, elects a successor: the election
// starts HintProbes x HintProbe plus the member's stagger after the
// hint, never before (the probes' silence is the evidence), and the lock
// is granted a few round trips later. Without the hint the same crash
// costs DeadAfter after the last heartbeat (1.5-2.5 s:
// TestCoordinatorCrashRecovery), whatever the phase of the beat.
func TestCoordinatorCrashHint(t *testing.T) {
	window := bully.HintProbes * central.DefaultHintProbe
	stagger := 25 * time.Millisecond // bully.FromOptions: half of the 50 ms answer timeout
	for k := range 8 {
		s := defaultCluster(t, int64(k+1))
		if got := coordinator(s); got != 5 {
			t.Fatalf("offset %d: coordinator %d, want 5", k, got)
		}
		term := detail(s, 1).Term
		s.Run(time.Duration(k) * 131 * time.Millisecond)
		s.Crash(5)
		crashed := s.Elapsed()
		s.Run(time.Millisecond) // the FIN, a link delay later
		hinted := s.Elapsed()
		for id := uint32(1); id <= 4; id++ {
			if err := s.Hint(id, 5, core.HintStreamClosed); err != nil {
				t.Fatal(err)
			}
		}
		// Nobody gives 5 up before its probes had their time.
		if s.RunUntil(func() bool { return detail(s, 4).Term != term || detail(s, 1).Coordinator != 5 }, window-time.Millisecond) {
			t.Fatalf("offset %d: an election %v after the hint, before the %v of probes", k, s.Elapsed()-hinted, window)
		}
		if !acquired(s, 1, 10*time.Second) {
			t.Fatalf("offset %d: not granted 10 s after the crash", k)
		}
		took := s.Elapsed() - crashed
		t.Logf("crash %v into the run: granted by member %d %v after it (hint %v after)", crashed.Round(time.Millisecond), coordinator(s),
			took.Round(time.Millisecond), (hinted - crashed).Round(time.Millisecond))
		if hi := (hinted - crashed) + window + stagger + 30*time.Millisecond; took > hi {
			t.Errorf("crash %v into the run: granted %v after it, want within %v (the probes, the stagger and a few round trips)", crashed.Round(time.Millisecond), took, hi)
		}
		if c := coordinator(s); c != 4 {
			t.Errorf("offset %d: successor %d, want 4 (ranked just below the dead one)", k, c)
		}
		if b := bullyDetail(s, 4); b.HintTimeouts != 1 || b.HintProbes != bully.HintProbes {
			t.Errorf("offset %d: member 4's hint counters %+v", k, b)
		}
	}
}

// TestForgedHintLiveCoordinator: hints about a live coordinator (forged
// TCP resets, or its links closing for reasons of their own), however
// many, change nothing: no election, no new term, the same coordinator,
// grants as before. Each member spends at most bully.HintProbes probes
// per LeaderTimeout on them (each answered by the coordinator), and the
// coordinator ignores hints about its members.
func TestForgedHintLiveCoordinator(t *testing.T) {
	cfg := central.DefaultLANConfig()
	dead := central.DefaultBeat(cfg.MaxLease) * 5 / 2
	for k := range 4 {
		s := defaultCluster(t, int64(k+1))
		if got := coordinator(s); got != 5 {
			t.Fatalf("offset %d: coordinator %d, want 5", k, got)
		}
		term := detail(s, 1).Term
		s.Run(time.Duration(k) * 173 * time.Millisecond)
		start := s.Elapsed()
		const flood = 6 * time.Second
		for s.Elapsed()-start < flood {
			for id := uint32(1); id <= 4; id++ {
				if err := s.Hint(id, 5, core.HintCauses[k%len(core.HintCauses)]); err != nil {
					t.Fatal(err)
				}
				if err := s.Hint(5, id, core.HintStreamClosed); err != nil {
					t.Fatal(err)
				}
			}
			s.Run(7 * time.Millisecond)
		}
		for id := uint32(1); id <= 5; id++ {
			if d := detail(s, id); d.Term != term || d.Coordinator != 5 {
				t.Fatalf("offset %d: member %d in term %d following %d after the forged hints, want term %d and 5", k, id, d.Term, d.Coordinator, term)
			}
		}
		episodes := uint64(flood/dead) + 1
		for id := uint32(1); id <= 4; id++ {
			b := bullyDetail(s, id)
			if b.HintTimeouts != 0 || b.Hints > episodes || b.HintProbes > episodes*bully.HintProbes || b.HintsCancelled != b.Hints {
				t.Errorf("offset %d: member %d's hint counters %+v: want at most %d episodes, each cancelled", k, id, b, episodes)
			}
			t.Logf("member %d: %d hints acted on, %d ignored, %d probes sent", id, b.Hints, b.HintsIgnored, b.HintProbes)
		}
		if lines, _ := statusText(t, s.Core(1).(*central.Core)); !strings.Contains(lines, "Hints    : the coordinator's port closed 3 times: 3 answered a probe") {
			t.Errorf("offset %d: member 1's status does not count the forged hints:\n%s", k, lines)
		}
		if b := bullyDetail(s, 5); b.Hints != 0 || b.HintProbes != 0 {
			t.Errorf("offset %d: the coordinator acted on hints about its members: %+v", k, b)
		}
		if !acquired(s, 1, time.Second) {
			t.Fatalf("offset %d: member 1 not granted after the forged hints", k)
		}
	}
}
