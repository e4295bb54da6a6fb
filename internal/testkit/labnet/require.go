package labnet

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"testing"

	"github.com/synclab/synclab/internal/testkit/testenv"
)

// probe finds out once per test binary whether labs can be built here. It
// returns "" if they can, else why not.
var probe = sync.OnceValue(func() (reason string) {
	if runtime.GOOS != "linux" {
		return "network namespaces need Linux (this is " + runtime.GOOS + ")"
	}
	if os.Geteuid() != 0 {
		return "not root: network namespaces need CAP_SYS_ADMIN and CAP_NET_ADMIN; run the tests as root (e.g. sudo -E scripts/test.sh)"
	}
	for _, tool := range []string{"ip", "nft"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Sprintf("%s not found (install iproute2 and nftables, see scripts/install-test-deps.sh)", tool)
		}
	}
	// Build the smallest lab there is: a namespace holding a veth pair.
	// Containers without CAP_SYS_ADMIN, kernels without veth and read-only
	// /run all fail here rather than halfway through a test.
	ns := randomPrefix() + "-probe"
	err := run("netns add "+ns+"\n", "ip", "-batch", "-")
	if err == nil {
		err = run("link add name probe0 type veth peer name probe1\n", "ip", "-n", ns, "-batch", "-")
		if derr := run("netns del "+ns+"\n", "ip", "-batch", "-"); err == nil {
			err = derr
		}
	}
	if err != nil {
		return fmt.Sprintf("cannot create a network namespace with a veth pair: %v", err)
	}
	return ""
})

// Require skips the test unless lab networks can be built here: Linux, root,
// `ip` and `nft` installed, and a namespace with a veth pair can be created.
// The reason is printed. With CI=true in the environment (.ci/run exports
// it) any of these missing, not being root included, is a test failure
// instead, since CI must run the lab tests (testenv.Unavailable).
//
// Lab tests are named TestLab* and call Require first:
//
//	func TestLabFailover(t *testing.T) {
//		labnet.Require(t)
//		lab := labnet.New(t, 3)
//		...
//	}
func Require(t testing.TB) {
	t.Helper()
	if reason := probe(); reason != "" {
		testenv.Unavailable(t, "labnet: lab test: %s", reason)
	}
}
