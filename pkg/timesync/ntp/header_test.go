package ntp

import (
	"testing"
	"time"

	"github.com/synclab/synclab/pkg/wire"
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
	sys := NextSystem(sure, est, Selection{}, 0x0a000001, -20, 0, now)
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

// TestSampleHeader: a basic sample carries its answer's header; an
// interleaved one completes the exchange of the answer before, whose T2
// the server read while it said that answer's root dispersion: it carries
// the larger of both answers' (here the earlier one's, the server growing
// surer each answer).
func TestSampleHeader(t *testing.T) {
	a, srv := newXleave(t), &xlServer{lag: us(40)}
	disp := func(i int) time.Duration { return ms(float64(60 - 10*i)) }
	samples := 0
	for i := range 6 {
		t1 := at(time.Duration(i) * time.Second)
		rep, dst := srv.answer(t, poll(t, a, t1), t1)
		rep.RootDispersion = wire.NTPShortFromDuration(disp(i))
		rep.RootDelay = wire.NTPShortFromDuration(ms(float64(i)))
		s, err := a.Receive(rep, dst)
		if err != nil {
			continue // answer 2: ErrInterleavedSampled (TestInterleavedExchange)
		}
		samples++
		want := disp(i)
		if i >= 3 {
			want = disp(i - 1)
		}
		if d := s.Header.RootDispersion; (d - want).Abs() > us(20) {
			t.Errorf("answer %d: sample header root dispersion %v, want %v", i, d, want)
		}
		if d := s.Header.RootDelay; (d - ms(float64(i))).Abs() > us(20) {
			t.Errorf("answer %d: sample header root delay %v, want the larger (this answer's) %v", i, d, ms(float64(i)))
		}
	}
	if samples != 5 {
		t.Errorf("%d samples of 6 answers, want 5 (2 basic, 3 interleaved)", samples)
	}
}
