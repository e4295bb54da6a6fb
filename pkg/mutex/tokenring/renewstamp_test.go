package tokenring_test

import (
	"errors"
	"testing"
	"time"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/mutex"
	"github.com/synclab/synclab/pkg/mutex/internal/mutextest"
	"github.com/synclab/synclab/pkg/mutex/tokenring"
	"github.com/synclab/synclab/pkg/wire"
)

// handRing is three tokenring cores (keyed: TrustSenders) wired by hand:
// the test says when each is ticked and when each frame arrives (its
// receive stamp), so that a sequence the simulator's loop would not
// produce on its own (frames read, then the client's calls, before the
// next reading of the clock) is written out step by step.
type handRing struct {
	t     *testing.T
	cores map[uint32]*tokenring.Core
	queue []core.Message
	// held keeps the frames to member 1 instead of delivering them
	// (its loop is busy: they wait in its kernel).
	hold bool
	held []core.Message
	// events are member 1's events.
	events []core.Event
}

func newHandRing(t *testing.T) *handRing {
	h := &handRing{t: t, cores: map[uint32]*tokenring.Core{}}
	for _, id := range []uint32{1, 2, 3} {
		cfg := tokenring.DefaultLANConfig()
		cfg.ID, cfg.Members, cfg.TrustSenders = id, []uint32{1, 2, 3}, true
		c, err := tokenring.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		h.cores[id] = c
	}
	return h
}

// collect takes member id's sends into the queue.
func (h *handRing) collect(id uint32) {
	c := h.cores[id]
	rd := c.Ready()
	if id == 1 {
		h.events = append(h.events, rd.Events...)
	}
	if a, ok := core.Core(c).(core.Advancer); ok {
		a.Advance(true)
	}
	for _, m := range rd.Messages {
		m.From = id
		m.Stream = m.Kind == wire.KindToken
		if m.To == core.Broadcast {
			for _, to := range []uint32{1, 2, 3} {
				if to != id {
					b := m
					b.To = to
					h.queue = append(h.queue, b)
				}
			}
			continue
		}
		h.queue = append(h.queue, m)
	}
}

// deliver steps every queued frame, and what it makes its receiver
// send, into its receiver stamped at (those to member 1 kept while
// hold).
func (h *handRing) deliver(at time.Time) {
	for len(h.queue) > 0 {
		m := h.queue[0]
		h.queue = h.queue[1:]
		if h.hold && m.To == 1 {
			h.held = append(h.held, m)
			continue
		}
		m.Time = at
		if err := h.cores[m.To].Step(m); err != nil {
			h.t.Fatalf("%v from %d to %d: %v", m.Kind, m.From, m.To, err)
		}
		h.collect(m.To)
	}
}

// run ticks every member every millisecond from from for d (each frame
// arriving at the next tick), and returns the end.
func (h *handRing) run(from time.Time, d time.Duration) time.Time {
	now := from
	for ; now.Before(from.Add(d)); now = now.Add(time.Millisecond) {
		h.deliver(now)
		for _, id := range []uint32{1, 2, 3} {
			h.cores[id].Tick(now)
			h.collect(id)
		}
	}
	h.deliver(now)
	return now
}

