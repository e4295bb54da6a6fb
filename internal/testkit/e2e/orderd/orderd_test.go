package orderd

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/testkit/e2e"
)

func (c *cluster) orderd(i int, args ...string) (string, error) {
	argv := append([]string{args[0], "--control", c.Control(i)}, args[1:]...)
	out, err := exec.Command(filepath.Join(e2e.BinDir(), "orderd"), argv...).CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// orderState is host i's `orderd state --json` (zero if it does not answer).
func (c *cluster) orderState(i int) (v struct {
	Balance string            `json:"balance"`
	Applied uint64            `json:"applied"`
	KV      map[string]string `json:"kv"`
}) {
	out, err := c.orderd(i, "state", "--json")
	if err == nil {
		json.Unmarshal([]byte(out), &v)
	}
	return v
}

// sequencer is the sequencer host i knows (0: none, or no answer).
func (c *cluster) sequencer(i int) uint32 {
	st, err := c.Status(i)
	if err != nil {
		return 0
	}
	s, _ := st["node"].(map[string]any)["core"].(map[string]any)["sequencer"].(map[string]any)
	v, _ := s["sequencer"].(float64)
	if s["role"] == "recovering" {
		return 0
	}
	return uint32(v)
}

// awaitSequencer waits until hosts 1..n all know host id as the sequencer.
func (c *cluster) awaitSequencer(id uint32, n int) {
	c.Eventually(fmt.Sprintf("every host knows sequencer %d", id), 10*time.Second, func() bool {
		for i := 1; i <= n; i++ {
			if c.sequencer(i) != id {
				return false
			}
		}
		return true
	})
}

// sameState waits until every listed host holds the same account and
// map after applied commands, and returns the balance.
func (c *cluster) sameState(applied uint64, hosts ...int) string {
	c.T.Helper()
	var bal string
	c.Eventually(fmt.Sprintf("hosts %v hold the same state after %d commands", hosts, applied), 10*time.Second, func() bool {
		first := c.orderState(hosts[0])
		for _, i := range hosts {
			s := c.orderState(i)
			if s.Applied != applied || s.Balance != first.Balance || fmt.Sprint(s.KV) != fmt.Sprint(first.KV) {
				return false
			}
		}
		bal = first.Balance
		return true
	})
	return bal
}

// The notes' account on real processes: concurrent updates end equal at
// every replica; the sequencer is SIGKILLed and the survivors elect a new
// one, which continues the order (an apply during the outage succeeds);
// the killed replica restarts from its disk, catches up from the others
// and ends identical. FIFO and causal messages reach every log, and the
// delivery hook runs for each.
func TestOrderdAccountAndSequencerKill(t *testing.T) {
	const n = 3
	c := newCluster(t, "orderd", n)
	hooks := func(i int) string { return filepath.Join(c.Dir, fmt.Sprintf("deliveries%d", i)) }
	for i := 1; i <= n; i++ {
		c.Extra[i] = []string{"--on-deliver", `echo "$ORDERD_INDEX $ORDERD_ORDER $ORDERD_SENDER $ORDERD_MESSAGE" >> ` + hooks(i)}
		c.Start(i)
	}
	c.awaitSequencer(3, n)
	if out, err := c.orderd(1, "apply", "balance 1000"); err != nil || !strings.Contains(out, "balance 1000.00") {
		t.Fatalf("apply: %v %s", err, out)
	}
	var wg sync.WaitGroup
	for i, cmd := range map[int]string{1: "deposit 100", 2: "interest 1%", 3: "set motd lab open"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if out, err := c.orderd(i, "apply", cmd); err != nil {
				t.Errorf("apply %q on %d: %v %s", cmd, i, err, out)
			}
		}()
	}
	wg.Wait()
	bal := c.sameState(4, 1, 2, 3)
	if bal != "1111.00" && bal != "1110.00" {
		t.Fatalf("balance %s, want 1111.00 or 1110.00 (one order or the other, the same everywhere)", bal)
	}
	if out, err := c.orderd(3, "get", "motd"); err != nil || out != "lab open" {
		t.Fatalf("get motd: %v %q", err, out)
	}
	if out, err := c.orderd(2, "send", "--order", "causal", "hello", "causal"); err != nil {
		t.Fatalf("send: %v %s", err, out)
	}
	if out, err := c.orderd(1, "send", "--order", "fifo", "hello fifo"); err != nil {
		t.Fatalf("send: %v %s", err, out)
	}
	for i := 1; i <= n; i++ {
		c.Eventually(fmt.Sprintf("host %d's log and hooks hold all six messages", i), 5*time.Second, func() bool {
			out, err := c.orderd(i, "log", "--json")
			b, _ := os.ReadFile(hooks(i))
			return err == nil && strings.Count(out, "\n")+1 == 6 && strings.Contains(out, `"vector":[0,1,0]`) &&
				strings.Count(string(b), "\n") == 6 && strings.Contains(string(b), "causal 2 hello causal")
		})
	}

	// SIGKILL the sequencer; an apply on a survivor goes through once
	// they elected another and it recovered the log from the majority.
	c.Procs[3].Process.Signal(syscall.SIGKILL)
	c.Procs[3].Wait()
	start := time.Now()
	out, err := c.orderd(1, "apply", "--timeout", "15s", "deposit 5")
	if err != nil || !strings.Contains(out, "balance") {
		t.Fatalf("apply with the sequencer dead: %v %s", err, out)
	}
	t.Logf("apply across the sequencer's SIGKILL took %v (new sequencer %d)", time.Since(start).Round(time.Millisecond), c.sequencer(1))
	c.sameState(5, 1, 2)

	// The killed replica restarts from its disk and catches up.
	c.Start(3)
	c.orderd(2, "apply", "set after restart")
	c.sameState(6, 1, 2, 3)
	logs := map[int]string{}
	for i := 1; i <= n; i++ {
		out, _ := c.orderd(i, "log", "--json")
		var total []string
		for _, line := range strings.Split(out, "\n") {
			var d struct {
				Order   string `json:"order"`
				Message []byte `json:"message"`
			}
			json.Unmarshal([]byte(line), &d)
			if d.Order == "total" {
				total = append(total, string(d.Message))
			}
		}
		logs[i] = strings.Join(total, "|")
	}
	// Host 3's history restarted with its process: what it delivered
	// since must be the tail of the others' order.
	if logs[1] != logs[2] || !strings.HasSuffix(logs[1], logs[3]) || logs[3] == "" {
		t.Fatalf("total orders differ:\n1: %s\n2: %s\n3: %s", logs[1], logs[2], logs[3])
	}
}

