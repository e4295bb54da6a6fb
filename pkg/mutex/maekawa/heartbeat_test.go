package maekawa_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/liveness"
	"github.com/synclab/synclab/pkg/mutex"
	"github.com/synclab/synclab/pkg/mutex/internal/mutextest"
	"github.com/synclab/synclab/pkg/mutex/maekawa"
	"github.com/synclab/synclab/pkg/wire"
)

// TestMixedHeartbeats: in a cluster being upgraded, member 3 runs the
// mutexd before 2026-12-06 (Maekawa beat every 1.5 --heartbeat and took
// a member for down after 3.5), the others the current one (1.25 and 3).
// One of 3's heartbeats to member 1 is lost and the next comes late.
// Member 1 gives 3 two of its heartbeats and half a --heartbeat (3.5 s),
// as 3 does itself: 300 ms late is in time, 600 ms late is not. Before,
// member 1 took 3 for down after 3 s of silence, so one lost heartbeat of
// an old member did.
func TestMixedHeartbeats(t *testing.T) {
	opt := mutex.Options{Lease: 3 * time.Second, Heartbeat: time.Second}
	f := maekawa.Factory
	f.New = func(env core.Env, opt mutex.Options) (mutex.Algorithm, error) {
		cfg, err := maekawa.ConfigFor(env, opt, 0)
		if err != nil {
			return nil, err
		}
		if env.ID == 3 {
			cfg.HeartbeatInterval, cfg.DeadAfter = 1500*time.Millisecond, 3500*time.Millisecond
		}
		return maekawa.New(cfg)
	}
	for _, tc := range []struct {
		late time.Duration
		down bool
	}{{300 * time.Millisecond, false}, {600 * time.Millisecond, true}} {
		t.Run("late"+tc.late.String(), func(t *testing.T) {
			link := sim.LinkConfig{Delay: 200 * time.Microsecond}
			s := mutextest.NewLockSim(t, f, opt, 5, 1, link, 4*time.Second)
			beats := 0 // member 3's heartbeats to member 1
			s.OnSend(func(f sim.SentFrame) {
				if f.From == 3 && f.Frame.Kind == wire.KindHeartbeat {
					beats++
				}
			})
			next := func() { // run until member 3 has just sent a heartbeat
				for n := beats; beats == n; {
					s.Run(time.Millisecond)
				}
			}
			next()
			s.Cut(3, 1)
			next() // lost
			s.Heal()
			s.SetLink(3, 1, sim.LinkConfig{Delay: tc.late})
			next() // late
			s.Run(tc.late + time.Millisecond)
			s.SetLink(3, 1, link)
			s.Run(2 * time.Second)
			var downs []time.Duration
			for _, e := range s.EventsNamed(liveness.EventMemberDown) {
				if m, _ := e.Arg("member"); e.Node == 1 && m == uint32(3) {
					downs = append(downs, e.At)
				}
			}
			if (len(downs) > 0) != tc.down {
				t.Errorf("member 1 took member 3 for down at %v, want down: %v\n%s", downs, tc.down, s.Log())
			}
			var st mutex.Status
			s.Do(1, func(c core.Core) { st = c.(*maekawa.Core).Report() })
			d := st.Detail.(maekawa.Detail)
			if want := []maekawa.SlowBeat{{ID: 3, IntervalMS: 1500, DownAfterMS: 3500}}; !slices.Equal(d.SlowBeats, want) {
				t.Errorf("member 1's slow heartbeats: %+v, want %+v", d.SlowBeats, want)
			}
			raw, err := json.Marshal(d)
			if err != nil {
				t.Fatal(err)
			}
			lines, err := maekawa.StatusLines(st, raw)
			if err != nil {
				t.Fatal(err)
			}
			t.Log(strings.Join(lines, "\n"))
			if !slices.ContainsFunc(lines, func(l string) bool {
				return strings.HasPrefix(l, "Heartbeat: member 3 beats every 1500 ms") && strings.Contains(l, "down after 3500 ms")
			}) {
				t.Errorf("member 1's status does not name member 3's slow heartbeats:\n%s", strings.Join(lines, "\n"))
			}
			warned := 0
			for _, e := range s.EventsNamed(maekawa.EventSlowHeartbeats) {
				if m, _ := e.Arg("member"); e.Node != 3 && m != uint32(3) {
					t.Errorf("member %d warned of member %v's heartbeats: %s", e.Node, m, e.Msg)
				}
				if e.Node == 1 && e.Warn {
					warned++
					t.Log(e.Msg)
				}
			}
			if warned != 1 {
				t.Errorf("member 1 warned %d times of member 3's heartbeats, want once", warned)
			}
		})
	}
}

