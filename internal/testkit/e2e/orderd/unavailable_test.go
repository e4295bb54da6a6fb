package orderd

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/testkit/e2e"
	"github.com/synclab/synclab/internal/testkit/testenv"
)

// A send whose write fails is answered that it was not sent, and it
// never is: host 1's state directory is made immutable (chattr +i: every
// write into it fails, EPERM, as on a read-only or failing disk), a FIFO
// send fails, the disk heals, later writes succeed, the client sends the
// message again as the answer says it may, and host 1 is SIGKILLed and
// restarted from its disk. Every host delivers the message once. Before,
// the failed send was kept and went out with the next good write: the
// client's resend delivered it twice everywhere.
func TestOrderdSendNotSentNeverDelivered(t *testing.T) {
	testenv.RequireRoot(t, "chattr +i, to make the state directory's writes fail")
	chattr := testenv.RequireTool(t, "e2fsprogs", "chattr")
	const n = 3
	c := newCluster(t, "orderd", n)
	for i := 1; i <= n; i++ {
		c.Start(i)
	}
	c.awaitSequencer(3, n)
	if out, err := c.orderd(1, "send", "--order", "fifo", "before"); err != nil {
		t.Fatalf("send before the fault: %v %s", err, out)
	}
	dir := filepath.Join(c.Dir, "h1.state")
	// immutable sets or clears +i on the directory and every file in it
	// (the open log too: a write through its descriptor fails).
	immutable := func(on bool) error {
		flag := "-i"
		if on {
			flag = "+i"
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			return err
		}
		args := []string{flag, dir}
		for _, e := range entries {
			args = append(args, filepath.Join(dir, e.Name()))
		}
		if out, err := exec.Command(chattr, args...).CombinedOutput(); err != nil {
			return fmt.Errorf("chattr %s: %v %s", flag, err, out)
		}
		return nil
	}
	t.Cleanup(func() { immutable(false) }) // else the state directory outlives the test
	if err := immutable(true); err != nil {
		testenv.Unavailable(t, "the state directory's file system takes no immutable flag: %v", err)
	}
	out, err := c.orderd(1, "send", "--order", "fifo", "m")
	if err == nil {
		t.Fatalf("a send with the state directory immutable was answered %q, want a failure", out)
	}
	t.Logf("the failed send: %s", out)
	for _, want := range []string{"not sent", "delivered nowhere", "sending it again is safe"} {
		if !strings.Contains(out, want) {
			t.Errorf("the failed send's message lacks %q: %s", want, out)
		}
	}
	// Host 1's writes go on failing (its core retries the write with
	// every step) while the others' frames come in.
	var st map[string]any
	c.Eventually("host 1 failed a later write too", 10*time.Second, func() bool {
		st, _ = c.Status(1)
		return e2e.Num(st, "errors", "persist_failed") >= 2
	})
	if err := immutable(false); err != nil {
		t.Fatal(err)
	}
	if e2e.Num(st, "errors", "calls_withdrawn") != 1 || e2e.Num(st, "node", "core", "counters", "sends_withdrawn") != 1 {
		t.Errorf("status: errors %v, core counters %v; want calls_withdrawn and sends_withdrawn 1", st["errors"], e2e.Field(st, "node", "core", "counters"))
	}
	// The client sends it again, as it was told it may; then one more.
	c.Eventually("host 1's send succeeds with its disk healed", 10*time.Second, func() bool {
		_, err := c.orderd(1, "send", "--order", "fifo", "m")
		return err == nil
	})
	if out, err := c.orderd(1, "send", "--order", "fifo", "after"); err != nil {
		t.Fatalf("send after the fault: %v %s", err, out)
	}
	delivered := func(i int) map[string]int {
		out, err := c.orderd(i, "log", "--json")
		if err != nil {
			return nil
		}
		got := map[string]int{}
		for _, line := range strings.Split(out, "\n") {
			var d struct {
				Order  string `json:"order"`
				Sender uint32 `json:"sender"`
				Text   string `json:"text"`
			}
			if json.Unmarshal([]byte(line), &d) == nil && d.Sender == 1 && d.Order == "fifo" {
				got[d.Text]++
			}
		}
		return got
	}
	check := func(hosts ...int) {
		t.Helper()
		for _, i := range hosts {
			var got map[string]int
			c.Eventually(fmt.Sprintf("host %d delivered host 1's \"after\"", i), 10*time.Second, func() bool {
				got = delivered(i)
				return got["after"] > 0
			})
			// In host 1's FIFO order: a copy of the failed send, sent
			// before "after", would have been delivered before it.
			for _, text := range []string{"before", "m", "after"} {
				if got[text] != 1 {
					t.Errorf("host %d delivered %q %d times, want once (host 1's FIFO messages: %v)", i, text, got[text], got)
				}
			}
		}
	}
	check(1, 2, 3)
	// Host 1 restarts from its disk: nothing of the failed send is there.
	c.Procs[1].Process.Signal(syscall.SIGKILL)
	c.Procs[1].Wait()
	c.Start(1)
	c.Eventually("host 1 answers again and runs", 10*time.Second, func() bool {
		st, err := c.Status(1)
		return err == nil && e2e.Field(st, "node", "agreement", "standing") == "agreed"
	})
	if out, err := c.orderd(1, "send", "--order", "fifo", "after the restart"); err != nil {
		t.Fatalf("send after the restart: %v %s", err, out)
	}
	for _, i := range []int{2, 3} {
		c.Eventually(fmt.Sprintf("host %d delivered host 1's message after its restart", i), 10*time.Second, func() bool {
			return delivered(i)["after the restart"] == 1
		})
	}
	check(2, 3)
}
