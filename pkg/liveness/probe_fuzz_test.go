package liveness

import (
	"testing"
	"time"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/wire"
)

// FuzzProbes drives a member of QuietLANConfig with any sequence of
// heartbeats, probes and other frames from members and strangers, and
// ticks at any times: it never panics, sends only heartbeats (to all, or
// one to a prober alone) and probes (to one member, never a suspected
// one), answers a member at most once per probe it took from it, and
// always has a deadline.
func FuzzProbes(f *testing.F) {
	f.Add([]byte{0, 2, 1, 10, 1, 3, 0, 200, 2, 2, 1, 5})
	f.Add([]byte{1, 2, 1, 0, 1, 2, 1, 0, 1, 2, 1, 1, 2, 0, 0, 255, 2, 0, 0, 255, 2, 0, 0, 255})
	f.Fuzz(func(t *testing.T, in []byte) {
		c := newCore(t, 1, []uint32{1, 2, 3, 4}, QuietLANConfig())
		now := t0
		probesFrom := map[uint32]int{}
		answersTo := map[uint32]int{}
		for len(in) >= 4 {
			op, from, kind, dt := in[0]%3, uint32(in[1]%6), in[2]%3, time.Duration(in[3])*time.Millisecond/4
			in = in[4:]
			now = now.Add(dt)
			switch op {
			case 0, 1:
				k := []wire.Kind{wire.KindHeartbeat, wire.KindHeartbeatProbe, wire.KindLeaderProbe}[kind]
				p, _ := wire.Heartbeat{Interval: 300, Alive: uint32(dt)}.AppendBinary(nil)
				if op == 1 {
					p = p[:int(dt)%9] // truncated, or whole
				}
				err := c.Step(core.Message{From: from, Kind: k, Payload: p, Time: now})
				if err == nil && k == wire.KindHeartbeatProbe {
					probesFrom[from]++
				}
			case 2:
				c.Tick(now)
			}
			for _, m := range c.Ready().Messages {
				var hb wire.Heartbeat
				if err := hb.UnmarshalBinary(m.Payload); err != nil {
					t.Fatalf("sent %+v: %v", m, err)
				}
				switch {
				case m.Kind == wire.KindHeartbeat && m.To == core.Broadcast:
				case m.Kind == wire.KindHeartbeat && m.To >= 2 && m.To <= 4:
					if answersTo[m.To]++; answersTo[m.To] > probesFrom[m.To] {
						t.Fatalf("%d answers to member %d for %d probes", answersTo[m.To], m.To, probesFrom[m.To])
					}
				case m.Kind == wire.KindHeartbeatProbe && m.To >= 2 && m.To <= 4:
					if c.State(m.To) == Suspect {
						t.Fatalf("probed member %d, suspected", m.To)
					}
				default:
					t.Fatalf("sent %+v", m)
				}
			}
		}
	})
}
