package liveness

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/wire"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// newCore builds member id of members at t0 (no random phase unless rnd).
func newCore(t *testing.T, id uint32, members []uint32, cfg Config, rnd ...*rand.Rand) *Core {
	t.Helper()
	env := core.Env{ID: id, Members: members, Now: t0}
	if len(rnd) > 0 {
		env.Rand = rnd[0]
	}
	c, err := New(env, cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c
}

func heartbeat(t *testing.T, from uint32, alive uint32, at time.Time) core.Message {
	t.Helper()
	hb := wire.Heartbeat{Interval: 100, Alive: alive}
	p, err := hb.AppendBinary(nil)
	if err != nil {
		t.Fatal(err)
	}
	return core.Message{From: from, Kind: wire.KindHeartbeat, Payload: p, Time: at}
}

func TestConfigValidate(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	tests := []struct {
		name    string
		id      uint32
		members []uint32
		cfg     Config
		field   string // "" = valid
		check   func(t *testing.T, c Config)
	}{
		{name: "defaults", id: 1, members: []uint32{1, 2},
			check: func(t *testing.T, c Config) {
				if c.Heartbeat != ms(100) || c.SuspectAfter != ms(500) {
					t.Errorf("defaults %+v", c)
				}
			}},
		{name: "suspect defaults to 5x heartbeat", id: 1, members: []uint32{1}, cfg: Config{Heartbeat: ms(40)},
			check: func(t *testing.T, c Config) {
				if c.SuspectAfter != ms(200) {
					t.Errorf("SuspectAfter = %v, want 200ms", c.SuspectAfter)
				}
			}},
		{name: "LAN profile", id: 3, members: []uint32{3, 1}, cfg: DefaultLANConfig(),
			check: func(t *testing.T, c Config) {
				if c.Heartbeat != ms(100) {
					t.Errorf("LAN heartbeat every %v, want 100ms", c.Heartbeat)
				}
			}},
		{name: "a heartbeat that is no multiple of anything is kept as given", id: 1, members: []uint32{1}, cfg: Config{Heartbeat: ms(55)},
			check: func(t *testing.T, c Config) {
				if c.Heartbeat != ms(55) || c.SuspectAfter != ms(275) {
					t.Errorf("config %+v", c)
				}
			}},
		{name: "ID 0", id: 0, members: []uint32{1}, field: "ID"},
		{name: "self not a member", id: 4, members: []uint32{1, 2}, field: "Members"},
		{name: "duplicate member", id: 1, members: []uint32{1, 2, 2}, field: "Members"},
		{name: "member 0", id: 1, members: []uint32{0, 1}, field: "Members"},
		{name: "suspect equal to heartbeat", id: 1, members: []uint32{1}, cfg: Config{Heartbeat: ms(50), SuspectAfter: ms(50)}, field: "SuspectAfter"},
		{name: "suspect below heartbeat", id: 1, members: []uint32{1}, cfg: Config{Heartbeat: ms(50), SuspectAfter: ms(30)}, field: "SuspectAfter"},
		{name: "negative heartbeat", id: 1, members: []uint32{1}, cfg: Config{Heartbeat: -ms(1)}, field: "Heartbeat"},
		{name: "heartbeat below a millisecond", id: 1, members: []uint32{1}, cfg: Config{Heartbeat: time.Microsecond}, field: "Heartbeat"},
		{name: "interval beyond 32-bit ms", id: 1, members: []uint32{1}, cfg: Config{Heartbeat: 2000 * time.Hour}, field: "Heartbeat"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := New(core.Env{ID: tt.id, Members: tt.members, Now: t0}, tt.cfg)
			if tt.field == "" {
				if err != nil {
					t.Fatalf("New: %v", err)
				}
				if tt.check != nil {
					tt.check(t, c.Config())
				}
				return
			}
			var ce *ConfigError
			if !errors.As(err, &ce) || ce.Field != tt.field {
				t.Fatalf("New = %v, want a ConfigError on %s", err, tt.field)
			}
		})
	}
}

