package transport

import (
	"fmt"
	"net/netip"
	"testing"
	"time"
)

// review-order: two members on one IP (distinct ports, as the demo and the
// e2e tests on 127.0.0.1) stream to one acceptor, interleaved. peers: the
// acceptor's Config.Peers (nil: as the doc says, "every IP counts as one
// member's"; both: as internal/daemon sets it).
func reviewSharedIP(t *testing.T, withPeers bool, onlyA1 ...bool) {
	k := &kit{t: t, real: true}
	a1 := k.open(Config{Listen: k.addr(1)})
	a2 := k.open(Config{Listen: k.addr(1)})
	cfg := Config{Listen: k.addr(0)}
	if withPeers {
		cfg.Peers = []netip.AddrPort{a1.LocalAddr(), a2.LocalAddr()}
		if len(onlyA1) > 0 {
			// The acceptor's config lists a1 only (a2 a member not yet,
			// or no more, in its config; another cluster's member on
			// the host dialing the wrong port): a2 is admitted (its IP
			// is a member's), and the transport keys a1 and a2 as one.
			cfg.Peers = cfg.Peers[:1]
		}
	}
	b := k.open(cfg)
	to := b.LocalAddr()
	const n = 300
	got := map[byte]int{}
	last := map[byte]int{'a': -1, 'b': -1}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case p := <-b.Packets():
				var i int
				fmt.Sscanf(string(p.Data[1:]), "%d", &i)
				s := p.Data[0]
				if i <= last[s] {
					t.Errorf("from %c: %d after %d", s, i, last[s])
				}
				last[s] = i
				got[s]++
			case <-time.After(2 * time.Second):
				return
			}
		}
	}()
	for i := range n {
		mustSend(t, a1.SendStream(to, []byte(fmt.Sprintf("a%d", i)), nil))
		mustSend(t, a2.SendStream(to, []byte(fmt.Sprintf("b%d", i)), nil))
		time.Sleep(time.Millisecond)
	}
	<-done
	st := b.Stats()
	t.Logf("peers=%v: delivered a1 %d/%d a2 %d/%d; inbound_superseded %d superseded_frames %d; a1 reconnects %d a2 reconnects %d",
		withPeers, got['a'], n, got['b'], n, st.InboundSuperseded, st.SupersededFrames, a1.Stats().Reconnects, a2.Stats().Reconnects)
	if got['a'] != n || got['b'] != n || st.InboundSuperseded != 0 {
		t.Errorf("frames lost on a healthy loopback with two members on one IP")
	}
}

func TestSharedIPNoPeersUnordered(t *testing.T)     { reviewSharedIP(t, false) }
func TestSharedIPDaemonPeersUnordered(t *testing.T) { reviewSharedIP(t, true) }

// A member's link idles out (IdleTimeout/2) and redials between bursts:
// frames lost across the idle-close/redial cycles, receiver reading at
// `lag` per frame.
func reviewIdleCycles(t *testing.T, lag time.Duration) {
	k := &kit{t: t, real: true}
	sc := StreamConfig{IdleTimeout: 300 * time.Millisecond}
	a := k.open(Config{Listen: k.addr(1), Stream: sc})
	b := k.open(Config{Listen: k.addr(0), Stream: sc, Peers: []netip.AddrPort{a.LocalAddr()}})
	to := b.LocalAddr()
	got, last, disorder := 0, -1, 0
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case p := <-b.Packets():
				var i int
				fmt.Sscanf(string(p.Data), "%d", &i)
				if i <= last {
					disorder++
				}
				last = i
				got++
				time.Sleep(lag)
			case <-time.After(3 * time.Second):
				return
			}
		}
	}()
	const cycles, burst = 6, 100
	for c := range cycles {
		for i := range burst {
			mustSend(t, a.SendStream(to, []byte(fmt.Sprint(c*burst+i)), nil))
		}
		time.Sleep(250 * time.Millisecond)
	}
	<-done
	st := b.Stats()
	t.Logf("lag %v: delivered %d/%d, out of order %d; superseded %d frames %d; reconnects %d", lag, got, cycles*burst, disorder, st.InboundSuperseded, st.SupersededFrames, a.Stats().Reconnects)
	if got != cycles*burst || disorder != 0 {
		t.Errorf("lost %d, disorder %d", cycles*burst-got, disorder)
	}
}

func TestIdleCyclesNoLoss(t *testing.T)             { reviewIdleCycles(t, 0) }
func TestIdleCyclesSlowReceiverNoLoss(t *testing.T) { reviewIdleCycles(t, 3*time.Millisecond) }