// read is member 1's loop reading the clock at now: a Tick, and the
// one it asks for at once after (a Tick late behind the member's timers
// is put off for the frames that may wait: lateTick).
func (h *handRing) read(now time.Time) {
	c := h.cores[1]
	c.Tick(now)
	h.collect(1)
	for range 3 {
		if dl := c.Deadline(); dl.Sub(now) < 10*time.Millisecond {
			c.Tick(later(dl, now))
			h.collect(1)
		}
	}
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// renewOnCheck renews member 1's request req at at, on a check it sends
// then, which members 2 and 3 answer at once; their answers wait, held
// (in member 1's kernel), and are returned.
func (h *handRing) renewOnCheck(req mutex.RequestID, at time.Time) []core.Message {
	h.t.Helper()
	if err := h.cores[1].Renew(at, req, 0); err != nil {
		h.t.Fatal(err)
	}
	h.collect(1)
	h.hold = true
	h.deliver(at.Add(time.Millisecond))
	h.hold = false
	held := h.held
	h.held = nil
	if len(held) == 0 {
		h.t.Fatalf("member 1's renewal at %v sent no check", at)
	}
	return held
}

// outcomes are member 1's typed outcomes since the last call.
func (h *handRing) outcomes() []mutex.Outcome { return h.cores[1].Outcomes() }

// TestRenewalNotDatedByEarlierHolder: member 1's holder renews on an old
// check; the check's answers are read (stamped S) and, before the next
// reading of the clock, the holder releases. The reading comes (the core
// asks for it at once), the check fresh. A second request is granted at once on that check; it renews
// after the check's window, and the new check's answers come 10 ms after
// its lease ended: the renewal is lost (expired), as any renewal whose
// answers came after the lease it renews. With the first holder's stamp
// S left to date it (9adf372 reverted), it was judged at S, before the
// second request was even granted, and renewed a lease over 10 ms before.
// The same without that reading (the loop reads its next frames, or its
// client's calls, first): the released holder's pending renewal was kept,
// so the next holder's Renew did not begin a renewal of its own and kept
// the stamp (found by review and by the engineer who wrote this test).
func TestRenewalNotDatedByEarlierHolder(t *testing.T) {
	for _, readAfterRelease := range []bool{true, false} {
		name := "read after the release"
		if !readAfterRelease {
			name = "no reading before the next renewal"
		}
		t.Run(name, func(t *testing.T) { renewalNotDatedByEarlierHolder(t, readAfterRelease) })
	}
}

func renewalNotDatedByEarlierHolder(t *testing.T, readAfterRelease bool) {
	h := newHandRing(t)
	cfg := tokenring.DefaultLANConfig()
	now := h.run(t0, time.Second)
	c := h.cores[1]
	first, err := c.Acquire(now, mutex.Request{Lock: "x", Client: "first"})
	if err != nil {
		t.Fatal(err)
	}
	h.collect(1)
	now = h.run(now, 2*time.Second)
	if out := h.outcomes(); len(out) != 1 {
		t.Fatalf("first request: outcomes %+v, want its grant", out)
	} else if g, ok := out[0].(mutex.Granted); !ok || g.ID != first {
		t.Fatalf("first request: outcomes %+v, want its grant", out)
	}
	now = h.run(now, cfg.ConfirmWindow+50*time.Millisecond)

	// The renewal's check goes out; its answers are read, stamped s, and
	// the holder releases before the next reading.
	h.queue = h.renewOnCheck(first, now)
	s := now.Add(2 * time.Millisecond)
	h.deliver(s)
	if err := c.Release(s.Add(3*time.Millisecond), first); err != nil {
		t.Fatal(err)
	}
	h.collect(1)
	// The core asks for that reading at once (the renewal it judges
	// there); the loop makes it.
	if dl := c.Deadline(); dl.After(s.Add(5 * time.Millisecond)) {
		t.Fatalf("after the release the core asks for a reading %v after s, want at once", dl.Sub(s))
	}
	if readAfterRelease {
		h.read(s.Add(5 * time.Millisecond))
	}
	h.outcomes()

	// A second request, granted at once on the check of s, renews after
	// the check's window, 20 ms before its 300 ms lease ends; the check's
	// answers come 10 ms after that end.
	granted := s.Add(10 * time.Millisecond)
	second, err := c.Acquire(granted, mutex.Request{Lock: "x", Client: "second", Lease: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	h.collect(1)
	g, ok := mutex.Granted{}, false
	for _, o := range h.outcomes() {
		if gg, is := o.(mutex.Granted); is && gg.ID == second {
			g, ok = gg, true
		}
	}
	if !ok {
		t.Fatalf("second request not granted at once on the check of %v", s)
	}
	renew := g.Expires.Add(-20 * time.Millisecond)
	if renew.Sub(s) <= cfg.ConfirmWindow {
		t.Fatalf("the second request's renewal at %v is within the confirm window of the check of %v: the trial needs a new check", renew.Sub(s), s)
	}
	h.queue = h.renewOnCheck(second, renew)
	answers := g.Expires.Add(10 * time.Millisecond)
	h.deliver(answers)
	h.read(answers.Add(time.Millisecond))
	for _, o := range h.outcomes() {
		switch o := o.(type) {
		case mutex.Renewed:
			t.Fatalf("the second request (granted %v after the first holder's check answers, lease ending %v after them) renewed on a check answered %v after its lease ended: %+v",
				granted.Sub(s), g.Expires.Sub(s), answers.Sub(g.Expires), o)
		case mutex.Lost:
			if o.ID == second && o.Reason == mutex.Expired {
				return
			}
		}
	}
	t.Fatalf("the second request's renewal, answered after its lease ended: not lost (expired)")
}

// TestRenewalLateSaysWhy: member 1's holder renews 40 ms before its 1 s
// lease ends, on an old check, and the renewal is lost: it must be said
// (lock_renewal_late) exactly once, with its cause, however it is lost.
//
//   - loop_late: the check's answers (member 3's the last) came 2 ms after
//     the renewal, in time, and the loop read them 350 ms after it, the
//     check too old by then.
//   - answers_late: they came 10 ms after the lease ended, read as late.
//   - answers_late, check fresh: they came 10 ms after the lease ended and
//     were read 1 ms later, the check still within its window. The table
//     took the renewal, judged at the answers' stamp, as expired: lost as
//     lock_lost expired without a word of why.
//   - unanswered: no answer came before the lease ended (both lost), the
//     loop expiring it at its end; the answers that come after change
//     nothing. Lost as lock_lost expired without a word of why.
//   - unanswered, found by the release: the same, the client's release
//     (after the end, before any reading) the first to find it over.
func TestRenewalLateSaysWhy(t *testing.T) {
	late := []string{"came after the lease it renews had ended (the last, from member 3, 10ms after the end)", "not this member's loop", "slow or lossy link between this member and member 3", "Check the link"}
	for _, tc := range []struct {
		name, cause, members string
		// answered and read are when member 3's answer comes (never, if
		// zero) and when member 1's loop next reads the clock, from the
		// renewal; end is the lease's end from it.
		answered, read func(end time.Duration) time.Duration
		says           []string
		release        bool // the client releases at read instead
	}{
		{"loop_late", "loop_late", "member 3",
			func(time.Duration) time.Duration { return 2 * time.Millisecond },
			func(time.Duration) time.Duration { return 350 * time.Millisecond },
			[]string{"came in time (the last, from member 3, 38ms before the end of the lease it renews)", "its loop ran late", "Check the host's load"}, false},
		{"answers_late", "answers_late", "member 3",
			func(end time.Duration) time.Duration { return end + 10*time.Millisecond },
			func(time.Duration) time.Duration { return 350 * time.Millisecond },
			late, false},
		{"answers_late, check fresh", "answers_late", "member 3",
			func(end time.Duration) time.Duration { return end + 10*time.Millisecond },
			func(end time.Duration) time.Duration { return end + 11*time.Millisecond },
			late, false},
		{"unanswered", "answers_late", "members 2 and 3",
			nil,
			func(end time.Duration) time.Duration { return end },
			[]string{"had not come when the lease it renews ended (none yet from members 2 and 3)", "not this member's loop", "slow or lossy link between this member and members 2 and 3", "Check the link"}, false},
		{"unanswered, found by the release", "answers_late", "members 2 and 3",
			nil,
			func(end time.Duration) time.Duration { return end + time.Millisecond },
			[]string{"had not come when the lease it renews ended (none yet from members 2 and 3)"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHandRing(t)
			now := h.run(t0, time.Second)
			c := h.cores[1]
			req, err := c.Acquire(now, mutex.Request{Lock: "x", Client: "trial", Lease: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			h.collect(1)
			var g mutex.Granted
			for end := now.Add(2 * time.Second); g.ID == 0 && now.Before(end); {
				now = h.run(now, time.Millisecond)
				for _, o := range h.outcomes() {
					if gg, ok := o.(mutex.Granted); ok && gg.ID == req {
						g = gg
					}
				}
			}
			if g.ID == 0 {
				t.Fatal("never granted")
			}
			renew := g.Expires.Add(-40 * time.Millisecond)
			h.run(now, renew.Sub(now))
			held := h.renewOnCheck(req, renew)
			end := g.Expires.Sub(renew)
			// Member 2's answer lost; member 3's completes the check.
			var three []core.Message
			for _, m := range held {
				if m.From == 3 {
					three = append(three, m)
				}
			}
			h.events = nil
			h.outcomes()
			if tc.answered != nil {
				h.queue = three
				h.deliver(renew.Add(tc.answered(end)))
			}
			h.queue = nil // what member 1 sends meanwhile is lost
			if tc.release {
				if err := c.Release(renew.Add(tc.read(end)), req); !errors.Is(err, mutex.ErrExpired) {
					t.Fatalf("the release after the lease's end: %v, want %v", err, mutex.ErrExpired)
				}
				h.collect(1)
			}
			h.read(renew.Add(tc.read(end)))
			if tc.answered == nil {
				// The answers come after all, and are read: too late to
				// renew anything, and nothing more to say.
				h.queue = three
				h.deliver(renew.Add(tc.read(end) + 5*time.Millisecond))
				h.read(renew.Add(tc.read(end) + 6*time.Millisecond))
			}
			h.queue = nil
			h.read(renew.Add(tc.read(end) + time.Second))
			mutextest.RenewalLateSaid(t, h.events, tc.cause, tc.members, tc.says...)
			lost := false
			for _, o := range h.outcomes() {
				switch o := o.(type) {
				case mutex.Renewed:
					t.Fatalf("renewed: %+v", o)
				case mutex.Lost:
					lost = o.ID == req && o.Reason == mutex.Expired
				}
			}
			if !lost {
				t.Fatal("the renewal was not lost (expired)")
			}
		})
	}
}
