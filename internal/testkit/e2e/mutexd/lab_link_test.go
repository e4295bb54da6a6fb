package mutexd

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/testkit/e2e"

	"github.com/synclab/synclab/internal/ctl"
	"github.com/synclab/synclab/internal/testkit/labnet"
)

// linkScript is the critical section of TestLabMutexdLinkCut: the notes'
// shared counter (raw: read, sleep 5 ms, write back, logged with the
// section's real-time span and fence, as counterScript) and, inside it, a
// fenced store: under flock, it takes the write only if the section's
// fence (MUTEXD_FENCE) is not below the highest it has taken, and logs
// a refusal otherwise. Two holders at once lose a raw update and overlap;
// grants out of fence order make the store refuse a write.
const linkScript = `f=$1 op=$3 store=$4; grep -q "^$op " "$f" && exit 0; s=$(date +%s%N); n=$(head -n 1 "$f"); sleep 0.005; ` +
	`flock "$store.lock" sh -c 'read hi < "$1"; if [ "$2" -ge "$hi" ]; then echo "$2" > "$1"; else echo "$3 $2 $hi" >> "$1.refused"; fi' sh "$store" "$MUTEXD_FENCE" "$op"; ` +
	`e=$(date +%s%N); { echo $((n+1)); tail -n +2 "$f"; echo "$op $s $e $2 $MUTEXD_FENCE"; } > "$f.$op" && mv "$f.$op" "$f"`

// TestLabMutexdLinkCut: issue 29, item 9, with real binaries. Five
// namespace hosts run mutexd (Ricart-Agrawala, then Lamport's queue, then
// the distributed bakery, 3 s leases as the defaults), and every host increments a shared counter in a
// loop under `mutexd lock counter`, each section also writing to a fenced
// store. Meanwhile the link between two hosts is cut, both ways, by two
// nft rules on the bridge (each still reaches the three others), for
// 8 s, longer than DeadAfter; healed; then the link between the host
// holding the lock and another, for 8 s. Before the fix both ends of the
// link gave each other up after 3.8 s and both granted: sections
// overlapped, raw updates were lost, the store refused writes. Now: no
// section overlaps another, the counter equals the sections run, the
// store refused nothing, the lock kept moving (both ends of each cut link
// ran sections while it was cut, through the relays), and each end said
// at WARN which link is broken, and shows the other as relayed.
func TestLabMutexdLinkCut(t *testing.T) {
	labnet.Require(t)
	for _, alg := range []string{"ricartagrawala", "lamport", "bakery"} {
		t.Run(alg, func(t *testing.T) { labLinkCut(t, alg) })
	}
}

func labLinkCut(t *testing.T, alg string) {
	const n = 5
	const cutFor = 8 * time.Second
	l, file, store := fencedLab(t, alg, n)
	lab := l.lab

	type cut struct {
		a, b     int
		from, to time.Time
	}
	var cuts []cut
	stop := l.fencedLoops(file, store)
	relayed := map[[2]int]bool{}
	during := func(a, b int) {
		from := time.Now()
		lab.Partition(a, b)
		// Halfway, each end shows the other as reached through relays.
		time.Sleep(cutFor / 2)
		for _, e := range [][2]int{{a, b}, {b, a}} {
			relayed[e] = l.memberState(e[0], e[1]) == "relayed"
		}
		time.Sleep(cutFor / 2)
		lab.Heal(a, b)
		cuts = append(cuts, cut{a, b, from, time.Now()})
		time.Sleep(2 * time.Second)
	}
	time.Sleep(time.Second)
	during(1, 2)
	holder := 0
	for deadline := time.Now().Add(2 * time.Second); holder == 0 && time.Now().Before(deadline); {
		holder = l.holder("counter")
	}
	if holder == 0 {
		t.Log("no holder seen in 2 s: cutting h3-h5")
		holder = 3
	}
	other := 5
	if holder == other {
		other = 4
	}
	during(holder, other)
	done, failed, why := stop()
	t.Logf("%s: sections %v, failed runs %v", alg, done, failed)
	spans := checkFenced(t, file, store, done, why)
	for _, c := range cuts {
		ran := map[string]int{}
		for _, s := range spans {
			if s.start > c.from.Add(time.Second).UnixNano() && s.end < c.to.UnixNano() {
				ran[s.host]++
			}
		}
		t.Logf("link h%d-h%d cut %v: sections by host meanwhile %v", c.a, c.b, c.to.Sub(c.from).Round(time.Millisecond), ran)
		for _, h := range []int{c.a, c.b} {
			if ran[fmt.Sprintf("h%d", h)] == 0 {
				t.Errorf("h%d ran no section while its link to h%d was cut: the lock did not move across it", h, c.a+c.b-h)
			}
		}
		for _, e := range [][2]int{{c.a, c.b}, {c.b, c.a}} {
			if !relayed[e] {
				t.Errorf("h%d's status did not show h%d as relayed while the link was cut", e[0], e[1])
			}
			log := l.procs[e[0]].Output()
			if !slices.ContainsFunc(strings.Split(log, "\n"), func(line string) bool {
				return strings.Contains(line, "level=WARN") && strings.Contains(line, "event=link_down") &&
					strings.Contains(line, "member="+strconv.Itoa(e[1]))
			}) {
				lines := strings.Split(strings.TrimSpace(log), "\n")
				t.Errorf("h%d never logged the broken link to h%d at WARN; its log ends:\n%s", e[0], e[1], strings.Join(lines[max(0, len(lines)-10):], "\n"))
			}
		}
	}
}

