package permission_test

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"maps"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/diagram"
	"github.com/synclab/synclab/internal/scenario"
	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/internal/trace"
	"github.com/synclab/synclab/pkg/clock"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/liveness"
	"github.com/synclab/synclab/pkg/mutex"
	"github.com/synclab/synclab/pkg/mutex/permission"
	"github.com/synclab/synclab/pkg/wire"
)

var drawDir = flag.String("scenario.draw", "", "write each scenario's traces and its diagram (HTML, SVG) into this `DIR`")

// TestScenarios replays the scripts in testdata/scenarios on the simulator
// with fixed per-link delays (no jitter, no loss: the notes' interleavings,
// drawable with -scenario.draw DIR) and compares what happens with the
// output recorded in the file. Regenerate after a deliberate change with
//
//	go test ./pkg/mutex/permission -run TestScenarios -rewrite
//
// Commands:
//
//	cluster VARIANT N [DELAY]  N members 1..N running ricartagrawala or
//	                           lamport, every link DELAY (default 1ms)
//	lamport ID T               member ID's Lamport clock moved up to T
//	                           (its next request is stamped T+1)
//	acquire ID LOCK            a client of member ID asks for LOCK
//	release ID REQ             that client releases request REQ
//	run D                      let D pass
//	crash ID, restart ID       member ID stops (its disk survives), starts again
//	cut A B, heal              the link between members A and B breaks (both
//	                           ways); every link works again
//	counts                     protocol frames sent by kind since the last
//	                           counts (heartbeats apart), and their sum (and
//	                           the messages they carry, where a frame
//	                           carries two: lamport_requeue)
//
// Each command prints what it caused: every protocol frame sent (ms since
// the start, sender->receiver, kind, the request's stamp and the fields
// that matter) and the grants, releases, losses and membership events.
func TestScenarios(t *testing.T) { scenario.Files(t, runScenario) }

type scene struct {
	t      *testing.T
	s      *sim.Sim
	out    *bytes.Buffer
	seen   int
	counts map[wire.Kind]int
	alive  int
	bufs   map[uint32]*bytes.Buffer
}

func runScenario(t *testing.T, script string) string {
	sc := &scene{t: t, out: new(bytes.Buffer), counts: map[wire.Kind]int{}}
	lines, cmds := scenario.Commands(script)
	for i, line := range lines {
		sc.out.WriteString(line + "\n")
		f := cmds[i]
		if f == nil {
			continue
		}
		a := scenario.Args{T: t, Line: line, F: f}
		if f[0] != "cluster" && sc.s == nil {
			t.Fatalf("%q before cluster", line)
		}
		switch f[0] {
		case "cluster":
			delay := time.Millisecond
			if len(f) > 3 {
				delay = a.Duration(3)
			}
			sc.start(t, f[1], int(a.Uint(2)), delay)
		case "lamport":
			id, v := a.ID(1), a.Uint(2)
			sc.s.Do(id, func(c core.Core) { c.(*permission.Core).MoveLamport(v) })
		case "acquire":
			id := a.ID(1)
			sc.s.Do(id, func(c core.Core) {
				req, err := c.(*permission.Core).Acquire(sc.s.Clock(id).Now(), mutex.Request{Lock: f[2], Client: "script"})
				if err != nil {
					t.Fatalf("%s: %v", line, err)
				}
				fmt.Fprintf(sc.out, "%s %d request=%d lock=%s\n", sc.at(sc.s.Elapsed()), id, req, f[2])
			})
		case "release":
			id := a.ID(1)
			sc.s.Do(id, func(c core.Core) {
				if err := c.(*permission.Core).Release(sc.s.Clock(id).Now(), mutex.RequestID(a.Uint(2))); err != nil {
					fmt.Fprintf(sc.out, "%s %d release: %v\n", sc.at(sc.s.Elapsed()), id, err)
				}
			})
		case "run":
			sc.s.Run(a.Duration(1))
		case "cut":
			sc.s.Cut(a.ID(1), a.ID(2))
			sc.s.Cut(a.ID(2), a.ID(1))
		case "heal":
			sc.s.Heal()
		case "crash":
			sc.s.Crash(a.ID(1))
		case "restart":
			sc.s.Restart(a.ID(1))
		case "counts":
			var parts []string
			sum, msgs := 0, 0
			for _, k := range slices.Sorted(maps.Keys(sc.counts)) {
				parts = append(parts, fmt.Sprintf("%v=%d", k, sc.counts[k]))
				sum += sc.counts[k]
				msgs += sc.counts[k] * k.Messages()
			}
			if msgs != sum {
				parts = append(parts, fmt.Sprintf("messages=%d", msgs))
			}
			fmt.Fprintf(sc.out, "%s total=%d (heartbeats apart: %d)\n", strings.Join(parts, " "), sum, sc.alive)
			clear(sc.counts)
			sc.alive = 0
		default:
			t.Fatalf("unknown command %q", line)
		}
		sc.flush()
		sc.out.WriteString("\n")
	}
	if sc.s != nil {
		sc.draw(t)
	}
	return strings.TrimSuffix(sc.out.String(), "\n")
}

