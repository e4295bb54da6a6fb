package timedcore

import (
	"testing"
	"time"
)

// bounded is a part that keeps a bound (the NTP client, Berkeley).
type bounded struct {
	fake
	synced bool
	half   time.Duration
}

func (b *bounded) Synchronized() bool { return b.synced }
func (b *bounded) Bound(now time.Time) (time.Time, time.Time) {
	if !b.synced {
		return time.Time{}, time.Time{}
	}
	return now.Add(-b.half), now.Add(b.half)
}
func (b *bounded) BoundGrowthPPM() float64         { return 17 }
func (b *bounded) Pending(time.Time) time.Duration { return 3 * time.Microsecond }

// TestWindow: the bound published to applications is the NTP client's
// when there is one, Berkeley's (the group's time) otherwise, and none
// when the discipline is not synchronised or there is no discipline (a
// server alone, the lab's reference).
func TestWindow(t *testing.T) {
	cl := &bounded{half: time.Millisecond}
	c, _ := New(Config{Cluster: &fake{}, Client: cl})
	if _, ok := c.Window(now); ok {
		t.Errorf("unsynchronised client: a window")
	}
	cl.synced = true
	w, ok := c.Window(now)
	if !ok || !w.Earliest.Equal(now.Add(-time.Millisecond)) || !w.Latest.Equal(now.Add(time.Millisecond)) || w.GrowthPPM != 17 || w.Pending != 3*time.Microsecond || w.GroupTime {
		t.Errorf("client's window %+v %v", w, ok)
	}
	bk := &bounded{synced: true, half: 2 * time.Millisecond}
	c, _ = New(Config{Cluster: bk})
	if w, ok := c.Window(now); !ok || !w.GroupTime || w.Latest.Sub(w.Earliest) != 4*time.Millisecond {
		t.Errorf("Berkeley's window %+v %v", w, ok)
	}
	c, _ = New(Config{Server: newServer(t)})
	if _, ok := c.Window(now); ok {
		t.Errorf("a server alone: a window")
	}
}