// op is one step of a scripted scenario.
type op struct {
	ticks int    // tick this many times
	from  uint32 // then, when non-zero, receive a heartbeat from this member
}

func TestScenarios(t *testing.T) {
	base := Config{Heartbeat: 20 * time.Millisecond, SuspectAfter: 50 * time.Millisecond}
	tests := []struct {
		name   string
		script []op
		events []string // "member_up 2", "member_down 3" in order
		states map[uint32]State
		flaps  map[uint32]uint64
	}{
		{
			name:   "nothing heard stays unknown before SuspectAfter",
			script: []op{{ticks: 4}},
			states: map[uint32]State{1: Alive, 2: Unknown, 3: Unknown},
		},
		{
			name:   "never heard is down at SuspectAfter",
			script: []op{{ticks: 5}},
			events: []string{"member_down 2", "member_down 3"},
			states: map[uint32]State{2: Suspect, 3: Suspect},
		},
		{
			name:   "heard is up, stays up while heard",
			script: []op{{from: 2}, {ticks: 4, from: 2}, {ticks: 4, from: 2}, {ticks: 4}},
			events: []string{"member_up 2", "member_down 3"},
			states: map[uint32]State{2: Alive, 3: Suspect},
		},
		{
			name:   "silent for SuspectAfter is suspected, not one tick before",
			script: []op{{ticks: 1, from: 2}, {ticks: 4}},
			events: []string{"member_up 2", "member_down 3"},
			states: map[uint32]State{2: Alive},
		},
		{
			name:   "silent for SuspectAfter is suspected",
			script: []op{{ticks: 1, from: 2}, {ticks: 5}},
			events: []string{"member_up 2", "member_down 3", "member_down 2"},
			states: map[uint32]State{2: Suspect},
		},
		{
			name:   "heard again is a flap",
			script: []op{{from: 3}, {ticks: 6, from: 3}, {ticks: 4, from: 3}},
			events: []string{"member_up 3", "member_down 2", "member_down 3", "member_up 3"},
			states: map[uint32]State{2: Suspect, 3: Alive},
			flaps:  map[uint32]uint64{2: 0, 3: 1},
		},
		{
			name:   "unknown to up is not a flap",
			script: []op{{ticks: 3, from: 2}},
			events: []string{"member_up 2"},
			flaps:  map[uint32]uint64{2: 0},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCore(t, 1, []uint32{1, 2, 3}, base)
			var got []string
			now := t0
			for _, o := range tt.script {
				for range o.ticks {
					now = now.Add(10 * time.Millisecond)
					c.Tick(now)
				}
				if o.from != 0 {
					if err := c.Step(heartbeat(t, o.from, 3, now)); err != nil {
						t.Fatalf("Step: %v", err)
					}
				}
				for _, e := range c.Ready().Events {
					got = append(got, fmt.Sprint(e.Name, " ", e.Args[1]))
					if e.Args[0] != "member" {
						t.Errorf("event %s args %v do not start with member", e.Name, e.Args)
					}
				}
			}
			if strings.Join(got, ",") != strings.Join(tt.events, ",") {
				t.Errorf("events\n got %v\nwant %v", got, tt.events)
			}
			for id, want := range tt.states {
				if s := c.State(id); s != want {
					t.Errorf("State(%d) = %v, want %v", id, s, want)
				}
			}
			st := c.StatusView()
			for id, want := range tt.flaps {
				for _, m := range st.Members {
					if m.ID == id && m.Flaps != want {
						t.Errorf("member %d flaps = %d, want %d", id, m.Flaps, want)
					}
				}
			}
		})
	}
}

