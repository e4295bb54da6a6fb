package labnet_test

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/testkit/labnet"
)

// A lab test: three hosts, a daemon on each, then a partition. (Examples
// that need root cannot run under `go test` unprivileged, so this one is
// compiled but not run; the TestLab* tests of this package run the same
// calls.)
func Example() {
	var t *testing.T // the test's t
	labnet.Require(t)
	lab := labnet.New(t, 3)
	var procs []*labnet.Proc
	for _, h := range lab.Hosts() {
		argv := []string{"/path/to/electd", "run", "--id", fmt.Sprint(h.Index()),
			"--members", "1=10.77.0.1:7700,2=10.77.0.2:7700,3=10.77.0.3:7700",
			"--key-file", lab.Dir() + "/cluster.key", // made by `electd keygen` (app.WriteNewKeyFile)
			"--control", fmt.Sprintf("%s/%s.sock", lab.Dir(), h.Name())}
		procs = append(procs, h.Start(t, "electd", argv, []string{"ELECTD_LOG_LEVEL=debug"}))
	}
	lab.Split([]int{1}, []int{2, 3}) // h1 alone, h2 and h3 together
	time.Sleep(time.Second)
	out, err := lab.Host(2).Run(t, "/path/to/electd", "status", "--json",
		"--control", lab.Dir()+"/h2.sock")
	fmt.Fprintln(os.Stderr, out, err)
	procs[1].Kill() // SIGKILL the daemon on h2
	lab.HealAll()
}

// Delay needs the user-space switch: the kernel has no netem.
func ExampleWithSwitch() {
	var t *testing.T // the test's t
	labnet.Require(t)
	lab := labnet.New(t, 2, labnet.WithSwitch())
	lab.SetDelay(1, 2, 2*time.Millisecond, 100*time.Microsecond)         // both ways
	lab.SetLink(2, 1, labnet.Link{Delay: 5 * time.Millisecond, Loss: 1}) // asymmetric, lossy
	fmt.Println(lab.LinkStats(1, 2).Forwarded)
}
