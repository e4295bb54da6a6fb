package permission_test

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/internal/testkit/mutexscript"
	"github.com/synclab/synclab/internal/testkit/scenario"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/liveness"
	"github.com/synclab/synclab/pkg/mutex"
	"github.com/synclab/synclab/pkg/mutex/permission"
	"github.com/synclab/synclab/pkg/wire"
)

// TestScenarios replays the scripts in testdata/scenarios on the simulator
// with fixed per-link delays (internal/testkit/mutexscript: no jitter, no loss,
// the notes' interleavings, drawn; -mutexscript.out DIR writes the
// drawings) and compares what happens with the output recorded in the
// file. Regenerate after a deliberate change with
//
//	go test ./pkg/mutex/permission -run TestScenarios -rewrite
//
// Commands: mutexscript's (acquire ID LOCK, which prints its request;
// release ID REQ; run D; crash ID, restart ID; cut A B, heal), and
//
//	cluster VARIANT N [DELAY]  N members 1..N running ricartagrawala,
//	                           lamport or bakery, every link DELAY
//	                           (default 1ms)
//	lamport ID T               member ID's Lamport clock moved up to T
//	                           (its next request is stamped T+1)
//	counts                     protocol frames sent by kind since the last
//	                           counts (heartbeats apart), and their sum (and
//	                           the messages they carry, where a frame
//	                           carries two: lamport_requeue)
//
// Each command prints what it caused: every protocol frame sent (ms since
// the start, sender->receiver, kind, the request's stamp and the fields
// that matter) and the grants, releases, losses and membership events.
func TestScenarios(t *testing.T) {
	scenario.Files(t, func(t *testing.T, script string) string {
		sc := &scene{counts: map[wire.Kind]int{}}
		return mutexscript.Run(t, script, mutexscript.Setup{
			New:          newCluster,
			Event:        eventLine,
			Prefix:       func(d time.Duration, id uint32) string { return fmt.Sprintf("%s %d", at(d), id) },
			ShowRequests: true,
			OnSend:       sc.sent,
			Docs:         map[string]string{"ra_notes": "mutex-ricart-agrawala"},
			Commands: map[string]func(r *mutexscript.Script, a scenario.Args){
				"lamport": func(r *mutexscript.Script, a scenario.Args) {
					v := a.Uint(2)
					r.S.Do(a.ID(1), func(c core.Core) { c.(*permission.Core).MoveLamport(v) })
				},
				"counts": sc.report,
			},
		})
	})
}

// scene counts a script's protocol frames, heartbeats apart.
type scene struct {
	counts map[wire.Kind]int
	alive  int
}

// report prints the counts and starts them again.
func (sc *scene) report(r *mutexscript.Script, _ scenario.Args) {
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
	r.Printf("%s total=%d (heartbeats apart: %d)\n", strings.Join(parts, " "), sum, sc.alive)
	clear(sc.counts)
	sc.alive = 0
}

func at(d time.Duration) string {
	return fmt.Sprintf("%9.3fms", float64(d)/float64(time.Millisecond))
}

func newCluster(r *mutexscript.Script, a scenario.Args) mutexscript.Cluster {
	var v permission.Variant
	switch a.F[1] {
	case "ricartagrawala":
		v = permission.RicartAgrawala
	case "lamport":
		v = permission.Lamport
	case "bakery":
		v = permission.Bakery
	default:
		r.T.Fatalf("%q: want ricartagrawala, lamport or bakery", a.Line)
	}
	cl := mutexscript.Cluster{New: func(id uint32, env core.Env) (mutex.Algorithm, error) {
		cfg := permission.DefaultLANConfig()
		cfg.Variant, cfg.ID, cfg.Members, cfg.Persisted, cfg.Lamport = v, id, env.Members, env.State, env.Lamport
		return permission.New(cfg)
	}}
	for id := uint32(1); id <= uint32(a.Uint(2)); id++ {
		cl.Members = append(cl.Members, id)
	}
	if len(a.F) > 3 {
		cl.Delay = a.Duration(3)
	}
	return cl
}

// sent prints a protocol frame as it leaves, and counts it. Heartbeats
// are counted apart, relayed ones too.
func (sc *scene) sent(r *mutexscript.Script, f sim.SentFrame) {
	k := f.Frame.Kind
	what := describe(r.T, k, f.Frame.Payload)
	if k == wire.KindPermHeartbeat || strings.Contains(what, wire.KindPermHeartbeat.String()) {
		sc.alive++
		return
	}
	sc.counts[k]++
	r.Printf("%s %d->%d %v lamport=%d %s\n", at(r.S.Elapsed()), f.From, f.Frame.Receiver, k, f.Frame.Lamport, what)
}

// describe shows the fields of a frame that matter.
func describe(t testing.TB, k wire.Kind, payload []byte) string {
	switch k {
	case wire.KindRARequest, wire.KindLamportRequest, wire.KindLamportRelease,
		wire.KindBakeryDoorway, wire.KindBakeryChoosing, wire.KindBakeryTicket:
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
	case wire.KindRAReply, wire.KindLamportAck, wire.KindBakeryNumber, wire.KindBakeryChosen, wire.KindBakeryTicketReply:
		var r wire.PermReply
		if err := r.UnmarshalBinary(payload); err != nil {
			t.Fatalf("%v: %v", k, err)
		}
		what := fmt.Sprintf("lock=%s answers=%d known=%s", r.Name, r.Stamp, fenceText(r.Fence))
		switch k {
		case wire.KindLamportAck:
			what += fmt.Sprintf(" want=%d", r.Want)
		case wire.KindBakeryNumber:
			what += fmt.Sprintf(" num=%d", r.Want)
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

// eventLine shows the grants, releases, losses and membership events.
func eventLine(_ *mutexscript.Script, e sim.Event) (string, bool) {
	switch e.Name {
	case mutex.EventGranted, mutex.EventReleased, mutex.EventLost, mutex.EventRenewed,
		liveness.EventMemberDown, liveness.EventMemberUp, permission.EventRejoined, permission.EventReissued,
		permission.EventLinkDown, permission.EventLinkUp, permission.EventUnconfirmed, permission.EventMemberHeard,
		"sim.crash", "sim.restart", "sim.cut", "sim.heal":
	default:
		return "", false
	}
	line := fmt.Sprintf("%s %d %s", at(e.At), e.Node, e.Name)
	for i := 0; i+1 < len(e.Args); i += 2 {
		k := e.Args[i]
		v := e.Args[i+1]
		switch k {
		case "expires":
			continue
		case "fence", "known":
			v = fenceText(v.(uint64))
		}
		line += fmt.Sprintf(" %v=%v", k, v)
	}
	return line, true
}