func (sc *scene) at(d time.Duration) string {
	return fmt.Sprintf("%9.3fms", float64(d)/float64(time.Millisecond))
}

func (sc *scene) start(t *testing.T, variant string, n int, delay time.Duration) {
	var v permission.Variant
	switch variant {
	case "ricartagrawala":
		v = permission.RicartAgrawala
	case "lamport":
		v = permission.Lamport
	default:
		t.Fatalf("cluster %s: want ricartagrawala or lamport", variant)
	}
	sc.s = sim.New(sim.Config{Seed: 1, DefaultLink: sim.LinkConfig{Delay: delay}})
	for id := uint32(1); id <= uint32(n); id++ {
		sc.s.AddNode(id, netip.AddrPort{}, func(env core.Env) core.Core {
			cfg := permission.DefaultLANConfig()
			cfg.Variant, cfg.ID, cfg.Members, cfg.Persisted, cfg.Lamport = v, id, env.Members, env.State, env.Lamport
			c, err := permission.New(cfg)
			if err != nil {
				t.Fatalf("node %d: %v", id, err)
			}
			return c
		}, clock.SimConfig{})
	}
	sc.bufs = map[uint32]*bytes.Buffer{}
	if *drawDir != "" {
		if err := sc.s.RecordTraces("mutexd", func(id uint32) (io.Writer, error) {
			sc.bufs[id] = new(bytes.Buffer)
			return sc.bufs[id], nil
		}, 0); err != nil {
			t.Fatal(err)
		}
	}
	sc.s.OnSend(sc.sent)
	sc.s.Start()
}

// sent prints a protocol frame as it leaves, and counts it. Heartbeats
// are counted apart, relayed ones too.
func (sc *scene) sent(f sim.SentFrame) {
	k := f.Frame.Kind
	what := describe(sc.t, k, f.Frame.Payload)
	if k == wire.KindPermHeartbeat || strings.Contains(what, wire.KindPermHeartbeat.String()) {
		sc.alive++
		return
	}
	sc.counts[k]++
	fmt.Fprintf(sc.out, "%s %d->%d %v lamport=%d %s\n", sc.at(sc.s.Elapsed()), f.From, f.Frame.Receiver, k, f.Frame.Lamport, what)
}

