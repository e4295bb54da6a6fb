package tracecheck

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/trace"
	"github.com/synclab/synclab/pkg/order"
)

func TestOrderNames(t *testing.T) {
	if eventDelivered != order.EventDelivered || eventSequencer != order.EventSequencer || orderTotal != order.TotalOrder.String() || orderCausal != order.Causal.String() {
		t.Error("pkg/order's names changed: update order.go's copies")
	}
}

// host builds one hand-written trace: a header, then events at ms
// milliseconds after t0 on the host's clock.
type host struct {
	daemon, clock string
	id            uint32
	lines         []string
}

var t0 = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

func at(ms float64) string {
	return t0.Add(time.Duration(ms * float64(time.Millisecond))).Format(time.RFC3339Nano)
}

func (h *host) local(ms float64, name, args string) *host {
	h.lines = append(h.lines, fmt.Sprintf(`{"t":%q,"ev":"local","name":%q,"args":{%s}}`, at(ms), name, args))
	return h
}

func (h *host) send(ms float64, kind, frame string, to uint32) *host {
	h.lines = append(h.lines, fmt.Sprintf(`{"t":%q,"ev":"send","kind":%q,"frame":%q,"from":%d,"to":%d}`, at(ms), kind, frame, h.id, to))
	return h
}

func (h *host) recv(ms float64, kind, frame string, from uint32) *host {
	h.lines = append(h.lines, fmt.Sprintf(`{"t":%q,"ev":"recv","kind":%q,"frame":%q,"from":%d,"to":%d}`, at(ms), kind, frame, from, h.id))
	return h
}

// grant, renew, release: mutexd's events (lease 1 s from the grant).
func (h *host) grant(ms float64, req int, lock string, fence uint64, mode string) *host {
	return h.local(ms, "lock_granted", fmt.Sprintf(`"request":%d,"lock":%q,"fence":%d,"mode":%q,"lease":"1s","expires":%q`, req, lock, fence, mode, at(ms+1000)))
}

func (h *host) release(ms float64, req int, lock string, fence uint64) *host {
	return h.local(ms, "lock_released", fmt.Sprintf(`"request":%d,"lock":%q,"fence":%d`, req, lock, fence))
}

func (h *host) text() string {
	hdr := fmt.Sprintf(`{"synclab_trace":1,"daemon":%q,"id":%d,"host":"h%d","cluster":"lab","members":[1,2],"clock":%q,"started":%q}`,
		h.daemon, h.id, h.id, h.clock, at(0))
	return hdr + "\n" + strings.Join(h.lines, "\n") + "\n"
}

func files(t *testing.T, hosts ...*host) []*trace.File {
	t.Helper()
	var out []*trace.File
	for _, h := range hosts {
		f, err := trace.Read(strings.NewReader(h.text()), fmt.Sprintf("h%d.trace", h.id))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, f)
	}
	return out
}

func mutexd(id uint32, clock string) *host {
	return &host{daemon: "mutexd", clock: clock, id: id}
}

