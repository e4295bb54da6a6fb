package electd

import (
	"testing"

	"github.com/synclab/synclab/internal/testkit/e2e"
)

func TestMain(m *testing.M) { e2e.Main(m, "electd") }

// cluster is e2e.Cluster, with this package's own helpers as methods.
type cluster struct{ *e2e.Cluster }

func newCluster(t *testing.T, daemon string, n int) *cluster {
	return &cluster{e2e.NewCluster(t, daemon, n)}
}