// fencedLab starts mutexd running alg on n namespace hosts (3 s leases,
// as the defaults), waits until each answers, and makes the counter file
// and the fenced store that linkScript writes.
func fencedLab(t *testing.T, alg string, n int) (l *labMutexd, file, store string) {
	lab := labnet.New(t, n)
	l = &labMutexd{t: t, lab: lab, dir: e2e.ShortDir(t), procs: map[int]*labnet.Proc{},
		extra: []string{"--algorithm", alg, "--lease", "3s"}} // the last --lease wins
	l.key = e2e.KeyFile(t, l.dir)
	for i := 1; i <= n; i++ {
		l.start(i)
	}
	for i := 1; i <= n; i++ {
		l.waitUp(i)
	}
	file, store = filepath.Join(l.dir, "counter"), filepath.Join(l.dir, "store")
	for path, v := range map[string]string{file: "0\n", store: "0\n"} {
		if err := os.WriteFile(path, []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return l, file, store
}

// fencedLoops makes every host run linkScript under `mutexd lock counter`
// in a loop (a failed run is tried again 50 ms later) until stop, which
// waits for the loops and returns the sections each host ran, its failed
// runs, and why they failed.
func (l *labMutexd) fencedLoops(file, store string) (stop func() (done, failed map[int]int, why []string)) {
	quit := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	done, failed := map[int]int{}, map[int]int{}
	var why []string
	for _, h := range l.lab.Hosts() {
		i := h.Index()
		wg.Go(func() {
			for k := 0; ; {
				select {
				case <-quit:
					return
				default:
				}
				op := fmt.Sprintf("%s-%d", h.Name(), k)
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				out, err := exec.CommandContext(ctx, "ip", "netns", "exec", h.Namespace(), filepath.Join(e2e.BinDir(), "mutexd"), "lock", "counter",
					"--control", l.control(i), "--timeout", "30s", "--", "sh", "-c", linkScript, "sh", file, h.Name(), op, store).CombinedOutput()
				cancel()
				mu.Lock()
				if err != nil {
					failed[i]++
					why = append(why, fmt.Sprintf("%s %s: %v: %s", h.Name(), op, err, bytes.TrimSpace(out)))
				} else {
					done[i]++
					k++
				}
				mu.Unlock()
				if err != nil {
					time.Sleep(50 * time.Millisecond)
				}
			}
		})
	}
	return func() (map[int]int, map[int]int, []string) {
		close(quit)
		wg.Wait()
		return done, failed, why
	}
}

// checkFenced logs why runs failed and checks what fencedLoops left: the
// counter equals the sections run, no two overlapped, their fences grew,
// and the fenced store refused no write. It returns the sections.
func checkFenced(t *testing.T, file, store string, done map[int]int, why []string) []span {
	t.Helper()
	for _, w := range why {
		t.Log(w)
	}
	total := 0
	for _, k := range done {
		total += k
	}
	checkCounter(t, file, total)
	spans := spansOf(t, file, true)
	checkFences(t, spans, nil)
	if b, err := os.ReadFile(store + ".refused"); err == nil && len(b) > 0 {
		t.Errorf("the fenced store refused writes (op fence highest):\n%s", b)
	}
	return spans
}

// memberState is member id's state in host i's mutexd status ("" if it
// cannot be read).
func (l *labMutexd) memberState(i, id int) string {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var st struct {
		Node struct {
			Core struct {
				Members []struct {
					ID    int    `json:"id"`
					State string `json:"state"`
				} `json:"members"`
			} `json:"core"`
		} `json:"node"`
	}
	if err := ctl.NewClient(l.control(i), "mutexd").Get(ctx, "/v1/status", &st); err != nil {
		return ""
	}
	for _, m := range st.Node.Core.Members {
		if m.ID == id {
			return m.State
		}
	}
	return ""
}
