package ntp

import (
	"testing"
	"time"
)

// TestCandidateUsesChosenSamplesHeader: the filter picks an older sample
// (a later one was more delayed) whose packet said root dispersion 60 ms;
// the newest packet says 1 ms. The source's error at the chosen sample's
// time is bounded only by the 60 ms it said then, so the candidate and the
// system variables we serve must carry 60 ms. A newer, larger root
// dispersion is kept too (the source is less sure now).
func TestCandidateUsesChosenSamplesHeader(t *testing.T) {
	unsure := Peer{Stratum: 2, RootDelay: ms(4), RootDispersion: ms(60)}
	sure := Peer{Stratum: 2, RootDelay: ms(2), RootDispersion: ms(1)}
	var f Filter
	poll := 16 * time.Second
	f.Add(Sample{Offset: ms(20), Delay: us(200), Dispersion: us(10), Time: at(0), Header: unsure}, poll)
	if out := f.Add(Sample{Offset: 0, Delay: ms(5), Dispersion: us(10), Time: at(time.Second), Header: sure}, poll); out != FilterStale {
		t.Fatalf("the more delayed sample: %v, want stale", out)
	}
	est, _ := f.Estimate()
	if est.Time != at(0) || est.Header != unsure {
		t.Fatalf("estimate of the sample at %v with header %+v, want the first one's", est.Time, est.Header)
	}
	now := at(2 * time.Second)
	c := MakeCandidate(est, sure, true, 0, 0, now)
	want := RootDistance(unsure.RootDelay, unsure.RootDispersion, est, now)
	if c.RootDistance != want {
		t.Errorf("candidate root distance %v, want %v (the chosen sample's root delay and dispersion)", c.RootDistance, want)
	}
	sys := NextSystem(sure, est, Selection{}, 0x0a000001, -20, now)
	if sys.RootDelay != unsure.RootDelay+est.Delay || sys.RootDispersion < unsure.RootDispersion {
		t.Errorf("served root delay %v, dispersion %v: want at least the chosen sample's %v, %v",
			sys.RootDelay, sys.RootDispersion, unsure.RootDelay+est.Delay, unsure.RootDispersion)
	}
	// The newest header is larger: it wins.
	worse := Peer{Stratum: 2, RootDelay: ms(8), RootDispersion: ms(90)}
	if c := MakeCandidate(est, worse, true, 0, 0, now); c.RootDistance != RootDistance(worse.RootDelay, worse.RootDispersion, est, now) {
		t.Errorf("a newer, larger root dispersion was not kept: %v", c.RootDistance)
	}
}