// The same account with the notes' distributed algorithm (Lamport stamps,
// acks from all): concurrent applies end equal everywhere.
func TestOrderdLamportAccount(t *testing.T) {
	const n = 3
	c := newCluster(t, "orderd", n)
	for i := 1; i <= n; i++ {
		c.Extra[i] = []string{"--total", "lamport"}
		c.Start(i)
	}
	c.Eventually("host 1 answers", 5*time.Second, func() bool { _, err := c.Status(1); return err == nil })
	if out, err := c.orderd(1, "apply", "balance 1000"); err != nil {
		t.Fatalf("apply: %v %s", err, out)
	}
	var wg sync.WaitGroup
	for i := 1; i <= n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range 5 {
				cmd := "deposit 100"
				if (i+k)%2 == 0 {
					cmd = "interest 1%"
				}
				if out, err := c.orderd(i, "apply", cmd); err != nil {
					t.Errorf("apply on %d: %v %s", i, err, out)
				}
			}
		}()
	}
	wg.Wait()
	t.Logf("balance after 15 concurrent updates: %s", c.sameState(16, 1, 2, 3))
}

// A member SIGKILLed in the middle of a stream of sends and applies keeps
// everything it acknowledged: a FIFO send's record was in its log
// (core.log, appended and fdatasynced before the answer), an apply was on
// a majority of disks (the sender's own copy may come later: it catches up
// from the others after its restart). A torn last record, as a power cut
// in the middle of an append leaves it, is cut and counted at the restart,
// and the member goes on where it was: its stream continues (a new message
// is delivered, not taken for a duplicate), its state machine comes to hold
// every command it answered for, and all replicas end identical.
func TestOrderdSIGKILLKeepsWhatItAcknowledged(t *testing.T) {
	const n = 3
	c := newCluster(t, "orderd", n)
	for i := 1; i <= n; i++ {
		c.Start(i)
	}
	c.awaitSequencer(3, n)
	var (
		mu      sync.Mutex
		applied []string // keys whose `set` host 1 answered
		sent    []string // FIFO messages host 1 answered
		wg      sync.WaitGroup
		stop    = make(chan struct{})
	)
	worker := func(name string, args func(text string) []string, acked *[]string) {
		defer wg.Done()
		for k := 0; ; k++ {
			select {
			case <-stop:
				return
			default:
			}
			text := fmt.Sprintf("%s-%d", name, k)
			if _, err := c.orderd(1, args(text)...); err != nil {
				return // host 1 is gone
			}
			mu.Lock()
			*acked = append(*acked, text)
			mu.Unlock()
		}
	}
	wg.Add(4)
	for w := range 2 {
		go worker(fmt.Sprintf("k%d", w), func(key string) []string { return []string{"apply", "set " + key + " v"} }, &applied)
		go worker(fmt.Sprintf("f%d", w), func(msg string) []string { return []string{"send", "--order", "fifo", msg} }, &sent)
	}
	c.Eventually("host 1 answered 20 applies and 20 sends", time.Minute, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(applied) >= 20 && len(sent) >= 20
	})
	c.Procs[1].Process.Signal(syscall.SIGKILL) // calls are in flight
	c.Procs[1].Wait()
	close(stop)
	wg.Wait()

	logFile := filepath.Join(c.Dir, "h1.state", "core.log")
	if fi, err := os.Stat(logFile); err != nil || fi.Size() <= 40 {
		t.Fatalf("host 1 kept no records in its log: %v", err)
	}
	// A torn record right after the last whole one (the log's space is
	// allocated ahead: its records, not its size, mark the end): its
	// header says 64 bytes, 5 made it to the disk.
	b, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	end := 40 // the header; then length (4) | CRC (4) | incarnation (4) | data
	for end+12 <= len(b) && binary.BigEndian.Uint32(b[end+8:]) != 0 {
		end += 12 + int(binary.BigEndian.Uint32(b[end:]))
	}
	f, err := os.OpenFile(logFile, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte{0, 0, 0, 64, 0xde, 0xad, 0xbe, 0xef, 0, 0, 0, 9, 't', 'o', 'r', 'n', '!'}, int64(end))
	f.Close()

	c.Start(1)
	// Back, and running: its core waits, at the start, for the members'
	// configurations (configuration agreement), and catches up when it
	// runs.
	c.Eventually("host 1 answers again and runs", 10*time.Second, func() bool {
		st, err := c.Status(1)
		return err == nil && e2e.Field(st, "node", "agreement", "standing") == "agreed"
	})
	st, _ := c.Status(1)
	if cut, _ := st["errors"].(map[string]any)["core_log_tail_cut"].(float64); cut != 1 {
		t.Fatalf("the torn tail was not counted: errors %v", st["errors"])
	}
	// Every command host 1 answered for comes to be in its state machine:
	// from its own log, or caught up from the majority that had it on disk
	// when the answer left (waited for: a loaded host catches up late).
	var missing []string
	c.Eventually("host 1 holds every command it answered for", time.Minute, func() bool {
		s1 := c.orderState(1)
		missing = missing[:0]
		for _, key := range applied {
			if s1.KV[key] != "v" {
				missing = append(missing, key)
			}
		}
		if len(missing) > 0 {
			t.Logf("host 1 lacks %d of the %d commands it answered for, so far: %v", len(missing), len(applied), missing)
		}
		return len(missing) == 0
	})
	// Its stream goes on where it was, and the others deliver every
	// message it answered for, once.
	if out, err := c.orderd(1, "send", "--order", "fifo", "after the restart"); err != nil {
		t.Fatalf("send after the restart: %v %s", err, out)
	}
	for _, i := range []int{2, 3} {
		var missing string
		c.Eventually(fmt.Sprintf("host %d delivered every message host 1 answered for, once, and the one after the restart", i), 10*time.Second, func() bool {
			out, err := c.orderd(i, "log", "--json")
			if err != nil {
				return false
			}
			got := map[string]int{}
			for _, line := range strings.Split(out, "\n") {
				var d struct {
					Order   string `json:"order"`
					Sender  uint32 `json:"sender"`
					Message []byte `json:"message"`
				}
				if json.Unmarshal([]byte(line), &d) == nil && d.Sender == 1 && d.Order == "fifo" {
					got[string(d.Message)]++
				}
			}
			for m, k := range got {
				if k > 1 {
					t.Fatalf("host %d delivered %q %d times", i, m, k)
				}
			}
			missing = ""
			for _, m := range append(slices.Clone(sent), "after the restart") {
				if got[m] == 0 {
					missing = m
					return false
				}
			}
			return true
		})
		if missing != "" {
			t.Fatalf("host %d never delivered %q", i, missing)
		}
	}
	t.Logf("host 1 answered %d applies and %d sends before its SIGKILL; all kept (%d keys), the torn tail cut", len(applied), len(sent), len(c.orderState(1).KV))
	applies := c.orderState(1).Applied
	c.sameState(max(applies, c.orderState(2).Applied, c.orderState(3).Applied), 1, 2, 3)
}

