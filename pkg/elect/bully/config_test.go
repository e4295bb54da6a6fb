package bully

import (
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/elect"
)

func TestConfigValidate(t *testing.T) {
	three := []Member{{ID: 1}, {ID: 2}, {ID: 3}}
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	for _, tc := range []struct {
		name string
		self uint32
		mod  func(*Config)
		err  string // substring; empty: valid
	}{
		{"defaults", 1, func(c *Config) {}, ""},
		{"zero id", 0, func(c *Config) {}, "ID must be > 0"},
		{"no members", 1, func(c *Config) { c.Members = nil }, "empty member list"},
		{"self missing", 9, func(c *Config) {}, "not in the member list"},
		{"member zero", 1, func(c *Config) { c.Members = append(c.Members, Member{}) }, "reserved"},
		{"duplicate", 1, func(c *Config) { c.Members = append(c.Members, Member{ID: 2, Priority: 1}) }, "listed twice"},
		{"negative", 1, func(c *Config) { c.AnswerTimeout = -ms(1) }, "AnswerTimeout -1ms"},
		{"below a millisecond", 1, func(c *Config) { c.Heartbeat = time.Microsecond }, "Heartbeat 1µs"},
		{"leader timeout not above heartbeat", 1, func(c *Config) { c.Heartbeat, c.LeaderTimeout = ms(100), ms(100) }, "must exceed Heartbeat"},
		{"coordinator timeout not above answer", 1, func(c *Config) { c.AnswerTimeout, c.CoordinatorTimeout = ms(300), ms(300) }, "must exceed AnswerTimeout"},
		{"coordinator timeout not above heartbeat", 1, func(c *Config) { c.Heartbeat, c.LeaderTimeout, c.CoordinatorTimeout = ms(300), ms(900), ms(250) }, "must exceed Heartbeat"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Config{Members: three}
			tc.mod(&c)
			err := c.validate(tc.self, nil)
			switch {
			case tc.err == "" && err != nil:
				t.Fatalf("unexpected error %v", err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("error %v, want one containing %q", err, tc.err)
			}
			if err == nil {
				d := DefaultLANConfig()
				if c.Heartbeat != d.Heartbeat || c.LeaderTimeout != d.LeaderTimeout ||
					c.Stagger != d.Stagger || c.AnswerTimeout != d.AnswerTimeout ||
					c.CoordinatorTimeout != d.CoordinatorTimeout {
					t.Errorf("defaults not filled: %+v", c)
				}
			}
		})
	}
}

func TestConfigMembersCopied(t *testing.T) {
	ms := []Member{{ID: 1}, {ID: 2}}
	b, err := New(core.Env{ID: 1}, Config{Members: ms})
	if err != nil {
		t.Fatal(err)
	}
	ms[1].Priority = 99 // the caller's slice is not the core's
	if b.Report().Members[1].Priority != 0 {
		t.Error("core shares the caller's member slice")
	}
}

// TestFromOptions: the operator's durations are used as given (55 ms is 55
// ms), the other timeouts keep electd's proportions, and the Env's members
// are ranked by the priorities.
func TestFromOptions(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	c := FromOptions([]uint32{1, 2, 3}, elect.Options{Heartbeat: ms(55), LeaderTimeout: ms(401), AnswerTimeout: ms(30), Priorities: map[uint32]uint32{2: 7}})
	want := Config{Members: []Member{{ID: 1}, {ID: 2, Priority: 7}, {ID: 3}},
		Heartbeat: ms(55), LeaderTimeout: ms(401), AnswerTimeout: ms(30), CoordinatorTimeout: ms(140), Stagger: ms(15)}
	if c.Heartbeat != want.Heartbeat || c.LeaderTimeout != want.LeaderTimeout || c.AnswerTimeout != want.AnswerTimeout ||
		c.CoordinatorTimeout != want.CoordinatorTimeout || c.Stagger != want.Stagger || len(c.Members) != 3 || c.Members[1] != want.Members[1] {
		t.Fatalf("FromOptions = %+v\nwant %+v", c, want)
	}
	if err := c.validate(1, []uint32{1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	// electd's defaults give the timeouts it always ran with.
	d := FromOptions([]uint32{1}, elect.Options{Heartbeat: ms(50), LeaderTimeout: ms(400), AnswerTimeout: ms(50)})
	if d.CoordinatorTimeout != ms(150) || d.Stagger != ms(25) {
		t.Errorf("electd defaults: coordinator %v, stagger %v", d.CoordinatorTimeout, d.Stagger)
	}
}
