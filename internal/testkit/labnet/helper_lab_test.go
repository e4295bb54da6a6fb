package labnet_test

import (
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/testkit/labnet"
)

// helperEnv selects the role of a re-executed test binary (the classic Go
// helper-process pattern): lab tests start os.Args[0] inside a namespace with
// -test.run=^TestLabHelperProcess$ and this variable set, and the binary then
// plays that role instead of running tests.
const helperEnv = "LABNET_HELPER_ROLE"

// helperRoles are the programs a lab test can run on a host. Each gets its
// arguments from LABNET_HELPER_* variables and reports on stdout, one
// "key=value ..." line per event, which the test reads with Proc.Output.
var helperRoles = map[string]func() error{
	"sleep": helperSleep,
}

// TestLabHelperProcess is not a test: it is the entry point of helper
// processes, and returns at once in a normal run.
func TestLabHelperProcess(t *testing.T) {
	role := os.Getenv(helperEnv)
	if role == "" {
		return
	}
	fn, ok := helperRoles[role]
	if !ok {
		fmt.Fprintf(os.Stderr, "helper: unknown role %q\n", role)
		os.Exit(2)
	}
	if err := fn(); err != nil {
		fmt.Fprintf(os.Stderr, "helper %s: %v\n", role, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// startHelper runs role on h as a real process.
func startHelper(t *testing.T, h *labnet.Host, role string, env ...string) *labnet.Proc {
	t.Helper()
	argv := []string{os.Args[0], "-test.run=^TestLabHelperProcess$", "-test.count=1"}
	return h.Start(t, role, argv, append([]string{helperEnv + "=" + role}, env...))
}

// waitOutput waits until p has printed a line starting with prefix and
// returns that line (the last such line).
func waitOutput(t *testing.T, p *labnet.Proc, prefix string, timeout time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		out := p.Output()
		lines := strings.Split(out, "\n")
		for i := len(lines) - 1; i >= 0; i-- {
			if strings.HasPrefix(lines[i], prefix) {
				return lines[i]
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s on %s printed no %q line within %v; output:\n%s", p.Name(), p.Host().Name(), prefix, timeout, out)
		}
		if p.Exited() {
			code, _ := p.Wait(0)
			t.Fatalf("%s on %s exited (code %d) before printing %q; output:\n%s", p.Name(), p.Host().Name(), code, prefix, out)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// helperSleep reports its PID and network namespace, then waits for SIGTERM
// (exit 0) or to be killed.
func helperSleep() error {
	ns, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		return err
	}
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	fmt.Printf("ready pid=%d netns=%s\n", os.Getpid(), ns)
	<-term
	fmt.Println("terminated")
	return nil
}