func check(t *testing.T, bound time.Duration, hosts ...*host) *Report {
	t.Helper()
	rep, err := Check(files(t, hosts...), Options{ClockBound: bound})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func verdict(t *testing.T, rep *Report, prop string) Result {
	t.Helper()
	for _, r := range rep.Results {
		if r.Property == prop {
			return r
		}
	}
	var b bytes.Buffer
	rep.WriteText(&b)
	t.Fatalf("no verdict for %s:\n%s", prop, b.String())
	return Result{}
}

func want(t *testing.T, rep *Report, prop string, v Verdict) Result {
	t.Helper()
	r := verdict(t, rep, prop)
	if r.Verdict != v {
		var b bytes.Buffer
		rep.WriteText(&b)
		t.Fatalf("%s: %s, want %s\n%s", prop, r.Verdict, v, b.String())
	}
	return r
}

// A handoff by message is ordered whatever the clocks say: h2's clock is
// far behind h1's, so by the times alone h2 was granted before h1
// released, yet the release's message reached h2 before its grant.
func TestHandoffOrderedByMessage(t *testing.T) {
	h1 := mutexd(1, trace.ClockSystem).grant(0, 1, "x", 1, "exclusive").release(100, 1, "x", 1).send(101, "central_release", "1:7", 2)
	h2 := mutexd(2, trace.ClockSystem).recv(20, "central_release", "1:7", 1).grant(21, 1, "x", 2, "exclusive").release(30, 1, "x", 2)
	rep := check(t, -1, h1, h2)
	for _, p := range []string{"exclusive", "fences", "ended"} {
		want(t, rep, p, Holds)
	}
	if rep.Exit() != 0 {
		t.Errorf("exit %d, want 0", rep.Exit())
	}
	if r := verdict(t, rep, "exclusive"); !strings.Contains(r.ClockBound, "unknown") {
		t.Errorf("the verdict does not say the bound was unknown: %q", r.ClockBound)
	}
}

// Two holds that overlap on the simulator's true time are a violation,
// shown by both grants (the offending pair) and the first hold's end.
func TestOverlapOnTrueTime(t *testing.T) {
	h1 := mutexd(1, trace.ClockTrue).grant(0, 1, "x", 1, "exclusive").release(200, 1, "x", 1)
	h2 := mutexd(2, trace.ClockTrue).grant(100, 1, "x", 2, "exclusive").release(300, 1, "x", 2)
	rep := check(t, -1, h1, h2)
	r := want(t, rep, "exclusive", Violated)
	if rep.Exit() != ExitViolated {
		t.Errorf("exit %d, want %d", rep.Exit(), ExitViolated)
	}
	var off []string
	for _, e := range r.Events {
		if e.Offending {
			off = append(off, fmt.Sprintf("%s:%d", e.File, e.Line))
		}
	}
	if strings.Join(off, " ") != "h1.trace:2 h2.trace:2" {
		t.Errorf("offending pair %v, want both grants (h1.trace:2 h2.trace:2)", off)
	}
	if len(r.Events) != 4 || !strings.Contains(r.ClockBound, "true time") {
		t.Errorf("counterexample %+v, bound %q: want the grants and both ends, on true time", r.Events, r.ClockBound)
	}
}

// On real hosts an overlap is a violation only beyond the clocks' error
// bounds: unknown bound, cannot decide; a bound that leaves no doubt,
// violated; a bound as large as the overlap, cannot decide.
func TestOverlapNeedsTheBound(t *testing.T) {
	mk := func() []*host {
		return []*host{
			mutexd(1, trace.ClockSystem).grant(0, 1, "x", 1, "exclusive").release(200, 1, "x", 1),
			mutexd(2, trace.ClockSystem).grant(100, 1, "x", 2, "exclusive").release(300, 1, "x", 2),
		}
	}
	for _, tc := range []struct {
		bound time.Duration
		want  Verdict
		exit  int
	}{{-1, Undecided, ExitUndecided}, {10 * time.Millisecond, Violated, ExitViolated}, {60 * time.Millisecond, Undecided, ExitUndecided}} {
		rep := check(t, tc.bound, mk()...)
		r := want(t, rep, "exclusive", tc.want)
		if rep.Exit() != tc.exit {
			t.Errorf("bound %v: exit %d, want %d", tc.bound, rep.Exit(), tc.exit)
		}
		if tc.bound >= 0 && !strings.Contains(r.ClockBound, tc.bound.String()) {
			t.Errorf("bound %v: the verdict says %q", tc.bound, r.ClockBound)
		}
	}
}

// Holds apart in time are ordered by the clocks when the gap exceeds
// both bounds, and undecided when it does not.
func TestSeparatedByTheBound(t *testing.T) {
	mk := func() []*host {
		return []*host{
			mutexd(1, trace.ClockSystem).grant(0, 1, "x", 1, "exclusive").release(100, 1, "x", 1),
			mutexd(2, trace.ClockSystem).grant(150, 1, "x", 2, "exclusive").release(300, 1, "x", 2),
		}
	}
	want(t, check(t, 10*time.Millisecond, mk()...), "exclusive", Holds)
	want(t, check(t, 10*time.Millisecond, mk()...), "fences", Holds)
	want(t, check(t, 30*time.Millisecond, mk()...), "exclusive", Undecided)
}

// Shared holders overlap and share a fence; an exclusive one beside them
// does not.
func TestShared(t *testing.T) {
	h1 := mutexd(1, trace.ClockTrue).grant(0, 1, "x", 5, "shared").release(200, 1, "x", 5)
	h2 := mutexd(2, trace.ClockTrue).grant(100, 1, "x", 5, "shared").release(300, 1, "x", 5)
	rep := check(t, -1, h1, h2)
	want(t, rep, "exclusive", Holds)
	want(t, rep, "fences", Holds)
	h2 = mutexd(2, trace.ClockTrue).grant(100, 1, "x", 6, "exclusive").release(300, 1, "x", 6)
	want(t, check(t, -1, h1, h2), "exclusive", Violated)
}

func TestFences(t *testing.T) {
	// The same fence for two exclusive grants, whatever their order.
	h1 := mutexd(1, trace.ClockTrue).grant(0, 1, "x", 3, "exclusive").release(10, 1, "x", 3)
	h2 := mutexd(2, trace.ClockTrue).grant(50, 1, "x", 3, "exclusive").release(60, 1, "x", 3)
	r := want(t, check(t, -1, h1, h2), "fences", Violated)
	if !strings.Contains(r.Why, "fence 3") {
		t.Errorf("why: %s", r.Why)
	}
	// A lower fence granted after a higher one (ordered by a message).
	h1 = mutexd(1, trace.ClockSystem).grant(0, 1, "x", 9, "exclusive").release(10, 1, "x", 9).send(11, "token", "1:1", 2)
	h2 = mutexd(2, trace.ClockSystem).recv(12, "token", "1:1", 1).grant(13, 1, "x", 4, "exclusive").release(20, 1, "x", 4)
	rep := check(t, -1, h1, h2)
	want(t, rep, "fences", Violated)
	want(t, rep, "exclusive", Holds)
	// The same two grants with nothing ordering them: cannot decide.
	h1 = mutexd(1, trace.ClockSystem).grant(0, 1, "x", 9, "exclusive").release(10, 1, "x", 9)
	h2 = mutexd(2, trace.ClockSystem).grant(13, 1, "x", 4, "exclusive").release(20, 1, "x", 4)
	want(t, check(t, -1, h1, h2), "fences", Undecided)
}

func TestEnded(t *testing.T) {
	// The lease (1 s) ran out at 1 s; the trace goes on to 2.5 s with no
	// release or loss: the member forgot a lock it lost.
	h1 := mutexd(1, trace.ClockSystem).grant(0, 1, "x", 1, "exclusive").send(2500, "heartbeat", "1:9", 2)
	r := want(t, check(t, -1, h1), "ended", Violated)
	if len(r.Events) != 2 || !strings.Contains(r.Events[0].What, "lock_granted") || !strings.Contains(r.Events[1].What, "heartbeat") {
		t.Errorf("counterexample %+v: want the grant (which set the expiry) and the trace's last event", r.Events)
	}
	// The trace ends within the lease: cannot decide.
	h1 = mutexd(1, trace.ClockSystem).grant(0, 1, "x", 1, "exclusive").send(500, "heartbeat", "1:9", 2)
	want(t, check(t, -1, h1), "ended", Undecided)
	// A renewal moves the expiry; a loss ends the grant.
	h1 = mutexd(1, trace.ClockSystem).grant(0, 1, "x", 1, "exclusive").
		local(900, "lock_renewed", `"request":1,"lock":"x","fence":1,"expires":"`+at(1900)+`"`).
		local(1900, "lock_lost", `"request":1,"lock":"x","fence":1,"reason":"expired"`).send(2500, "heartbeat", "1:9", 2)
	want(t, check(t, -1, h1), "ended", Holds)
	// A crash on the simulator ends what the member held.
	h1 = mutexd(1, trace.ClockTrue).grant(0, 1, "x", 1, "exclusive").local(10, CrashEvent, "").send(2500, "heartbeat", "1:9", 2)
	h2 := mutexd(2, trace.ClockTrue).grant(20, 1, "x", 2, "exclusive").release(30, 1, "x", 2)
	rep := check(t, -1, h1, h2)
	want(t, rep, "ended", Holds)
	want(t, rep, "exclusive", Holds)
}

func electd(id uint32, clock string) *host { return &host{daemon: "electd", clock: clock, id: id} }

func TestOneLeaderPerTerm(t *testing.T) {
	h1 := electd(1, trace.ClockSystem).local(0, "elected", `"leader":1,"term":5`)
	h2 := electd(2, trace.ClockSystem).local(0, "leader_elected", `"leader":2,"term":5`)
	rep := check(t, -1, h1, h2)
	r := want(t, rep, "one-leader-per-term", Violated)
	if len(r.Events) != 2 || !r.Events[0].Offending || !r.Events[1].Offending {
		t.Errorf("counterexample %+v: want the two claims", r.Events)
	}
	h2 = electd(2, trace.ClockSystem).local(0, "leader_elected", `"leader":1,"term":5`)
	rep = check(t, -1, h1, h2)
	want(t, rep, "one-leader-per-term", Holds)
	if len(rep.Results) != 1 || len(rep.Notes) == 0 {
		t.Errorf("without the majority election's frames, one-leader-at-once is not checked, with a note: %+v", rep)
	}
}

func TestOneLeaderAtOnce(t *testing.T) {
	h1 := electd(1, trace.ClockTrue).send(0, "vote_request", "1:1", 2).local(1, "elected", `"leader":1,"term":5`).local(200, "demoted", `"leader":1,"term":5,"reason":"resigned"`)
	h2 := electd(2, trace.ClockTrue).local(100, "elected", `"leader":2,"term":6`)
	want(t, check(t, -1, h1, h2), "one-leader-at-once", Violated)
	// Demoted for an expired lease when it ran again after a pause: the
	// lease ran out after its last renewal, at an instant the trace does
	// not show; a daemon's trace cannot show a pause (SIGSTOP), so there
	// too. Without a pause on the simulator, the demotion is the end.
	h1 = electd(1, trace.ClockTrue).send(0, "vote_request", "1:1", 2).local(1, "elected", `"leader":1,"term":5`).
		send(50, "lease_renew", "1:2", 2).local(60, PauseEvent, "").local(200, "demoted", `"leader":1,"term":5,"reason":"lease_expired"`)
	want(t, check(t, -1, h1, h2), "one-leader-at-once", Undecided)
	h1real := electd(1, trace.ClockSystem).send(0, "vote_request", "1:1", 2).local(1, "elected", `"leader":1,"term":5`).
		send(50, "lease_renew", "1:2", 2).local(200, "demoted", `"leader":1,"term":5,"reason":"lease_expired"`)
	want(t, check(t, 0, h1real, electd(2, trace.ClockSystem).local(100, "elected", `"leader":2,"term":6`)), "one-leader-at-once", Undecided)
	h1 = electd(1, trace.ClockTrue).send(0, "vote_request", "1:1", 2).local(1, "elected", `"leader":1,"term":5`).
		send(50, "lease_renew", "1:2", 2).local(200, "demoted", `"leader":1,"term":5,"reason":"lease_expired"`)
	want(t, check(t, -1, h1, h2), "one-leader-at-once", Violated)
	// Elected after the other was demoted: holds.
	h2 = electd(2, trace.ClockTrue).local(250, "elected", `"leader":2,"term":6`)
	want(t, check(t, -1, h1, h2), "one-leader-at-once", Holds)
}

// Draw cuts the run to the counterexample and marks the offending pair.
func TestDraw(t *testing.T) {
	h1 := mutexd(1, trace.ClockTrue).grant(0, 1, "x", 1, "exclusive").send(150, "heartbeat", "1:1", 2).release(200, 1, "x", 1).send(5000, "heartbeat", "1:2", 2)
	h2 := mutexd(2, trace.ClockTrue).grant(100, 1, "x", 2, "exclusive").release(300, 1, "x", 2)
	rep := check(t, -1, h1, h2)
	res := want(t, rep, "exclusive", Violated)
	var b bytes.Buffer
	if err := rep.Draw(&b, res); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	if n := strings.Count(page, `"hl":true`); n != 2 {
		t.Errorf("%d events highlighted, want the pair", n)
	}
	if !strings.Contains(page, "two holders at once") {
		t.Error("the page does not say the verdict")
	}
	if strings.Contains(page, "1:2") {
		t.Error("the heartbeat 5 s later is drawn: the diagram is not cut to the counterexample")
	}
	if !strings.Contains(page, `"1:1"`) {
		t.Error("the heartbeat between the grants is not drawn")
	}
}

func TestInputErrors(t *testing.T) {
	if _, err := Check(nil, Options{}); err == nil {
		t.Error("no files: no error")
	}
	// Two sends of one frame: traces of two runs mixed.
	h1 := mutexd(1, trace.ClockTrue).send(0, "heartbeat", "1:1", 2)
	h1b := mutexd(1, trace.ClockTrue).send(5, "heartbeat", "1:1", 2)
	fs := files(t, h1, h1b)
	fs[1].Name = "h1b.trace"
	if _, err := Check(fs, Options{}); err == nil || !strings.Contains(err.Error(), "sent twice") {
		t.Errorf("mixed runs: %v", err)
	}
}

func TestNotes(t *testing.T) {
	// Member 2 (in the header) has no trace; a daemon the checker does
	// not know; timed without the truth.
	h1 := mutexd(1, trace.ClockTrue).grant(0, 1, "x", 1, "exclusive").release(10, 1, "x", 1)
	other := &host{daemon: "otherd", clock: trace.ClockTrue, id: 1}
	other.local(0, "started", "")
	timed := &host{daemon: "timed", clock: trace.ClockSystem, id: 1}
	timed.local(0, "clock_synchronized", "")
	rep := check(t, -1, h1, other, timed)
	notes := strings.Join(rep.Notes, "\n")
	for _, w := range []string{"members 2 have no trace", "no property of otherd", "timed run --clock sim"} {
		if !strings.Contains(notes, w) {
			t.Errorf("notes lack %q:\n%s", w, notes)
		}
	}
}

func TestExpect(t *testing.T) {
	h1 := mutexd(1, trace.ClockTrue).grant(0, 1, "x", 1, "exclusive").release(200, 1, "x", 1)
	h2 := mutexd(2, trace.ClockTrue).grant(100, 1, "x", 2, "exclusive").release(300, 1, "x", 2)
	rep := check(t, -1, h1, h2)
	if err := rep.Expect("exclusive"); err != nil {
		t.Error(err)
	}
	if err := rep.Expect(); err == nil || !strings.Contains(err.Error(), "unexpected violation") {
		t.Errorf("no expectation: %v", err)
	}
	if err := rep.Expect("exclusive", "fences"); err == nil || !strings.Contains(err.Error(), "fences was to be violated") {
		t.Errorf("fences expected: %v", err)
	}
}

// sample is an event of a daemon on a simulated clock: its true offset
// and published bound (0: none), in ms.
func (h *host) sample(ms, off, bound float64) *host {
	b := ""
	if bound > 0 {
		b = fmt.Sprintf(`"max_error_ns":%d,`, int64(bound*1e6))
	}
	h.lines = append(h.lines, fmt.Sprintf(`{"t":%q,%s"true_offset_ns":%d,"ev":"local","name":"tick"}`, at(ms), b, int64(off*1e6)))
	return h
}

func TestOffsetWithinBound(t *testing.T) {
	timed := func(id uint32) *host { return &host{daemon: "timed", clock: trace.ClockSim, id: id} }
	// Both clocks 25 ms off true time (a Berkeley group's own average),
	// 0.3 ms apart, each claiming 0.2 ms: within both bounds of each other.
	h1 := timed(1).sample(0, 50, 0).sample(10, 25, 0.2).sample(20, 25, 0.2)
	h2 := timed(2).sample(12, 25.3, 0.2).sample(50, 25.3, 0.2)
	r := want(t, check(t, -1, h1, h2), "offset-within-bound", Holds)
	if r.Checked != 2 {
		t.Errorf("checked %d pairs, want 2 (each of h1's samples with bounds beside h2's nearest, in true time)", r.Checked)
	}
	// 0.5 ms apart, each claiming 0.2 ms: one of them is wrong.
	h2 = timed(2).sample(12, 25.5, 0.2)
	r = want(t, check(t, -1, h1, h2), "offset-within-bound", Violated)
	if len(r.Events) != 2 || !strings.Contains(r.Why, "500µs apart") {
		t.Errorf("counterexample %+v: %s", r.Events, r.Why)
	}
	// Samples too far apart in time to compare; one clock alone.
	want(t, check(t, -1, h1, timed(2).sample(500, 25.5, 0.2)), "offset-within-bound", Undecided)
	want(t, check(t, -1, timed(1).sample(0, 0, 0.1)), "offset-within-bound", Undecided)
}

// A simulated clock's recorded true offset orders events exactly: h2's
// clock is 300 ms ahead, so its grant at 250 ms by its clock was at
// -50 ms in true time, before h1 released at 100 ms: an overlap, whatever
// the bound assumed; h1's own maximum error, recorded, is used.
func TestRecordedClockInfo(t *testing.T) {
	h1 := mutexd(1, trace.ClockSim)
	h1.lines = append(h1.lines,
		fmt.Sprintf(`{"t":%q,"true_offset_ns":0,"ev":"local","name":"lock_granted","args":{"request":1,"lock":"x","fence":1,"lease":"1s","expires":%q}}`, at(-100), at(900)),
		fmt.Sprintf(`{"t":%q,"true_offset_ns":0,"ev":"local","name":"lock_released","args":{"request":1,"lock":"x","fence":1}}`, at(100)))
	h2 := mutexd(2, trace.ClockSim)
	h2.lines = append(h2.lines,
		fmt.Sprintf(`{"t":%q,"true_offset_ns":300000000,"ev":"local","name":"lock_granted","args":{"request":1,"lock":"x","fence":2,"lease":"1s","expires":%q}}`, at(250), at(1250)),
		fmt.Sprintf(`{"t":%q,"true_offset_ns":300000000,"ev":"local","name":"lock_released","args":{"request":1,"lock":"x","fence":2}}`, at(500)))
	r := want(t, check(t, time.Hour, h1, h2), "exclusive", Violated)
	if !strings.Contains(r.ClockBound, "true offsets") {
		t.Errorf("bound: %q", r.ClockBound)
	}
	// Real clocks with their recorded bounds: 10 ms each, the holds 150
	// ms apart: ordered.
	h1 = mutexd(1, trace.ClockSystem)
	h1.lines = append(h1.lines,
		fmt.Sprintf(`{"t":%q,"max_error_ns":10000000,"ev":"local","name":"lock_granted","args":{"request":1,"lock":"x","fence":1,"lease":"1s","expires":%q}}`, at(0), at(1000)),
		fmt.Sprintf(`{"t":%q,"max_error_ns":10000000,"ev":"local","name":"lock_released","args":{"request":1,"lock":"x","fence":1}}`, at(100)))
	h2 = mutexd(2, trace.ClockSystem)
	h2.lines = append(h2.lines,
		fmt.Sprintf(`{"t":%q,"max_error_ns":10000000,"ev":"local","name":"lock_granted","args":{"request":1,"lock":"x","fence":2,"lease":"1s","expires":%q}}`, at(250), at(1250)),
		fmt.Sprintf(`{"t":%q,"max_error_ns":10000000,"ev":"local","name":"lock_released","args":{"request":1,"lock":"x","fence":2}}`, at(500)))
	rep := check(t, -1, h1, h2)
	r = want(t, rep, "exclusive", Holds)
	if !strings.Contains(r.ClockBound, "own maximum error") || !strings.Contains(r.ClockBound, "10ms") {
		t.Errorf("bound: %q", r.ClockBound)
	}
	want(t, rep, "fences", Holds)
}

func orderd(id uint32) *host { return &host{daemon: "orderd", clock: trace.ClockTrue, id: id} }

// deliver: a delivered event (sid 0: none).
func (h *host) deliver(ms float64, ord string, sender uint32, seq, sid uint64) *host {
	sidArg := ""
	if sid != 0 {
		sidArg = fmt.Sprintf(`,"sid":%d`, sid)
	}
	return h.local(ms, "delivered", fmt.Sprintf(`"order":%q,"sender":%d,"seq":%d,"index":1%s`, ord, sender, seq, sidArg))
}

// record: a stream record frame sent (h is the sender) or received.
func (h *host) record(ms float64, ev, frame string, from, to uint32, ord string, seq uint64) *host {
	h.lines = append(h.lines, fmt.Sprintf(`{"t":%q,"ev":%q,"kind":"order_record","frame":%q,"from":%d,"to":%d,"fields":{"seq":%d,"type":%q}}`,
		at(ms), ev, frame, from, to, seq, ord))
	return h
}

// submit: a submission to the sequencer, sent (h is the sender) or
// received.
func (h *host) submit(ms float64, ev, frame string, from, to uint32, sid uint64) *host {
	h.lines = append(h.lines, fmt.Sprintf(`{"t":%q,"ev":%q,"kind":"order_submit","frame":%q,"from":%d,"to":%d,"fields":{"sid":%d}}`,
		at(ms), ev, frame, from, to, sid))
	return h
}

func TestOrderHolds(t *testing.T) {
	// 1 multicasts causal #1; 2 delivers it, then multicasts causal #2;
	// 3 holds #2 back until #1 arrives. Total order: both deliver A then B.
	h1 := orderd(1).record(0, "send", "1:1", 1, 2, "causal", 1).record(0, "send", "1:2", 1, 3, "causal", 1).deliver(0, "causal", 1, 1, 0).
		record(7, "recv", "2:2", 2, 1, "causal", 2).deliver(7, "causal", 2, 2, 0).
		submit(10, "send", "1:3", 1, 2, 11).submit(12, "recv", "2:3", 2, 1, 21).
		deliver(20, "total", 1, 1, 11).deliver(21, "total", 2, 2, 21)
	h2 := orderd(2).record(1, "recv", "1:1", 1, 2, "causal", 1).deliver(1, "causal", 1, 1, 0).
		record(5, "send", "2:1", 2, 3, "causal", 2).record(5, "send", "2:2", 2, 1, "causal", 2).deliver(5, "causal", 2, 2, 0).
		submit(11, "recv", "1:3", 1, 2, 11).submit(11, "send", "2:3", 2, 1, 21).
		deliver(20, "total", 1, 1, 11).deliver(21, "total", 2, 2, 21)
	h3 := orderd(3).record(6, "recv", "2:1", 2, 3, "causal", 2).record(30, "recv", "1:2", 1, 3, "causal", 1).
		deliver(30, "causal", 1, 1, 0).deliver(30, "causal", 2, 2, 0)
	rep := check(t, -1, h1, h2, h3)
	for _, p := range []string{"total-order", "fifo", "no-duplicate", "sent", "causal", "one-sequencer-per-term"} {
		want(t, rep, p, Holds)
	}
	if r := verdict(t, rep, "causal"); r.Checked != 6 {
		t.Errorf("causal: %d deliveries checked, want 6", r.Checked)
	}
}

func TestOrderViolations(t *testing.T) {
	// 3 delivers #2 (whose send followed 1's #1 at 2) before #1.
	h1 := orderd(1).record(0, "send", "1:1", 1, 2, "causal", 1).record(0, "send", "1:2", 1, 3, "causal", 1).deliver(0, "causal", 1, 1, 0)
	h2 := orderd(2).record(1, "recv", "1:1", 1, 2, "causal", 1).deliver(1, "causal", 1, 1, 0).
		record(5, "send", "2:1", 2, 3, "causal", 2).deliver(5, "causal", 2, 2, 0)
	h3 := orderd(3).record(6, "recv", "2:1", 2, 3, "causal", 2).deliver(6, "causal", 2, 2, 0).
		record(30, "recv", "1:2", 1, 3, "causal", 1).deliver(30, "causal", 1, 1, 0)
	r := want(t, check(t, -1, h1, h2, h3), "causal", Violated)
	if !strings.Contains(r.Why, "member 3") || len(r.Events) != 4 {
		t.Errorf("causal: %s, %+v", r.Why, r.Events)
	}
	// Never delivered at all (3's trace covers the run: the simulator's).
	h3 = orderd(3).record(6, "recv", "2:1", 2, 3, "causal", 2).deliver(6, "causal", 2, 2, 0)
	want(t, check(t, -1, h1, h2, h3), "causal", Violated)

	// Two members in opposite total orders; two messages at one number.
	a := orderd(1).deliver(20, "total", 1, 1, 11).deliver(21, "total", 2, 2, 21)
	b := orderd(2).deliver(20, "total", 2, 1, 21).deliver(21, "total", 1, 2, 11)
	rep := check(t, -1, a, b)
	r = want(t, rep, "total-order", Violated)
	if r.Violations < 2 {
		t.Errorf("total-order: %d violations, want the number clash and the inversion", r.Violations)
	}
	// FIFO: a sender's #2 before its #1; a duplicate; a message nobody sent.
	c := orderd(1).deliver(1, "fifo", 2, 2, 0).deliver(2, "fifo", 2, 1, 0).deliver(3, "fifo", 2, 1, 0)
	rep = check(t, -1, c, orderd(2).deliver(0, "fifo", 2, 1, 0))
	want(t, rep, "fifo", Violated)
	want(t, rep, "no-duplicate", Violated)
	r = want(t, rep, "sent", Violated)
	if !strings.Contains(r.Why, "fifo message 2 of member 2") {
		t.Errorf("sent: %s", r.Why)
	}
	// Two sequencers of one term.
	rep = check(t, -1, orderd(1).local(0, "sequencer", `"term":7`), orderd(2).local(5, "sequencer", `"term":7`), orderd(3).local(9, "sequencer", `"term":8`))
	if r := want(t, rep, "one-sequencer-per-term", Violated); r.Checked != 2 {
		t.Errorf("one-sequencer-per-term: %d terms checked", r.Checked)
	}
	// On a real host the send may predate the trace: cannot decide.
	c = orderd(1).deliver(1, "fifo", 2, 2, 0)
	c.clock = trace.ClockSystem
	want(t, check(t, -1, c), "sent", Undecided)
}
