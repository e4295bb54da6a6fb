package majority

import (
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/pkg/elect"
)

func TestConfigRefuses(t *testing.T) {
	ms := []Member{{1, 1}, {2, 1}, {3, 1}}
	for _, tc := range []struct {
		mod  func(*Config)
		want string
	}{
		{func(c *Config) { c.Lease, c.Margin = 20*time.Second, 2*time.Millisecond }, "Margin (2ms) must be at least 4ms"},
		{func(c *Config) { c.Margin = 200 * time.Millisecond }, "under half the Lease"},
		{func(c *Config) { c.Renew = 200 * time.Millisecond }, "must fit at least twice"},
		{func(c *Config) { c.Members = []Member{{1, 1}, {2, 0}, {3, 1}} }, "member 2 has weight 0"},
		{func(c *Config) { c.Members = []Member{{1, 1}, {1, 1}, {3, 1}} }, "listed twice"},
		{func(c *Config) { c.Members = []Member{{2, 1}, {3, 1}, {4, 1}} }, "own ID 1 is not in the member list"},
		{func(c *Config) { c.Lease = 500 * time.Microsecond }, "Lease"},
	} {
		c := DefaultLANConfig()
		c.Members = ms
		tc.mod(&c)
		if err := c.validate(1, nil); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want an error containing %q", c, err, tc.want)
		}
	}
	// The operator's options: weights from priorities (0 counts 1), the
	// margin a sixteenth of a short lease.
	c := FromOptions([]uint32{1, 2, 3}, elect.Options{LeaderTimeout: 160 * time.Millisecond, Heartbeat: 40 * time.Millisecond,
		Priorities: map[uint32]uint32{2: 5}})
	if err := c.validate(1, []uint32{1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	if c.Margin != 10*time.Millisecond || c.Members[0].Weight != 1 || c.Members[1].Weight != 5 {
		t.Errorf("config %+v", c)
	}
}