// TestHeartbeatInterval: a member's silence timeout follows the interval
// its heartbeats say, up to DeadAfter counted (a member saying it beats
// once an hour is taken for down after 2 DeadAfter and the allowance),
// and back to DeadAfter when it beats in step again.
func TestHeartbeatInterval(t *testing.T) {
	c := newCore(t, func(cfg *maekawa.Config) {
		cfg.HeartbeatInterval, cfg.DeadAfter = 1250*time.Millisecond, 3*time.Second
	})
	beat := func(ms uint32) []maekawa.SlowBeat {
		t.Helper()
		b, err := wire.Heartbeat{Interval: ms, Alive: 5}.AppendBinary(nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Step(core.Message{From: 2, To: 1, Kind: wire.KindHeartbeat, Payload: b, Time: t0}); err != nil {
			t.Fatal(err)
		}
		c.Ready()
		return c.Report().Detail.(maekawa.Detail).SlowBeats
	}
	for _, tc := range []struct {
		ms   uint32
		want []maekawa.SlowBeat
	}{
		{1250, nil},
		{1000, nil},
		{1500, []maekawa.SlowBeat{{ID: 2, IntervalMS: 1500, DownAfterMS: 3500}}},
		{3_600_000, []maekawa.SlowBeat{{ID: 2, IntervalMS: 3_600_000, DownAfterMS: 6500}}},
		{wire.MaxOmegaInterval + 1<<31, []maekawa.SlowBeat{{ID: 2, IntervalMS: wire.MaxOmegaInterval + 1<<31, DownAfterMS: 6500}}},
		{1250, nil},
	} {
		if got := beat(tc.ms); !slices.Equal(got, tc.want) {
			t.Errorf("heartbeat every %d ms: slow heartbeats %+v, want %+v", tc.ms, got, tc.want)
		}
	}
}

// TestHeartbeatIntervalFloor: a member that says it beats faster than
// this one is still given DeadAfter of silence, never less: at 1000 ms
// heartbeats two of them and the allowance would be 2.5 s, and one lost
// heartbeat would take it for down.
func TestHeartbeatIntervalFloor(t *testing.T) {
	c := newCore(t, func(cfg *maekawa.Config) {
		cfg.HeartbeatInterval, cfg.DeadAfter = 1250*time.Millisecond, 3*time.Second
	})
	stepHeartbeat(t, c, 2, 1000, t0)
	c.Tick(t0.Add(2900 * time.Millisecond))
	c.Ready()
	for _, m := range c.Report().Members {
		if m.ID == 2 && !m.Alive {
			t.Fatalf("member 2, heard 2.9 s ago beating every 1 s, taken for down (%s): want DeadAfter (3 s) of silence at least", m.State)
		}
	}
}

// TestSlowHeartbeatsWarnOnce: a member whose heartbeats' interval flips
// between in step and an hour (a forger, two daemons with one --id) is
// warned of once, when its timeout first rises; the changes after are
// said at INFO.
func TestSlowHeartbeatsWarnOnce(t *testing.T) {
	c := newCore(t, func(cfg *maekawa.Config) {
		cfg.HeartbeatInterval, cfg.DeadAfter = 1250*time.Millisecond, 3*time.Second
	})
	warned := 0
	for i := range 100 {
		ms := uint32(1250)
		if i%2 == 1 {
			ms = 3_600_000
		}
		for _, e := range stepHeartbeat(t, c, 2, ms, t0.Add(time.Duration(i)*10*time.Millisecond)) {
			if e.Name == maekawa.EventSlowHeartbeats && e.Warn {
				warned++
			}
		}
	}
	if warned != 1 {
		t.Errorf("%d warnings for 50 flips of member 2's heartbeat interval, want 1", warned)
	}
}

// TestSlowHeartbeatsWarnAgain: a member warned of, back in step, and slow
// again an hour later (upgraded, then rolled back) is warned of again.
func TestSlowHeartbeatsWarnAgain(t *testing.T) {
	c := newCore(t, func(cfg *maekawa.Config) {
		cfg.HeartbeatInterval, cfg.DeadAfter = 1250*time.Millisecond, 3*time.Second
	})
	warned := 0
	for _, hb := range []struct {
		at time.Duration
		ms uint32
	}{{0, 1500}, {time.Second, 1250}, {2 * time.Second, 1500}, {3 * time.Second, 1250}, {time.Hour + 3*time.Second, 1500}} {
		c.Tick(t0.Add(hb.at))
		for _, e := range stepHeartbeat(t, c, 2, hb.ms, t0.Add(hb.at)) {
			if e.Name == maekawa.EventSlowHeartbeats && e.Warn {
				warned++
			}
		}
	}
	if warned != 2 {
		t.Errorf("%d warnings: slow, in step, slow again within the hour, slow again an hour later; want 2", warned)
	}
}

// stepHeartbeat steps member from's heartbeat saying it beats every ms
// milliseconds, at at, and returns the events of the Ready after it.
func stepHeartbeat(t *testing.T, c *maekawa.Core, from uint32, ms uint32, at time.Time) []core.Event {
	t.Helper()
	b, err := wire.Heartbeat{Interval: ms, Alive: 5}.AppendBinary(nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Step(core.Message{From: from, To: 1, Kind: wire.KindHeartbeat, Payload: b, Time: at}); err != nil {
		t.Fatal(err)
	}
	return c.Ready().Events
}
