package daemon

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/node"
	"github.com/synclab/synclab/internal/testkit/syncbuf"
	"github.com/synclab/synclab/internal/transport"
	"github.com/synclab/synclab/pkg/core"
)

// TestEventLogLimited: an event repeated a thousand times in a window is
// eventLogBurst lines, then, when the window ends, one line with the
// latest and the count; each event name counts apart; a name quiet for a
// whole window is forgotten.
func TestEventLogLimited(t *testing.T) {
	var buf bytes.Buffer
	l := newEventLog(slog.New(slog.NewTextHandler(&buf, nil)))
	t0 := time.Date(2026, 12, 6, 8, 0, 0, 0, time.UTC)
	for i := range 1000 {
		args := []any{"event", "lock_granted", "fence", i}
		if l.allow(t0.Add(time.Duration(i)*time.Millisecond), "lock_granted", slog.LevelInfo, "lock_granted", args) {
			l.log.Info("lock_granted", args...)
		}
	}
	if !l.allow(t0, "member_up", slog.LevelInfo, "member_up", nil) {
		t.Fatal("another event's first line held back")
	}
	if n := strings.Count(buf.String(), "event=lock_granted"); n != eventLogBurst {
		t.Fatalf("%d lines for 1000 events in 1 s, want %d:\n%s", n, eventLogBurst, buf.String())
	}
	l.flush(t0.Add(eventLogEvery / 2))
	if strings.Contains(buf.String(), "repeated") {
		t.Fatalf("counted before the window ended:\n%s", buf.String())
	}
	l.flush(t0.Add(eventLogEvery))
	out := buf.String()
	if n := strings.Count(out, "event=lock_granted"); n != eventLogBurst+1 || !strings.Contains(out, "fence=999 repeated=980 within=10s") {
		t.Fatalf("after the window:\n%s", out)
	}
	// The next window writes again at once.
	if !l.allow(t0.Add(eventLogEvery+time.Second), "lock_granted", slog.LevelInfo, "lock_granted", nil) {
		t.Fatal("the next window's first line held back")
	}
	// member_up was quiet for a whole window: forgotten at the next flush.
	l.flush(t0.Add(2*eventLogEvery + time.Second))
	if _, ok := l.names["member_up"]; ok || len(l.names) != 1 {
		t.Fatalf("names kept after a quiet window: %v", l.names)
	}
}

// TestEventFloodLimitedInTheLog: a daemon whose core reports 500 grants
// and 50 warnings at once, and stops, writes eventLogBurst of them to its log; every one still
// reaches the event hook and the counters, and events that warn are
// never held back.
func TestEventFloodLimitedInTheLog(t *testing.T) {
	net := transport.NewMemNetwork()
	cfg := testConfig(t, net, shortDir(t), 1, 1)
	var logged syncbuf.Buffer
	cfg.Logger = slog.New(slog.NewTextHandler(&logged, nil))
	seen := 0
	cfg.OnEvent = func(core.Event) { seen++ } // on the loop
	d, err := New(cfg, func(core.Env) (core.Core, error) { return &teller{}, nil })
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	eventually(t, "the daemon serving", func() bool { _, err := statusOf(cfg.ControlPath); return err == nil })
	if err := d.Do(context.Background(), func(n *node.Node) {
		c := n.Core().(*teller)
		for i := range 500 {
			c.events = append(c.events, core.Event{Name: "lock_granted", Args: []any{"fence", i}})
		}
		for i := range 50 {
			c.events = append(c.events, core.Event{Name: "lock_lost", Warn: true, Args: []any{"fence", i}})
		}
	}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the last warning logged", func() bool { return strings.Contains(logged.String(), "event=lock_lost fence=49") })
	var n int
	d.Do(context.Background(), func(*node.Node) { n = seen })
	if n != 550 {
		t.Fatalf("the hook saw %d events, want 550", n)
	}
	if got := strings.Count(logged.String(), "event=lock_lost"); got != 50 {
		t.Fatalf("%d lock_lost lines for 50 warnings, want every one", got)
	}
	if got := strings.Count(logged.String(), "event=lock_granted"); got != eventLogBurst {
		t.Fatalf("%d lock_granted lines for 500 grants, want %d", got, eventLogBurst)
	}
	st := status(t, cfg.ControlPath)
	if st.Events["lock_granted"] != 500 {
		t.Fatalf("status counts %v, want 500 lock_granted", st.Events)
	}
	// Stopped within the window: what it held back is written, with the
	// count, before "stopped".
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	out := logged.String()
	if i, j := strings.Index(out, "fence=499 repeated=480"), strings.Index(out, "msg=stopped"); i < 0 || j < i {
		t.Errorf("the held-back grants' count not written before the daemon's stop:\n%s", out[max(0, len(out)-600):])
	}
}
