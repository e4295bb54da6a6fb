package orderd

import (
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/testkit/e2e"
	"github.com/synclab/synclab/internal/testkit/labnet"
)

// labOrderd runs orderd on every host of a namespace LAN; the CLI talks
// to each through its control socket (a path, reachable from here).
type labOrderd struct {
	c     *cluster // control paths, state helpers and the CLI
	lab   *labnet.Lab
	procs map[int]*labnet.Proc
	extra []string
}

// newLabOrderd starts orderd, keyed, on every host of a new n-host lab.
func newLabOrderd(t *testing.T, n int) *labOrderd {
	labnet.Require(t)
	c := &cluster{&e2e.Cluster{T: t, Daemon: "orderd", Dir: e2e.ShortDir(t)}}
	c.Key = e2e.KeyFile(t, c.Dir)
	l := &labOrderd{c: c, lab: labnet.New(t, n), procs: map[int]*labnet.Proc{}}
	for i := 1; i <= n; i++ {
		l.start(i)
	}
	return l
}

func (l *labOrderd) start(i int) {
	var members []string
	for j := 1; j <= l.lab.N(); j++ {
		members = append(members, fmt.Sprintf("%d=%s:7600", j, l.lab.Host(j).Addr()))
	}
	h := l.lab.Host(i)
	argv := []string{"setpriv", "--bounding-set", "-sys_time", "--inh-caps", "-sys_time",
		filepath.Join(e2e.BinDir(), "orderd"), "run",
		"--id", fmt.Sprint(i), "--members", strings.Join(members, ","),
		"--control", l.c.Control(i), "--state-dir", filepath.Join(l.c.Dir, fmt.Sprintf("h%d.state", i)),
		"--multicast", "239.77.0.1:7699", "--interface", h.Interface(), "--key-file", l.c.Key,
	}
	l.procs[i] = h.Start(l.c.T, "orderd", append(argv, l.extra...), nil)
}

// TestLabOrderdAccount is the notes' replicated account on five namespace
// hosts with 20% of datagrams lost at every host: four hosts apply
// deposits and interest at once while the fifth, the sequencer, is
// SIGKILLed; every apply completes (a new sequencer takes over the log),
// the killed host restarts from its disk and catches up, and every
// replica ends with the same balance after the same commands.
func TestLabOrderdAccount(t *testing.T) {
	const n = 5
	l := newLabOrderd(t, n)
	c, lab := l.c, l.lab
	c.Eventually("every host knows sequencer 5", 10*time.Second, func() bool {
		for i := 1; i <= n; i++ {
			if c.sequencer(i) != 5 {
				return false
			}
		}
		return true
	})
	if out, err := c.orderd(1, "apply", "balance 1000"); err != nil {
		t.Fatalf("apply: %v %s", err, out)
	}
	for i := 1; i <= n; i++ {
		lab.Loss(i, 20)
	}
	const rounds = 4
	var wg sync.WaitGroup
	var mu sync.Mutex
	applied := 1
	apply := func(i int, cmd string) {
		start := time.Now()
		out, err := c.orderd(i, "apply", "--timeout", "60s", cmd)
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			t.Errorf("apply %q on host %d after %v: %v %s", cmd, i, time.Since(start), err, out)
			return
		}
		applied++
	}
	// Hosts 1-4 update the account at once; 5, the sequencer, is killed
	// while they do.
	for i := 1; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range rounds {
				cmd := "deposit 100"
				if (i+k)%2 == 0 {
					cmd = "interest 1%"
				}
				apply(i, cmd)
			}
		}()
	}
	time.Sleep(300 * time.Millisecond)
	l.procs[5].Kill()
	killed := time.Now()
	c.Eventually("the survivors elect a new sequencer", 15*time.Second, func() bool {
		s := c.sequencer(1)
		return s != 0 && s != 5
	})
	t.Logf("new sequencer %d known %v after the SIGKILL (20%% loss)", c.sequencer(1), time.Since(killed).Round(time.Millisecond))
	wg.Wait()
	l.start(5)
	c.Eventually("host 5 answers again", 5*time.Second, func() bool { _, err := c.Status(5); return err == nil })
	apply(5, "set after restart")
	for i := 1; i <= n; i++ {
		lab.Loss(i, 0)
	}
	bal := c.sameState(uint64(applied), 1, 2, 3, 4, 5)
	t.Logf("all five replicas hold balance %s after %d commands", bal, applied)
}
