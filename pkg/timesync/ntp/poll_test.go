package ntp

import (
	"testing"
	"time"
)

func TestPollConfigValidate(t *testing.T) {
	var c PollConfig
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.MinPoll != 4 || c.MaxPoll != 10 || c.Burst != 8 || c.BurstInterval != 2*time.Second {
		t.Errorf("defaults %+v", c)
	}
	for _, bad := range []PollConfig{
		{MinPoll: -5, MaxPoll: 4},
		{MinPoll: 4, MaxPoll: 18},
		{MinPoll: 6, MaxPoll: 5},
		{MinPoll: 4, MaxPoll: 6, BurstInterval: -time.Second},
	} {
		if err := bad.Validate(); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
	// 0..0 given on purpose is a poll every second, not "unset".
	every := PollConfig{PollRangeSet: true}
	if err := every.Validate(); err != nil || every.MinPoll != 0 || every.MaxPoll != 0 {
		t.Errorf("poll range 0..0 given: %v %+v", err, every)
	}
	lan := PollConfig{MinPoll: -4, MaxPoll: -1, Burst: -1}
	if err := lan.Validate(); err != nil || lan.Burst != 0 {
		t.Errorf("sub-second LAN config: %v %+v", err, lan)
	}
}

func TestPollInterval(t *testing.T) {
	for poll, want := range map[int8]time.Duration{-4: 62500 * time.Microsecond, -1: 500 * time.Millisecond, 0: time.Second, 4: 16 * time.Second, 10: 1024 * time.Second} {
		if got := PollInterval(poll); got != want {
			t.Errorf("PollInterval(%d) = %v, want %v", poll, got, want)
		}
	}
}

func TestPollerBurstThenPoll(t *testing.T) {
	p, err := NewPoller(PollConfig{Burst: 4})
	if err != nil {
		t.Fatal(err)
	}
	// Burst of 4: three 2 s gaps after the first three requests, then
	// the 16 s poll after the fourth.
	var got []time.Duration
	for range 6 {
		got = append(got, p.Sent())
		p.Received()
	}
	want := []time.Duration{2 * time.Second, 2 * time.Second, 2 * time.Second, 16 * time.Second, 16 * time.Second, 16 * time.Second}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("intervals %v, want %v", got, want)
		}
	}
	if p.Bursting() || p.Reach() != 0x3f || !p.Reachable() {
		t.Errorf("bursting %v reach %08b", p.Bursting(), p.Reach())
	}
}

func TestPollerAdjust(t *testing.T) {
	p, _ := NewPoller(PollConfig{MinPoll: 4, MaxPoll: 6, Burst: -1})
	// Offsets in the noise (|θ| < 4ψ): the counter climbs by the poll
	// exponent (4) per update and the poll grows once it passes 30: on
	// the 8th update (32 > 30).
	for i := 1; i <= 8; i++ {
		p.Update(us(10), us(10))
		if want := int8(4); i < 8 && p.Poll() != want {
			t.Fatalf("update %d: poll %d", i, p.Poll())
		}
	}
	if p.Poll() != 5 {
		t.Fatalf("poll %d after 8 quiet updates, want 5", p.Poll())
	}
	// Offsets beyond 4ψ: the counter falls by 2 × 5 per update and
	// the poll drops when it passes -30: on the 4th update (-40).
	for i := 1; i <= 4; i++ {
		p.Update(-us(100), us(10))
	}
	if p.Poll() != 4 {
		t.Fatalf("poll %d after 4 busy updates, want 4", p.Poll())
	}
	// Never below MinPoll, never above MaxPoll.
	for range 100 {
		p.Update(us(100), us(1))
	}
	if p.Poll() != 4 {
		t.Errorf("poll %d below min", p.Poll())
	}
	for range 100 {
		p.Update(0, us(1))
	}
	if p.Poll() != 6 {
		t.Errorf("poll %d, want max 6", p.Poll())
	}
}

func TestPollerSubSecond(t *testing.T) {
	// Negative exponents step the counter by 1, not by a negative
	// number that would make quiet updates shrink the poll.
	p, _ := NewPoller(PollConfig{MinPoll: -4, MaxPoll: -2, Burst: -1})
	for range 31 {
		p.Update(0, us(1))
	}
	if p.Poll() != -3 {
		t.Errorf("poll %d after 31 quiet updates, want -3", p.Poll())
	}
	if got := p.Sent(); got != 125*time.Millisecond {
		t.Errorf("interval %v", got)
	}
}

func TestPollerUnreachable(t *testing.T) {
	p, _ := NewPoller(PollConfig{MinPoll: 4, MaxPoll: 8, Burst: 2})
	p.Sent()
	p.Received()
	// Eight unanswered polls empty the reach register; from then on
	// each unanswered poll backs off by one.
	for range 8 {
		p.Sent()
	}
	if p.Reachable() {
		t.Fatalf("reach %08b after 8 silent polls", p.Reach())
	}
	if p.Poll() != 4 {
		t.Fatalf("poll %d before backing off", p.Poll())
	}
	p.Sent()
	p.Sent()
	if p.Poll() != 6 {
		t.Fatalf("poll %d, want 6 after two more silent polls", p.Poll())
	}
	// An answer: reachable again, back to the minimum poll with a new
	// burst.
	p.Received()
	if !p.Reachable() || p.Poll() != 4 || !p.Bursting() {
		t.Errorf("after recovery: reach %08b poll %d bursting %v", p.Reach(), p.Poll(), p.Bursting())
	}
	if got := p.Sent(); got != 2*time.Second {
		t.Errorf("recovery burst interval %v", got)
	}
	// The burst request is answered; a duplicate answer does not
	// count twice (nor mark a later, unanswered poll).
	p.Received()
	p.Received()
	p.Sent()
	if p.Reach() != 0b110 {
		t.Errorf("reach %08b", p.Reach())
	}
}