func TestHeartbeatSchedule(t *testing.T) {
	c := newCore(t, 2, []uint32{1, 2, 3}, Config{Heartbeat: 30 * time.Millisecond, SuspectAfter: 100 * time.Millisecond})
	var at []int
	for i := 1; i <= 10; i++ {
		c.Tick(t0.Add(time.Duration(i-1) * 10 * time.Millisecond)) // the first at the start
		if i == 2 {
			if err := c.Step(heartbeat(t, 1, 2, t0)); err != nil {
				t.Fatal(err)
			}
		}
		for _, m := range c.Ready().Messages {
			at = append(at, i)
			if m.To != core.Broadcast || m.Kind != wire.KindHeartbeat || m.Stream {
				t.Fatalf("heartbeat message %+v", m)
			}
			var hb wire.Heartbeat
			if err := hb.UnmarshalBinary(m.Payload); err != nil {
				t.Fatal(err)
			}
			wantAlive := uint32(1)
			if i > 2 {
				wantAlive = 2 // self and member 1
			}
			if hb.Interval != 30 || hb.Alive != wantAlive {
				t.Errorf("tick %d: heartbeat %+v, want interval 30 ms alive %d", i, hb, wantAlive)
			}
		}
	}
	if want := []int{1, 4, 7, 10}; !slices.Equal(at, want) { // due at t0, +30ms, +60ms, +90ms
		t.Errorf("heartbeats at ticks %v, want %v", at, want)
	}
	if s := c.StatusView().Sent; s != 4 {
		t.Errorf("Sent = %d, want 4", s)
	}
}

func TestRandomPhase(t *testing.T) {
	const hb = 10
	phases := map[int]bool{}
	for seed := range uint64(40) {
		c := newCore(t, 1, []uint32{1, 2}, Config{Heartbeat: hb * 10 * time.Millisecond}, rand.New(rand.NewPCG(seed, 1)))
		first := -1
		for i := 0; i <= 2*hb && first < 0; i++ {
			now := t0.Add(time.Duration(i) * 10 * time.Millisecond)
			if d := c.Deadline(); d.Before(t0) || !d.Before(t0.Add(hb*10*time.Millisecond)) {
				t.Fatalf("seed %d: Deadline %v not within the first interval", seed, d.Sub(t0))
			}
			c.Tick(now)
			if len(c.Ready().Messages) > 0 {
				first = i
			}
		}
		if first < 0 || first > hb {
			t.Fatalf("seed %d: first heartbeat at +%d ticks, want 0..%d", seed, first, hb)
		}
		phases[first] = true
	}
	if len(phases) < hb/2 {
		t.Errorf("only %d distinct phases over 40 seeds: the phase is not random", len(phases))
	}
}

func TestStepRejects(t *testing.T) {
	c := newCore(t, 1, []uint32{1, 2}, Config{})
	good := heartbeat(t, 2, 2, t0)
	tests := []struct {
		name string
		m    core.Message
		want error
	}{
		{"unknown member", func() core.Message { m := good; m.From = 9; return m }(), core.ErrUnknownMember},
		{"own ID", func() core.Message { m := good; m.From = 1; return m }(), ErrFromSelf},
		{"other kind", func() core.Message { m := good; m.Kind = wire.KindElection; return m }(), core.ErrUnexpectedKind},
		{"short payload", func() core.Message { m := good; m.Payload = m.Payload[:5]; return m }(), wire.DecodeTruncated},
		{"long payload", func() core.Message { m := good; m.Payload = append(m.Payload, 0); return m }(), wire.DecodeBadLength},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := c.Step(tt.m)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Step = %v, want %v", err, tt.want)
			}
			if c.State(2) != Unknown {
				t.Fatalf("a refused frame changed the verdict to %v", c.State(2))
			}
		})
	}
	if err := c.StepDatagram(core.Datagram{}); !errors.Is(err, core.ErrUnexpectedDatagram) {
		t.Errorf("StepDatagram = %v", err)
	}
	if !c.Ready().Empty() {
		t.Error("refused input produced output")
	}
}

