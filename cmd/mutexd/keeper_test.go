package main

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// keeperStep is one input to the keeper and the action it must answer.
type keeperStep struct {
	at    int           // ms since the start
	input string        // "tick", "ok", "gone", "fail"
	left  time.Duration // a successful renewal's lease_left (sent at the renewal's start)
	want  keeperAction  // Wake in ms since the start (0: none); Warn matched as a substring
}

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

// TestKeeper drives the lease keeper through the schedules of `mutexd
// lock` with no clock at all: each step's action, and when it wants to be
// woken, is exact. The child is always signalled before the deadline the
// grant gave (killMargin ahead), whatever the renewals do.
func TestKeeper(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(n int) time.Time { return t0.Add(ms(n)) }
	for _, tc := range []struct {
		name         string
		lease, grace time.Duration
		steps        []keeperStep
		lost         string
	}{
		{
			name: "renewals succeed: nothing happens but renewals", lease: ms(1200), grace: time.Second,
			steps: []keeperStep{
				{at: 0, input: "tick", want: keeperAction{Wake: at(400)}},
				{at: 399, input: "tick", want: keeperAction{Wake: at(400)}}, // early: nothing
				{at: 400, input: "tick", want: keeperAction{Renew: true, Wake: at(750)}},
				{at: 402, input: "ok", left: ms(1200), want: keeperAction{Wake: at(802)}},
				{at: 802, input: "tick", want: keeperAction{Renew: true, Wake: at(1150)}},
				{at: 803, input: "ok", left: ms(1200), want: keeperAction{Wake: at(1203)}},
			},
		},
		{
			// A lease cut short by the algorithm (the central coordinator
			// grants 3 s asked as 2.25 s on a majority's support 1 s old):
			// the renewals come at a third of what is left, well before the
			// warning a third of the lease ahead of the deadline.
			name: "a cut lease is renewed at a third of what is left", lease: ms(3000), grace: time.Second,
			steps: []keeperStep{
				{at: 0, input: "tick", want: keeperAction{Wake: at(1000)}},
				{at: 1000, input: "tick", want: keeperAction{Renew: true, Wake: at(1950)}},
				{at: 1010, input: "ok", left: ms(2250), want: keeperAction{Wake: at(1760)}},
				{at: 1760, input: "tick", want: keeperAction{Renew: true, Wake: at(2200)}},
				{at: 1770, input: "ok", left: ms(2400), want: keeperAction{Wake: at(2570)}},
			},
		},
		{
			// TestLockLostKillsBeforeDeadline's schedule: the renewal says
			// the lock is lost; the child ignores SIGTERM; --grace 10s is
			// cut short by the deadline.
			name: "lost: TERM at once, KILL before the deadline", lease: ms(1200), grace: 10 * time.Second,
			steps: []keeperStep{
				{at: 0, input: "tick", want: keeperAction{Wake: at(400)}},
				{at: 400, input: "tick", want: keeperAction{Renew: true, Wake: at(750)}},
				{at: 405, input: "gone", want: keeperAction{Term: true, Warn: "lost: lease expired", Wake: at(1150)}},
				{at: 1000, input: "tick", want: keeperAction{Wake: at(1150)}},
				{at: 1150, input: "tick", want: keeperAction{Kill: true}},
				{at: 1300, input: "tick", want: keeperAction{}},
			},
			lost: "lease expired",
		},
		{
			name: "lost: KILL a grace after TERM", lease: ms(3000), grace: ms(200),
			steps: []keeperStep{
				{at: 1000, input: "tick", want: keeperAction{Renew: true, Wake: at(2750)}},
				{at: 1001, input: "gone", want: keeperAction{Term: true, Warn: "lost:", Wake: at(1201)}},
				{at: 1201, input: "tick", want: keeperAction{Kill: true}},
			},
			lost: "lease expired",
		},
		{
			// TestLockUnreachableKillsBeforeDeadline's schedule: the daemon
			// never answers; TERM a third of the lease before the kill,
			// KILL killMargin before the deadline.
			name: "unreachable: TERM then KILL before the deadline", lease: ms(900), grace: time.Second,
			steps: []keeperStep{
				{at: 300, input: "tick", want: keeperAction{Renew: true, Wake: at(550)}},
				{at: 550, input: "tick", want: keeperAction{Term: true, Warn: "no renewal confirmed in time; the lease is about to end", Wake: at(850)}},
				{at: 850, input: "tick", want: keeperAction{Kill: true}},
				{at: 900, input: "fail", want: keeperAction{}}, // the renewal's own timeout, too late
			},
			lost: "no renewal confirmed in time",
		},
		{
			name: "a failed renewal is retried, and a success saves the lock", lease: ms(3000), grace: time.Second,
			steps: []keeperStep{
				{at: 1000, input: "tick", want: keeperAction{Renew: true, Wake: at(1950)}},
				{at: 1010, input: "fail", want: keeperAction{Wake: at(1260)}},
				{at: 1260, input: "tick", want: keeperAction{Renew: true, Wake: at(1950)}},
				{at: 1270, input: "fail", want: keeperAction{Wake: at(1520)}},
				{at: 1520, input: "tick", want: keeperAction{Renew: true, Wake: at(1950)}},
				{at: 1950, input: "tick", want: keeperAction{Term: true, Warn: "no renewal confirmed in time: daemon busy", Wake: at(2950)}},
				{at: 1960, input: "ok", left: ms(3000), want: keeperAction{Wake: at(2950)}}, // TERM was sent: the lock counts as lost
				{at: 2950, input: "tick", want: keeperAction{Kill: true}},
			},
			lost: "no renewal confirmed in time: daemon busy",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := newKeeper(t0, t0.Add(tc.lease), tc.lease, tc.grace, "cmd")
			var renewSent time.Time
			for i, s := range tc.steps {
				now := at(s.at)
				var got keeperAction
				switch s.input {
				case "tick":
					got = k.Tick(now)
					if got.Renew {
						renewSent = now
					}
				case "ok":
					got = k.Renewed(now, renewOutcome{Sent: renewSent, Left: s.left})
				case "gone":
					got = k.Renewed(now, renewOutcome{Gone: true, Err: errors.New("lease expired")})
				case "fail":
					got = k.Renewed(now, renewOutcome{Err: errors.New("daemon busy")})
				}
				if got.Renew != s.want.Renew || got.Term != s.want.Term || got.Kill != s.want.Kill || !got.Wake.Equal(s.want.Wake) ||
					(s.want.Warn == "") != (got.Warn == "") || !strings.Contains(got.Warn, s.want.Warn) {
					t.Fatalf("step %d (%s at %dms): got renew %v term %v kill %v wake %v warn %q; want renew %v term %v kill %v wake %v warn %q",
						i, s.input, s.at, got.Renew, got.Term, got.Kill, got.Wake.Sub(t0), got.Warn,
						s.want.Renew, s.want.Term, s.want.Kill, s.want.Wake.Sub(t0), s.want.Warn)
				}
				if got.Kill && !now.Before(k.deadline) {
					t.Fatalf("step %d: SIGKILL at %v, not before the deadline %v", i, now.Sub(t0), k.deadline.Sub(t0))
				}
			}
			if k.Lost() != tc.lost {
				t.Fatalf("lost %q, want %q", k.Lost(), tc.lost)
			}
		})
	}
}
