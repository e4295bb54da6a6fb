package bully

import (
	"strings"
	"testing"
)

func TestConfigValidate(t *testing.T) {
	three := []Member{{ID: 1}, {ID: 2}, {ID: 3}}
	for _, tc := range []struct {
		name string
		mod  func(*Config)
		err  string // substring; empty: valid
	}{
		{"defaults", func(c *Config) {}, ""},
		{"zero id", func(c *Config) { c.ID = 0 }, "ID must be > 0"},
		{"no members", func(c *Config) { c.Members = nil }, "empty member list"},
		{"self missing", func(c *Config) { c.ID = 9 }, "not in the member list"},
		{"member zero", func(c *Config) { c.Members = append(c.Members, Member{}) }, "reserved"},
		{"duplicate", func(c *Config) { c.Members = append(c.Members, Member{ID: 2, Priority: 1}) }, "listed twice"},
		{"negative", func(c *Config) { c.AnswerTimeoutTicks = -1 }, "AnswerTimeoutTicks = -1"},
		{"leader timeout not above heartbeat", func(c *Config) { c.HeartbeatTicks, c.LeaderTimeoutTicks = 10, 10 }, "must exceed HeartbeatTicks"},
		{"coordinator timeout not above answer", func(c *Config) { c.AnswerTimeoutTicks, c.CoordinatorTimeoutTicks = 30, 30 }, "must exceed AnswerTimeoutTicks"},
		{"coordinator timeout not above heartbeat", func(c *Config) { c.HeartbeatTicks, c.LeaderTimeoutTicks, c.CoordinatorTimeoutTicks = 30, 90, 25 }, "must exceed HeartbeatTicks"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Config{ID: 1, Members: three}
			tc.mod(&c)
			err := c.validate()
			switch {
			case tc.err == "" && err != nil:
				t.Fatalf("unexpected error %v", err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("error %v, want one containing %q", err, tc.err)
			}
			if err == nil {
				d := DefaultLANConfig()
				if c.HeartbeatTicks != d.HeartbeatTicks || c.LeaderTimeoutTicks != d.LeaderTimeoutTicks ||
					c.StaggerTicks != d.StaggerTicks || c.AnswerTimeoutTicks != d.AnswerTimeoutTicks ||
					c.CoordinatorTimeoutTicks != d.CoordinatorTimeoutTicks || c.Rand == nil {
					t.Errorf("defaults not filled: %+v", c)
				}
			}
		})
	}
}

func TestConfigMembersCopied(t *testing.T) {
	ms := []Member{{ID: 1}, {ID: 2}}
	b, err := New(Config{ID: 1, Members: ms})
	if err != nil {
		t.Fatal(err)
	}
	ms[1].Priority = 99 // the caller's slice is not the core's
	if b.View().Members[1].Priority != 0 {
		t.Error("core shares the caller's member slice")
	}
}
