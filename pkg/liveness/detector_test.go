package liveness

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func transitions(d *Detector) []string {
	var out []string
	for _, t := range d.Transitions() {
		out = append(out, fmt.Sprintf("%d %v->%v at +%v silent %v flaps %d", t.ID, t.From, t.To, t.At.Sub(t0), t.Silent, t.Flaps))
	}
	return out
}

func TestDetectorLifecycle(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	d := NewDetector(1, []uint32{3, 1, 2}, ms(500), t0)
	if got := d.Deadline(); !got.Equal(t0.Add(ms(500))) {
		t.Fatalf("Deadline at start = +%v, want +500ms", got.Sub(t0))
	}
	if d.State(1) != Alive || d.State(2) != Unknown || d.State(9) != Unknown {
		t.Fatalf("initial states %v %v %v", d.State(1), d.State(2), d.State(9))
	}
	if d.Heard(1, t0) || d.Heard(9, t0) {
		t.Fatal("Heard accepted its own ID or a non-member")
	}

	d.Heard(2, t0.Add(ms(100)))
	d.Check(t0.Add(ms(499))) // early: nothing
	if got := transitions(d); !slices.Equal(got, []string{"2 unknown->alive at +100ms silent 0s flaps 0"}) {
		t.Fatalf("after heard: %q", got)
	}
	// A slightly late Check (a fixed-interval driver) suspects both, each
	// dated by its own deadline, not by the Check.
	d.Check(t0.Add(ms(610)))
	want := []string{
		"2 alive->suspect at +600ms silent 500ms flaps 0",
		"3 unknown->suspect at +500ms silent 500ms flaps 0",
	}
	if got := transitions(d); !slices.Equal(got, want) {
		t.Fatalf("after late check:\n got %q\nwant %q", got, want)
	}
	if !d.Deadline().IsZero() {
		t.Fatalf("Deadline with everyone suspected = %v, want zero", d.Deadline())
	}
	d.Check(t0.Add(ms(6000)))
	if got := d.Transitions(); got != nil {
		t.Fatalf("suspected twice: %v", got)
	}
	// Back: a flap.
	d.Heard(2, t0.Add(ms(6000)))
	if got := transitions(d); !slices.Equal(got, []string{"2 suspect->alive at +6s silent 0s flaps 1"}) {
		t.Fatalf("recovery: %q", got)
	}
	// A frame stamped before the last one does not move the last heard back.
	d.Heard(2, t0.Add(ms(5900)))
	if v, _ := d.Member(2); !v.LastHeard.Equal(t0.Add(ms(6000))) || v.Heard != 3 || v.Flaps != 1 {
		t.Fatalf("member 2 = %+v", v)
	}
	if got := d.Expires(2); !got.Equal(t0.Add(ms(6500))) {
		t.Fatalf("Expires(2) = +%v, want +6.5s", got.Sub(t0))
	}
	if d.AliveCount() != 2 {
		t.Fatalf("AliveCount = %d, want 2", d.AliveCount())
	}
}

func TestDetectorPerMemberTimeout(t *testing.T) {
	d := NewDetector(1, []uint32{1, 2, 3}, 400*time.Millisecond, t0)
	d.SetTimeout(3, 440*time.Millisecond)
	d.Heard(2, t0)
	d.Heard(3, t0)
	d.Transitions()
	if got := d.Deadline(); !got.Equal(t0.Add(400 * time.Millisecond)) {
		t.Fatalf("Deadline = +%v, want +400ms", got.Sub(t0))
	}
	d.Check(t0.Add(420 * time.Millisecond))
	if d.Alive(2) || !d.Alive(3) {
		t.Fatalf("at +420ms: 2 %v, 3 %v", d.State(2), d.State(3))
	}
	if got := d.Deadline(); !got.Equal(t0.Add(440 * time.Millisecond)) {
		t.Fatalf("Deadline = +%v, want +440ms", got.Sub(t0))
	}
	// Shortening a running silence applies at once.
	d.SetTimeout(3, 10*time.Millisecond)
	d.Check(t0.Add(421 * time.Millisecond))
	if d.Alive(3) {
		t.Fatal("member 3 still alive after its timeout was shortened below its silence")
	}
	if d.Timeout(3) != 10*time.Millisecond || d.Timeout(2) != 400*time.Millisecond {
		t.Fatalf("timeouts %v %v", d.Timeout(3), d.Timeout(2))
	}
}

// TestDetectorAnySchedule is the property the embedding cores rely on:
// whatever the times at which Check is called (early, or late by less than
// a stall), a member is Alive exactly when it was heard within its timeout,
// and the transitions alternate and are dated by what happened, not by the
// calls.
func TestDetectorAnySchedule(t *testing.T) {
	const timeout = 100 * time.Millisecond
	for seed := range uint64(50) {
		rnd := rand.New(rand.NewPCG(seed, 7))
		d := NewDetector(1, []uint32{1, 2}, timeout, t0)
		now := t0
		var last time.Time // last heard
		lastCheck := t0
		state := Unknown
		for range 300 {
			now = now.Add(time.Duration(rnd.IntN(12)) * time.Millisecond)
			if rnd.IntN(8) == 0 {
				d.Heard(2, now)
				last = now
			}
			if rnd.IntN(2) == 0 || now.Sub(lastCheck) > 12*time.Millisecond {
				lastCheck = now
				d.Check(now)
				ref := last
				if ref.IsZero() {
					ref = t0
				}
				want := Unknown
				switch {
				case now.Sub(ref) >= timeout:
					want = Suspect
				case !last.IsZero():
					want = Alive
				}
				if d.State(2) != want {
					t.Fatalf("seed %d at +%v: state %v, want %v (last heard +%v)", seed, now.Sub(t0), d.State(2), want, last.Sub(t0))
				}
			}
			for _, tr := range d.Transitions() {
				if tr.From != state || tr.To == state {
					t.Fatalf("seed %d: transition %v->%v from state %v", seed, tr.From, tr.To, state)
				}
				if tr.To == Suspect && tr.Silent != timeout {
					// Dated by its deadline, however late the Check.
					t.Fatalf("seed %d: suspected after %v of silence, want %v", seed, tr.Silent, timeout)
				}
				state = tr.To
			}
		}
	}
}

