package labnet

import (
	"time"

	"github.com/synclab/synclab/internal/testkit/labnet/l2switch"
)

// Link is how frames travel over one directed link of a lab built
// WithSwitch: delay, jitter, loss, duplication, down. See l2switch.Link.
type Link = l2switch.Link

// LinkStats counts the frames of one directed link of a lab built
// WithSwitch. See l2switch.Stats.
type LinkStats = l2switch.Stats

// WithSwitch builds the lab around a user-space Ethernet switch instead of
// the kernel bridge, so that links can have delay, jitter, asymmetry and
// duplication (SetLink, SetDelay), which this kernel cannot do: it has no
// netem qdisc. The switch runs inside the test binary, on sockets opened in
// the bridge namespace, and adds a few tens of microseconds of latency per
// frame; Partition, Split, Loss and LossIP keep their meaning and are
// applied by the switch. Kernel receive timestamps on the hosts include the
// emulated delay, as they would on a real network.
func WithSwitch() Option { return func(c *config) { c.sw = true } }

// WithSeed seeds the switch's random draws (loss, duplication, jitter), so
// that a failing run can be repeated as closely as the host's scheduling
// allows. The seed of every run is logged.
func WithSeed(seed uint64) Option { return func(c *config) { c.seed = seed } }

func (l *Lab) openSwitch() error {
	ports := make([]string, len(l.hosts))
	for i, h := range l.hosts {
		ports[i] = h.Port()
	}
	seed := l.cfg.seed
	if seed == 0 {
		seed = randomSeed()
	}
	// The packet sockets are opened on a thread inside the bridge
	// namespace and stay bound to it; the switch's goroutines can then run
	// anywhere.
	return inNamespace(nsPath(l.bridgeNS), func() (err error) {
		l.sw, err = l2switch.Open(ports, l2switch.Config{Seed: seed})
		if err == nil {
			l.t.Logf("labnet: lab %s: user-space switch, seed %d", l.prefix, seed)
		}
		return err
	})
}

func (l *Lab) needSwitch(what string) {
	l.t.Helper()
	if l.sw == nil {
		l.t.Fatalf("labnet: %s needs a lab built with labnet.WithSwitch() (the kernel has no netem)", what)
	}
}

// SetLink replaces the parameters of the directed link from host a to host b.
// It needs WithSwitch. Note that Partition and Heal set and clear the
// link's Down field, and SetLink overrides them.
func (l *Lab) SetLink(from, to int, lk Link) {
	l.t.Helper()
	l.needSwitch("SetLink")
	l.checkPair("SetLink", from, to)
	if err := l.sw.SetLink(from, to, lk); err != nil {
		l.t.Fatalf("labnet: SetLink(%d, %d): %v", from, to, err)
	}
}

// SetDelay gives the link between a and b, both ways, this delay and
// jitter, keeping its other parameters. SetDelay(a, b, 0, 0) removes it. For
// an asymmetric link use SetLink per direction. It needs WithSwitch.
func (l *Lab) SetDelay(a, b int, delay, jitter time.Duration) {
	l.t.Helper()
	l.needSwitch("SetDelay")
	l.checkPair("SetDelay", a, b)
	for _, k := range [][2]int{{a, b}, {b, a}} {
		lk, err := l.sw.Link(k[0], k[1])
		if err == nil {
			lk.Delay, lk.Jitter = delay, jitter
			err = l.sw.SetLink(k[0], k[1], lk)
		}
		if err != nil {
			l.t.Fatalf("labnet: SetDelay(%d, %d, %v, %v): %v", a, b, delay, jitter, err)
		}
	}
}

// LinkStats returns the counters of the directed link from -> to. It needs
// WithSwitch.
func (l *Lab) LinkStats(from, to int) LinkStats {
	l.t.Helper()
	l.needSwitch("LinkStats")
	l.checkPair("LinkStats", from, to)
	st, err := l.sw.Stats(from, to)
	if err != nil {
		l.t.Fatalf("labnet: LinkStats(%d, %d): %v", from, to, err)
	}
	return st
}

// setDown sets or clears Down on directed links, for Partition and Heal.
func (l *Lab) setDown(what string, links [][2]int, down bool) {
	l.t.Helper()
	for _, k := range links {
		lk, err := l.sw.Link(k[0], k[1])
		if err == nil {
			lk.Down = down
			err = l.sw.SetLink(k[0], k[1], lk)
		}
		if err != nil {
			l.t.Fatalf("labnet: %s: %v", what, err)
		}
	}
}
