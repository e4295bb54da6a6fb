package liveness

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/wire"
)

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

// runTo ticks c at its own deadlines up to end (as the daemon's loop does),
// stepping steps on the way, and returns every message it sent with when.
type sent struct {
	at time.Duration
	m  core.Message
}

func runTo(t *testing.T, c *Core, end time.Duration, steps map[time.Duration]core.Message) []sent {
	t.Helper()
	var out []sent
	now := time.Duration(0)
	for now <= end {
		next := c.Deadline().Sub(t0)
		for at := range steps {
			if at >= now && at < next {
				next = at
			}
		}
		if next > end {
			break
		}
		now = next
		if m, ok := steps[now]; ok {
			delete(steps, now)
			if err := c.Step(m); err != nil {
				t.Fatalf("step at %v: %v", now, err)
			}
		} else {
			c.Tick(t0.Add(now))
		}
		for _, m := range c.Ready().Messages {
			out = append(out, sent{now, m})
		}
	}
	return out
}

func probeMsg(t *testing.T, from uint32, at time.Time) core.Message {
	m := heartbeat(t, from, 2, at)
	m.Kind = wire.KindHeartbeatProbe
	return m
}

// A member that misses a heartbeat is probed every Probe from Heartbeat +
// Probe of silence until its suspicion, which comes when it came without
// probes: a crashed member is suspected 500 ms after its last sign of
// life, having been sent 19 probes; one that answers is probed no more.
func TestProbeSchedule(t *testing.T) {
	cfg := QuietLANConfig()
	c := newCore(t, 1, []uint32{1, 2}, cfg)
	// Member 2 is heard at 0 (before our first tick) and never again.
	if err := c.Step(heartbeat(t, 2, 2, t0)); err != nil {
		t.Fatal(err)
	}
	var probes []time.Duration
	var beats int
	for _, s := range runTo(t, c, ms(1000), nil) {
		switch {
		case s.m.Kind == wire.KindHeartbeatProbe && s.m.To == 2:
			probes = append(probes, s.at)
		case s.m.Kind == wire.KindHeartbeat && s.m.To == core.Broadcast:
			beats++
		default:
			t.Fatalf("at %v: %+v", s.at, s.m)
		}
	}
	if len(probes) != 19 || probes[0] != ms(310) || probes[18] != ms(490) {
		t.Errorf("probes at %v, want 19 from 310ms to 490ms, every 10ms", probes)
	}
	if beats != 4 { // 0, 300, 600, 900 ms
		t.Errorf("%d heartbeats in a second, want 4", beats)
	}
	if st := c.State(2); st != Suspect {
		t.Fatalf("member 2 %v, want suspect", st)
	}
	if v, _ := c.Detector().Member(2); !v.Since.Equal(t0.Add(cfg.SuspectAfter)) {
		t.Errorf("suspected at %v, want at 500ms", v.Since.Sub(t0))
	}
	if st := c.StatusView(); st.Probes != 19 || st.ProbeMS != 10 {
		t.Errorf("status: %d probes, every %d ms", st.Probes, st.ProbeMS)
	}
	var b strings.Builder
	if err := c.StatusView().WriteTable(&b); err != nil || !strings.Contains(b.String(), "heartbeat every 300ms, suspect after 500ms, 4 sent, a missed one probed every 10ms (19 probes sent, 0 answered)") {
		t.Errorf("table %v:\n%s", err, b.String())
	}

	// A member that answers the second probe is probed no more until
	// it misses its next heartbeat.
	c = newCore(t, 1, []uint32{1, 2}, cfg)
	probes = nil
	steps := map[time.Duration]core.Message{0: heartbeat(t, 2, 2, t0), ms(325): heartbeat(t, 2, 2, t0.Add(ms(325)))}
	for _, s := range runTo(t, c, ms(700), steps) {
		if s.m.Kind == wire.KindHeartbeatProbe {
			probes = append(probes, s.at)
		}
	}
	if want := []time.Duration{ms(310), ms(320), ms(635), ms(645), ms(655), ms(665), ms(675), ms(685), ms(695)}; !slices.Equal(probes, want) {
		t.Errorf("probes at %v, want %v", probes, want)
	}
}