func TestCheckTimeout(t *testing.T) {
	for _, d := range []time.Duration{time.Millisecond, 55 * time.Millisecond, 1500 * time.Microsecond, MaxTimeout} {
		if err := CheckTimeout("x", d); err != nil {
			t.Errorf("CheckTimeout(%v) = %v", d, err)
		}
	}
	for _, d := range []time.Duration{0, -time.Second, time.Microsecond, MaxTimeout + time.Millisecond} {
		if err := CheckTimeout("--heartbeat", d); !errors.Is(err, ErrTimeoutRange) {
			t.Errorf("CheckTimeout(%v) = %v, want ErrTimeoutRange", d, err)
		}
	}
}

// TestDetectorStall: a Check far later than the detector's deadline is a
// stall of this member (SIGSTOP, swap): nobody is suspected for the
// silence it did not listen to, and frames read after it keep members
// alive; one that stays silent is suspected half a timeout later.
func TestDetectorStall(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	d := NewDetector(1, []uint32{1, 2, 3}, ms(400), t0)
	d.Heard(2, t0)
	d.Heard(3, t0)
	d.Transitions()
	resume := t0.Add(ms(3000)) // deadline was +400ms
	d.Check(resume)
	if got := d.Transitions(); got != nil {
		t.Fatalf("suspected after its own stall: %v", got)
	}
	if got := d.Deadline(); !got.Equal(resume.Add(ms(200))) {
		t.Fatalf("Deadline after a stall = %v after it, want 200ms", got.Sub(resume))
	}
	d.Heard(2, resume.Add(ms(1))) // read from the socket after the stall
	d.Check(resume.Add(ms(200)))
	want := []string{"3 alive->suspect at +3.2s silent 3.2s flaps 0"}
	if got := transitions(d); !slices.Equal(got, want) {
		t.Fatalf("after the stall:\n got %q\nwant %q", got, want)
	}
	if !d.Alive(2) {
		t.Fatal("member 2, heard after the stall, is not alive")
	}
}

// TestResume: a stall the embedding core noticed (the member's own loop
// stopped) suspects nobody for the silence it did not listen to, even when
// the timeout was raised on waking so that Check would find its deadline
// only a little late; half a timeout more of silence does.
func TestResume(t *testing.T) {
	start := time.Unix(1000, 0)
	d := NewDetector(1, []uint32{1, 2, 3}, time.Second, start)
	d.Heard(2, start)
	d.Heard(3, start)
	woke := start.Add(3 * time.Second) // stopped since start
	d.SetTimeout(2, 3*time.Second-50*time.Millisecond)
	d.Resume(woke)
	d.Check(woke)
	if d.State(2) == Suspect || d.State(3) == Suspect {
		t.Fatalf("suspected right after the stall: 2 %v, 3 %v", d.State(2), d.State(3))
	}
	d.Check(woke.Add(400 * time.Millisecond))
	if d.State(3) == Suspect {
		t.Fatal("3 suspected within half its timeout of the stall's end")
	}
	d.Check(woke.Add(600 * time.Millisecond))
	if d.State(3) != Suspect {
		t.Fatal("3 not suspected half its timeout after the stall's end")
	}
	if d.State(2) == Suspect {
		t.Fatal("2 suspected before half its own timeout after the stall's end")
	}
	d.Check(woke.Add(1500 * time.Millisecond))
	if d.State(2) != Suspect {
		t.Fatal("2 not suspected half its timeout after the stall's end")
	}
}

// TestQuietSince: the instant a member's silence counts from is its last
// sign of life, the detector's start if none, or the end of a stall of its
// own (never earlier than what the timeout counts from); zero for its own
// ID and strangers.
func TestQuietSince(t *testing.T) {
	start := time.Unix(1000, 0)
	d := NewDetector(1, []uint32{1, 2, 3}, time.Second, start)
	if got := d.QuietSince(2); !got.Equal(start) {
		t.Errorf("never heard: %v, want the start", got)
	}
	d.Heard(2, start.Add(300*time.Millisecond))
	if got := d.QuietSince(2); !got.Equal(start.Add(300 * time.Millisecond)) {
		t.Errorf("heard at +300ms: %v", got.Sub(start))
	}
	woke := start.Add(5 * time.Second)
	d.Resume(woke) // stopped since +300ms: 2's silence counts from half a timeout before waking
	if got := d.QuietSince(2); !got.Equal(woke.Add(-500 * time.Millisecond)) {
		t.Errorf("after a stall: %v, want half a timeout before waking", got.Sub(start))
	}
	if got, exp := d.QuietSince(2).Add(d.Timeout(2)), d.Expires(2); !got.Equal(exp) {
		t.Errorf("QuietSince + timeout = %v, Expires = %v", got, exp)
	}
	if !d.QuietSince(1).IsZero() || !d.QuietSince(9).IsZero() {
		t.Error("own ID or a stranger: want zero")
	}
}
