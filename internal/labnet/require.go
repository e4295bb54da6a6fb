package labnet

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"testing"
)

// probe finds out once per test binary whether labs can be built here. It
// returns "" if they can, else why not, and whether the reason is only a lack
// of privilege (which is never a failure, even in CI).
var probe = sync.OnceValues(func() (reason string, unprivileged bool) {
	if runtime.GOOS != "linux" {
		return "network namespaces need Linux (this is " + runtime.GOOS + ")", true
	}
	if os.Geteuid() != 0 {
		return "not root: network namespaces need CAP_SYS_ADMIN and CAP_NET_ADMIN; run the tests as root (e.g. sudo -E go test ./...)", true
	}
	for _, tool := range []string{"ip", "nft"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Sprintf("%s not found (install iproute2 and nftables, see scripts/install-test-deps.sh)", tool), false
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
		return fmt.Sprintf("cannot create a network namespace with a veth pair: %v", err), false
	}
	return "", false
})

// Require skips the test unless lab networks can be built here: Linux, root,
// `ip` and `nft` installed, and a namespace with a veth pair can be created.
// The reason is printed. With CI=true in the environment a missing tool or a
// failing probe is a test failure instead, since CI must run the lab tests;
// not being root is always a skip.
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
	reason, unprivileged := probe()
	if reason == "" {
		return
	}
	if !unprivileged && os.Getenv("CI") == "true" {
		t.Fatalf("labnet: lab test cannot run: %s (CI=true: lab tests must run in CI)", reason)
	}
	t.Skipf("labnet: skipping lab test: %s", reason)
}