// A member SIGKILLed as a command is committed (the apply answered at
// another host), before its record of the commit point is written (that
// record waits up to 50 ms for the next write), restarts behind the
// commit point, holding the entry it acknowledged; nothing more is sent
// (an idle cluster), and it must still catch up: it asks the sequencer
// for the commit point. Its `orderd state` equals the others'.
func TestOrderdIdleRestartCatchesUp(t *testing.T) {
	const n = 3
	c := newCluster(t, "orderd", n)
	for i := 1; i <= n; i++ {
		c.Start(i)
	}
	c.awaitSequencer(3, n)
	if out, err := c.orderd(1, "apply", "deposit 100"); err != nil {
		t.Fatalf("apply: %v %s", err, out)
	}
	c.Procs[2].Process.Signal(syscall.SIGKILL)
	c.Procs[2].Wait()
	c.Start(2)
	c.sameState(1, 1, 2, 3)
}

// A member down for more commands than the log keeps (256) catches up
// from a snapshot of the replicated state: the numbers it thereby does
// not deliver one by one are reported, exactly, as one record in
// `orderd log` ("skipped numbers N to M", JSON "skipped"), as one run of
// the --on-deliver hook (ORDERD_SKIPPED_FROM/TO, ORDERD_SNAPSHOT_FROM),
// in status (the last skip, the counters) and at WARN in its log; and
// what comes after is delivered one by one again.
func TestOrderdSkipThroughSnapshotIsReported(t *testing.T) {
	const n, sends = 3, 330
	c := newCluster(t, "orderd", n)
	hooks := filepath.Join(c.Dir, "hooks1")
	c.Extra[1] = []string{"--on-deliver", `echo "$ORDERD_SEQ skip=$ORDERD_SKIPPED_FROM-$ORDERD_SKIPPED_TO via=$ORDERD_SNAPSHOT_FROM msg=$ORDERD_MESSAGE" >> ` + hooks}
	for i := 1; i <= n; i++ {
		c.Start(i)
	}
	c.awaitSequencer(3, n)
	if out, err := c.orderd(2, "apply", "balance 10"); err != nil {
		t.Fatalf("apply: %v %s", err, out)
	}
	c.sameState(1, 1, 2, 3)
	c.Procs[1].Process.Signal(syscall.SIGKILL)
	c.Procs[1].Wait()
	// Past the log's 256 entries and its first compaction (a quarter
	// more): member 1 is behind what anyone keeps.
	var wg sync.WaitGroup
	for w := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := w; k < sends; k += 6 {
				// apply, not send --order total: a sent message is plain
				// since the state machine stopped taking messages for
				// commands, and would not move the state compared below.
				if out, err := c.orderd(2+k%2, "apply", fmt.Sprintf("set k%d %d", k%20, k)); err != nil {
					t.Errorf("send %d: %v %s", k, err, out)
					return
				}
			}
		}()
	}
	wg.Wait()
	c.sameState(1+sends, 2, 3)
	os.Remove(hooks)
	c.Start(1)
	c.sameState(1+sends, 1, 2, 3)
	if out, err := c.orderd(2, "apply", "deposit 1"); err != nil {
		t.Fatalf("apply: %v %s", err, out)
	}
	c.sameState(2+sends, 1, 2, 3)

	out, err := c.orderd(1, "log", "--json")
	if err != nil {
		t.Fatalf("log: %v %s", err, out)
	}
	var skip struct{ From, To, Via uint64 }
	lines := strings.Split(out, "\n")
	for i, line := range lines {
		var d struct {
			Seq     uint64 `json:"seq"`
			Message []byte `json:"message"`
			Skipped *struct {
				From uint64 `json:"from"`
				To   uint64 `json:"to"`
				Via  uint64 `json:"via"`
			} `json:"skipped"`
		}
		if err := json.Unmarshal([]byte(line), &d); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		switch {
		case i == 0 && (d.Skipped == nil || d.Skipped.From > 2 || d.Skipped.To != d.Seq || d.Skipped.To < 257 || d.Skipped.Via != 3):
			// From 2, or from 1 if its record of number 1's commit
			// (which may wait 50 ms for the next write) died with it.
			t.Fatalf("member 1's first record after its restart is %s, want a skip from number 1 or 2 past the log's 256, via the sequencer 3", line)
		case i == 0:
			skip.From, skip.To, skip.Via = d.Skipped.From, d.Skipped.To, d.Skipped.Via
		case d.Skipped != nil || d.Seq != skip.To+uint64(i):
			t.Fatalf("member 1's record %d after the skip to %d is %s, want number %d delivered", i, skip.To, line, skip.To+uint64(i))
		}
	}
	if got, want := uint64(len(lines)), 1+(2+sends-skip.To); got != want {
		t.Fatalf("member 1's log holds %d records, want the skip and the %d numbers after it:\n%s", got, want-1, out)
	}
	c.Eventually("the hook ran for the skip and for each number after it", 5*time.Second, func() bool {
		b, _ := os.ReadFile(hooks)
		return strings.HasPrefix(string(b), fmt.Sprintf("%d skip=%d-%d via=3 msg=\n", skip.To, skip.From, skip.To)) &&
			strings.Count(string(b), "\n") == len(lines) && strings.HasSuffix(string(b), fmt.Sprintf("%d skip=- via= msg=deposit 1\n", 2+sends))
	})
	st, err := c.Status(1)
	if err != nil {
		t.Fatal(err)
	}
	core := st["node"].(map[string]any)["core"].(map[string]any)
	counters := core["counters"].(map[string]any)
	last, _ := core["sequencer"].(map[string]any)["last_skip"].(map[string]any)
	if counters["skipped_numbers"] != float64(skip.To-skip.From+1) || counters["snapshots_installed"] != float64(1) || last["to"] != float64(skip.To) {
		t.Fatalf("status: counters %v, last skip %v; want %d numbers skipped, 1 snapshot, the last skip to %d", counters, last, skip.To-skip.From+1, skip.To)
	}
	if out, err := c.orderd(1, "status"); err != nil || !strings.Contains(out, fmt.Sprintf("Skipped  : numbers %d to %d", skip.From, skip.To)) {
		t.Fatalf("status: %v\n%s", err, out)
	}
	if out, err := c.orderd(1, "log"); err != nil || !strings.Contains(out, fmt.Sprintf("total skipped numbers %d to %d (not delivered here: caught up from member 3's snapshot)", skip.From, skip.To)) {
		t.Fatalf("log: %v\n%s", err, out)
	}
	b, _ := os.ReadFile(c.LogPath(1))
	if !strings.Contains(string(b), "level=WARN msg=\"caught up from member 3's snapshot") {
		t.Fatalf("member 1's log has no WARN for the skip:\n%s", b)
	}
	// The others were never behind: nothing skipped there.
	for i := 2; i <= n; i++ {
		if st, err := c.Status(i); err != nil || st["node"].(map[string]any)["core"].(map[string]any)["counters"].(map[string]any)["skipped_numbers"] != nil {
			t.Fatalf("host %d: %v %v", i, err, st["node"].(map[string]any)["core"].(map[string]any)["counters"])
		}
	}
}