// Heartbeats that come on time cost no probe: an idle second is 3-4
// heartbeats and nothing else, and the core asks to run only for them.
func TestProbeNoneWhileHeard(t *testing.T) {
	c := newCore(t, 1, []uint32{1, 2, 3}, QuietLANConfig())
	steps := map[time.Duration]core.Message{}
	for at := 0; at <= 3000; at += 300 {
		steps[ms(at+1)] = heartbeat(t, 2, 3, t0.Add(ms(at+1)))
		steps[ms(at+150)] = heartbeat(t, 3, 3, t0.Add(ms(at+150)))
	}
	out := runTo(t, c, ms(3000), steps)
	if len(out) != 11 { // 0, 300, ..., 3000 ms
		t.Errorf("%d messages in 3 s: %+v", len(out), out)
	}
	for _, s := range out {
		if s.m.Kind != wire.KindHeartbeat || s.m.To != core.Broadcast {
			t.Errorf("at %v: %+v", s.at, s.m)
		}
	}
	if c.AliveCount() != 3 {
		t.Errorf("alive %d", c.AliveCount())
	}
}

// A probe is a sign of life, answered with a heartbeat to the prober
// alone (also by a member that does not probe itself), at most once per
// answerSpacing.
func TestProbeAnswered(t *testing.T) {
	c := newCore(t, 2, []uint32{1, 2, 3}, DefaultLANConfig())
	c.Tick(t0)
	c.Ready()
	if err := c.Step(probeMsg(t, 1, t0.Add(ms(5)))); err != nil {
		t.Fatal(err)
	}
	rd := c.Ready()
	if len(rd.Messages) != 1 || rd.Messages[0].To != 1 || rd.Messages[0].Kind != wire.KindHeartbeat {
		t.Fatalf("answer: %+v", rd.Messages)
	}
	var hb wire.Heartbeat
	if err := hb.UnmarshalBinary(rd.Messages[0].Payload); err != nil || hb.Interval != 100 || hb.Alive != 2 {
		t.Errorf("answer %+v %v: want this member's interval and 2 alive (itself and the prober)", hb, err)
	}
	if !c.Alive(1) {
		t.Error("a probe is a sign of life")
	}
	// A flood: the second probe within answerSpacing is not answered.
	if err := c.Step(probeMsg(t, 1, t0.Add(ms(5)+answerSpacing/2))); err != nil {
		t.Fatal(err)
	}
	if rd := c.Ready(); len(rd.Messages) != 0 {
		t.Errorf("answered a probe %v after the last: %+v", answerSpacing/2, rd.Messages)
	}
	if err := c.Step(probeMsg(t, 1, t0.Add(ms(15)))); err != nil {
		t.Fatal(err)
	}
	if rd := c.Ready(); len(rd.Messages) != 1 {
		t.Errorf("the next probe, 10 ms later: %+v", rd.Messages)
	}
	if st := c.StatusView(); st.Answered != 2 {
		t.Errorf("answered %d", st.Answered)
	}
	if err := c.Step(probeMsg(t, 2, t0.Add(ms(20)))); !errors.Is(err, ErrFromSelf) {
		t.Errorf("own probe: %v", err)
	}
	if err := c.Step(probeMsg(t, 9, t0.Add(ms(20)))); !errors.Is(err, core.ErrUnknownMember) {
		t.Errorf("stranger's probe: %v", err)
	}
	bad := probeMsg(t, 1, t0.Add(ms(30)))
	bad.Payload = bad.Payload[:3]
	if err := c.Step(bad); err == nil {
		t.Error("a truncated probe was taken")
	}
}

func TestProbeConfig(t *testing.T) {
	for _, c := range []struct {
		cfg   Config
		field string
	}{
		{Config{Heartbeat: ms(300), SuspectAfter: ms(500), Probe: ms(200)}, "Probe"},
		{Config{Heartbeat: ms(300), SuspectAfter: ms(500), Probe: time.Microsecond}, "Probe"},
		{Config{Heartbeat: ms(300), SuspectAfter: ms(500), Probe: -ms(1)}, "Probe"},
		{QuietLANConfig(), ""},
	} {
		_, err := New(core.Env{ID: 1, Members: []uint32{1, 2}, Now: t0}, c.cfg)
		var ce *ConfigError
		switch {
		case c.field == "" && err != nil:
			t.Errorf("%+v: %v", c.cfg, err)
		case c.field != "" && (!errors.As(err, &ce) || ce.Field != c.field):
			t.Errorf("%+v: %v, want a ConfigError on %s", c.cfg, err, c.field)
		}
	}
}