// describe shows the fields of a frame that matter.
func describe(t *testing.T, k wire.Kind, payload []byte) string {
	switch k {
	case wire.KindRARequest, wire.KindLamportRequest, wire.KindLamportRelease:
		var r wire.PermRequest
		if err := r.UnmarshalBinary(payload); err != nil {
			t.Fatalf("%v: %v", k, err)
		}
		return fmt.Sprintf("lock=%s stamp=%d known=%s", r.Name, r.Stamp, fenceText(r.Fence))
	case wire.KindLamportRequeue:
		var r wire.PermRequeue
		if err := r.UnmarshalBinary(payload); err != nil {
			t.Fatalf("%v: %v", k, err)
		}
		return fmt.Sprintf("lock=%s released=%d stamp=%d known=%s", r.Name, r.Released, r.Stamp, fenceText(r.Fence))
	case wire.KindRAReply, wire.KindLamportAck:
		var r wire.PermReply
		if err := r.UnmarshalBinary(payload); err != nil {
			t.Fatalf("%v: %v", k, err)
		}
		what := fmt.Sprintf("lock=%s answers=%d known=%s", r.Name, r.Stamp, fenceText(r.Fence))
		if k == wire.KindLamportAck {
			what += fmt.Sprintf(" want=%d", r.Want)
		}
		return what
	case wire.KindPermProbe:
		var r wire.PermProbe
		if err := r.UnmarshalBinary(payload); err != nil {
			t.Fatalf("%v: %v", k, err)
		}
		return fmt.Sprintf("member=%d", r.Member)
	case wire.KindPermProbeReply:
		var r wire.PermProbeReply
		if err := r.UnmarshalBinary(payload); err != nil {
			t.Fatalf("%v: %v", k, err)
		}
		return fmt.Sprintf("member=%d silent=%dms probe=%d", r.Member, r.SilentMS, r.Probe)
	case wire.KindPermRelay:
		var r wire.PermRelay
		if err := r.UnmarshalBinary(payload); err != nil {
			t.Fatalf("%v: %v", k, err)
		}
		unheard := ""
		if r.Flags&wire.PermRelayUnheard != 0 {
			unheard = " unheard"
		}
		return fmt.Sprintf("[%d->%d%s %v lamport=%d %s]", r.Origin, r.Target, unheard, r.Kind, r.Lamport, describe(t, r.Kind, r.Payload))
	}
	return ""
}

func fenceText(f uint64) string {
	if f == 0 {
		return "0"
	}
	return fmt.Sprintf("%d.%d", f>>16, f&0xffff)
}

// flush prints the cores' events since the last command.
func (sc *scene) flush() {
	evs := sc.s.Events()
	for _, e := range evs[sc.seen:] {
		switch e.Name {
		case mutex.EventGranted, mutex.EventReleased, mutex.EventLost, mutex.EventRenewed,
			liveness.EventMemberDown, liveness.EventMemberUp, permission.EventRejoined, permission.EventReissued,
			permission.EventLinkDown, permission.EventLinkUp, permission.EventUnconfirmed, permission.EventMemberHeard,
			"sim.crash", "sim.restart", "sim.cut", "sim.heal":
		default:
			continue
		}
		fmt.Fprintf(sc.out, "%s %d %s", sc.at(e.At), e.Node, e.Name)
		for i := 0; i+1 < len(e.Args); i += 2 {
			k := e.Args[i]
			v := e.Args[i+1]
			switch k {
			case "expires":
				continue
			case "fence", "known":
				v = fenceText(v.(uint64))
			}
			fmt.Fprintf(sc.out, " %v=%v", k, v)
		}
		sc.out.WriteString("\n")
	}
	sc.seen = len(evs)
}

// draw writes the scenario's traces and diagram when -scenario.draw is set.
func (sc *scene) draw(t *testing.T) {
	if *drawDir == "" {
		return
	}
	if err := sc.s.CloseTraces(); err != nil {
		t.Fatal(err)
	}
	var files []*trace.File
	name := strings.ReplaceAll(t.Name(), "/", "_")
	if err := os.MkdirAll(*drawDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, id := range sc.s.IDs() {
		f, err := trace.Read(bytes.NewReader(sc.bufs[id].Bytes()), fmt.Sprintf("n%d.trace", id))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
		if err := os.WriteFile(filepath.Join(*drawDir, fmt.Sprintf("%s-n%d.trace", name, id)), sc.bufs[id].Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	d, err := diagram.Build(files)
	if err != nil {
		t.Fatal(err)
	}
	for ext, write := range map[string]func(io.Writer) error{
		".svg":  func(w io.Writer) error { return d.WriteSVG(w, diagram.Options{}) },
		".html": d.WriteHTML,
	} {
		var b bytes.Buffer
		if err := write(&b); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(*drawDir, name+ext), b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
