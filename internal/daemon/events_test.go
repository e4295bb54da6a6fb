package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/ctl"
	"github.com/synclab/synclab/internal/node"
	"github.com/synclab/synclab/internal/transport"
	"github.com/synclab/synclab/pkg/core"
)

// teller is a core that reports the events it is told to, in its next
// Ready, and nothing else.
type teller struct{ events []core.Event }

func (c *teller) Step(core.Message) error          { return nil }
func (c *teller) StepDatagram(core.Datagram) error { return core.ErrUnexpectedDatagram }
func (c *teller) Status() any                      { return nil }
func (c *teller) Tick(time.Time)                   {}
func (c *teller) Ready() core.Ready {
	rd := core.Ready{Events: c.events}
	c.events = nil
	return rd
}

// Each event reaches a client of GET /v1/events as it is emitted: the
// stream writes and flushes it alone, without waiting for a later event
// or a timer (a buffered stream would hold this test's single events
// until it times out).
func TestEventsStreamDeliversEachEventAtOnce(t *testing.T) {
	net := transport.NewMemNetwork()
	cfg := testConfig(t, net, shortDir(t), 1, 1)
	cfg.Members = map[uint32]netip.AddrPort{1: addr(1)}
	d, err := New(cfg, func(core.Env) (core.Core, error) { return &teller{}, nil })
	if err != nil {
		t.Fatal(err)
	}
	start(t, d)
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	got := make(chan EventRecord)
	streamErr := make(chan error, 1)
	go func() {
		c := ctl.NewClient(cfg.ControlPath, "testd")
		defer c.Close()
		streamErr <- c.Stream(ctx, "/v1/events", func(raw json.RawMessage) error {
			var e EventRecord
			if err := json.Unmarshal(raw, &e); err != nil {
				return err
			}
			select {
			case got <- e:
			case <-ctx.Done():
			}
			return nil
		})
	}()
	eventually(t, "the stream's subscription", func() bool {
		d.subMu.Lock()
		defer d.subMu.Unlock()
		return len(d.subs) == 1
	})
	for i := range 5 {
		name := fmt.Sprintf("told_%d", i)
		if err := d.Do(ctx, func(n *node.Node) {
			c := n.Core().(*teller)
			c.events = append(c.events, core.Event{Name: name, Args: []any{"seq", i}})
		}); err != nil {
			t.Fatal(err)
		}
		select {
		case e := <-got:
			if e.Name != name || e.Attrs["seq"] != float64(i) || e.Lost != 0 {
				t.Fatalf("event %d read as %+v, want %s with seq %d", i, e, name, i)
			}
		case err := <-streamErr:
			t.Fatalf("the stream ended: %v", err)
		case <-ctx.Done():
			t.Fatalf("event %s not delivered while no later event came", name)
		}
	}
	cancel()
	if err := <-streamErr; !errors.Is(err, context.Canceled) {
		t.Errorf("stream ended with %v, want the client's cancellation", err)
	}
}

// TestEmitWarn: an event a core marks Warn is logged at WARN, any other at
// INFO; both are counted.
func TestEmitWarn(t *testing.T) {
	var buf bytes.Buffer
	d := &Daemon{log: slog.New(slog.NewTextHandler(&buf, nil)), events: map[string]uint64{}}
	d.emit(core.Event{Name: "member_up", Msg: "member 2 is up", Args: []any{"member", 2}})
	d.emit(core.Event{Name: "link_down", Msg: "the link to member 2 is broken", Args: []any{"member", 2}, Warn: true})
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "level=INFO") || !strings.Contains(lines[0], "event=member_up") ||
		!strings.Contains(lines[1], "level=WARN") || !strings.Contains(lines[1], "event=link_down") {
		t.Errorf("logged:\n%s\nwant member_up at INFO, then link_down at WARN", buf.String())
	}
	if d.events["link_down"] != 1 || d.events["member_up"] != 1 {
		t.Errorf("counted %v", d.events)
	}
}
