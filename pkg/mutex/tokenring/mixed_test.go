package tokenring_test

import (
	"testing"

	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/pkg/mutex/internal/mutextest"
	"github.com/synclab/synclab/pkg/mutex/tokenring"
)

// TestMixedBuilds: the token ring keeps the generic oracle in a cluster
// whose members mix builds with configuration agreement and without
// (mutextest.BuildsMixed), on calm and harsh hosts. The token and its
// acknowledgement travel on the members' TCP links; one that an agreeing
// member refuses (an older build's run, unannounced for the 3 s window)
// or withholds (to that member meanwhile) is lost with the link still
// up, and no core hears of it: the sender's AckTimeout sends the token
// again, then skips the successor, as across a broken link.
func TestMixedBuilds(t *testing.T) {
	for _, h := range []mutextest.Hosts{mutextest.Calm, mutextest.Harsh} {
		t.Run(h.Name, func(t *testing.T) {
			sim.Seeds(t, 6, func(t *testing.T, seed int64) {
				c := mutextest.Run(t, seed, mutextest.Config{Factory: tokenring.Factory, Hosts: h, Builds: mutextest.BuildsMixed})
				t.Log(c)
			})
		})
	}
}
