package ntp

import (
	"errors"
	"testing"
	"time"
)

func TestCristianKeepsMinimumRTT(t *testing.T) {
	c := NewCristian(ms(1))
	if _, ok := c.Estimate(); ok {
		t.Fatal("estimate from an empty burst")
	}
	// Server 500 ms ahead. Round trips 20, 8 and 12 ms.
	rounds := []CristianRound{
		{Sent: at(0), Server: at(ms(510)), Received: at(ms(20))},
		{Sent: at(ms(100)), Server: at(ms(605)), Received: at(ms(108))},
		{Sent: at(ms(200)), Server: at(ms(707)), Received: at(ms(212))},
	}
	for _, r := range rounds {
		if err := c.Add(r); err != nil {
			t.Fatal(err)
		}
	}
	e, ok := c.Estimate()
	if !ok {
		t.Fatal("no estimate")
	}
	// Best round: RTT 8 ms; estimate = 605 + 4 = 609 ms when the local
	// clock read 108 ms: offset 501 ms; accuracy ±(4 - 1) ms.
	want := CristianEstimate{Time: at(ms(609)), Received: at(ms(108)), Offset: ms(501), RTT: ms(8), Accuracy: ms(3), Rounds: 3}
	if e != want {
		t.Errorf("got %+v\nwant %+v", e, want)
	}
	c.Reset()
	if c.Rounds() != 0 {
		t.Error("Reset kept rounds")
	}
}

func TestCristianAccuracy(t *testing.T) {
	for _, tc := range []struct {
		rtt, min, want time.Duration
	}{
		{ms(10), 0, ms(5)},
		{ms(10), ms(2), ms(3)},
		{ms(10), ms(6), 0}, // min is wrong: no negative accuracy
		{3, 0, 2},          // odd RTT: RTT/2 rounds up, the bound stays a bound
	} {
		c := NewCristian(tc.min)
		if err := c.Add(CristianRound{Sent: at(0), Server: at(ms(1)), Received: at(tc.rtt)}); err != nil {
			t.Fatal(err)
		}
		if e, _ := c.Estimate(); e.Accuracy != tc.want {
			t.Errorf("rtt %v min %v: accuracy %v, want %v", tc.rtt, tc.min, e.Accuracy, tc.want)
		}
	}
}

func TestCristianRejects(t *testing.T) {
	c := NewCristian(0)
	for name, r := range map[string]CristianRound{
		"negative rtt": {Sent: at(ms(10)), Server: at(0), Received: at(0)},
		"zero sent":    {Server: at(0), Received: at(0)},
		"zero server":  {Sent: at(0), Received: at(0)},
	} {
		if err := c.Add(r); !errors.Is(err, ErrCristianRound) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if c.Rounds() != 0 {
		t.Errorf("rejected rounds counted: %d", c.Rounds())
	}
}