func TestStatusJSON(t *testing.T) {
	c := newCore(t, 1, []uint32{3, 1, 2}, Config{Heartbeat: 20 * time.Millisecond, SuspectAfter: 40 * time.Millisecond})
	heard := t0.Add(1234567 * time.Nanosecond)
	c.Tick(t0)
	if err := c.Step(heartbeat(t, 2, 3, heard)); err != nil {
		t.Fatal(err)
	}
	var now time.Time
	for i := range 4 {
		now = t0.Add(time.Duration(i+1) * 10 * time.Millisecond)
		c.Tick(now)
	}
	c.Tick(heard.Add(40 * time.Millisecond))                        // 40 ms of silence from 2: suspected
	if err := c.Step(heartbeat(t, 3, 1, time.Time{})); err != nil { // no receive stamp: dated by the latest local time
		t.Fatal(err)
	}
	b, err := json.Marshal(c.Status())
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		ID      uint32 `json:"id"`
		Sent    uint64 `json:"heartbeats_sent"`
		Alive   int    `json:"alive"`
		Members []map[string]any
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if got.ID != 1 || got.Sent != 3 || got.Alive != 2 || len(got.Members) != 2 {
		t.Fatalf("status %s", b)
	}
	m2, m3 := got.Members[0], got.Members[1]
	if m2["id"] != 2.0 || m2["state"] != "suspect" || m2["alive"] != false || m2["heard"] != 1.0 || m2["their_alive"] != 3.0 {
		t.Errorf("member 2: %v", m2)
	}
	if m2["last_heard"] != heard.Format(time.RFC3339Nano) {
		t.Errorf("member 2 last_heard %v, want %s", m2["last_heard"], heard.Format(time.RFC3339Nano))
	}
	if m3["state"] != "alive" || m3["last_heard"] != heard.Add(40*time.Millisecond).Format(time.RFC3339Nano) || m3["their_interval_ms"] != 100.0 {
		t.Errorf("member 3: %v", m3)
	}
	// A member never heard has no last_heard at all, not year 1.
	fresh := newCore(t, 1, []uint32{1, 2}, Config{})
	b, _ = json.Marshal(fresh.Status())
	if strings.Contains(string(b), "last_heard") || strings.Contains(string(b), "0001-01-01") {
		t.Errorf("fresh status shows a zero time: %s", b)
	}
}

// TestTickAnyTime: an early Tick does nothing; a Tick after a long sleep
// (the process was stopped) sends one heartbeat, not the missed ones in a
// burst, schedules the next a full interval later, and suspects nobody for
// the silence it did not listen to: a member still silent half a timeout
// later is suspected then.
func TestTickAnyTime(t *testing.T) {
	c := newCore(t, 1, []uint32{1, 2}, Config{Heartbeat: 20 * time.Millisecond, SuspectAfter: 50 * time.Millisecond})
	c.Tick(t0)
	if err := c.Step(heartbeat(t, 2, 2, t0)); err != nil {
		t.Fatal(err)
	}
	c.Ready()
	if d := c.Deadline(); !d.Equal(t0.Add(20 * time.Millisecond)) {
		t.Fatalf("Deadline = +%v, want +20ms", d.Sub(t0))
	}
	c.Tick(t0.Add(5 * time.Millisecond)) // early
	if rd := c.Ready(); !rd.Empty() {
		t.Fatalf("early Tick produced %+v", rd)
	}
	late := t0.Add(10 * time.Second)
	c.Tick(late)
	rd := c.Ready()
	if len(rd.Messages) != 1 || len(rd.Events) != 0 {
		t.Fatalf("late Tick: %d messages, events %v", len(rd.Messages), rd.Events)
	}
	if d := c.Deadline(); !d.Equal(late.Add(20 * time.Millisecond)) {
		t.Errorf("Deadline after a late Tick = %v after it, want 20ms", d.Sub(late))
	}
	for now := late; !now.After(late.Add(25 * time.Millisecond)); now = c.Deadline() {
		c.Tick(now)
	}
	rd = c.Ready()
	if len(rd.Events) != 1 || rd.Events[0].Name != EventMemberDown {
		t.Fatalf("member 2 not suspected half a timeout after the stall: %v", rd.Events)
	}
	if since := c.StatusView().Members[0].Since; !since.Equal(late.Add(25 * time.Millisecond)) {
		t.Errorf("suspected since %v after the stall, want 25ms", since.Sub(late))
	}
}
