package client_test

import (
	"testing"
	"time"

	"github.com/synclab/synclab/pkg/timesync/client"
	"github.com/synclab/synclab/pkg/wire"
)

// xlAnswers answers the client's polls as chronyd does in interleaved mode
// (see the ntp package's test server): a request that names one of the
// server's earlier answers by its receive timestamp (odd) gets that
// answer's kernel transmit stamp, lag after the T3 it carried. With basic,
// as an RFC 5905 server without the mode (ntpd) does. It returns
// the local arrival time of each answer.
func xlAnswers(b *bench, polls int, basic bool, lag time.Duration) []time.Time {
	b.t.Helper()
	stamps := map[wire.NTPTime]wire.NTPTime{}
	var arrivals []time.Time
	for range polls {
		req := b.nextRequest(srvAddr)
		var saveRx, kernel wire.NTPTime
		err := b.answer(req, 50*time.Microsecond, 20*time.Microsecond, func(rep *wire.NTPPacket) {
			rep.Receive |= 1
			rep.Transmit &^= 1
			kernel = wire.NTPTimeFromTime(rep.Transmit.TimeNear(b.now).Add(lag))
			if basic || req.Origin&1 == 0 || req.Receive == req.Transmit {
				return
			}
			if tx, ok := stamps[req.Origin]; ok {
				rep.Origin, rep.Transmit = req.Receive, tx
				delete(stamps, req.Origin)
			}
			saveRx = rep.Receive
		})
		if err != nil {
			b.t.Fatalf("answer: %v", err)
		}
		if !saveRx.IsZero() {
			stamps[saveRx] = kernel
		}
		arrivals = append(arrivals, b.now)
	}
	return arrivals
}

func TestInterleavedClient(t *testing.T) {
	b := newBench(t, func(c *client.Config) { c.Interleaved = true })
	arrivals := xlAnswers(b, 12, false, 30*time.Microsecond)
	st := b.c.Report().Sources[0]
	if st.Interleaved != "interleaved" || st.InterleavedWhy != "" || st.InterleavedAnswers != 10 || st.BasicAnswers != 2 {
		t.Errorf("status: %q (%s), %d interleaved and %d basic answers; want interleaved, 10 and 2",
			st.Interleaved, st.InterleavedWhy, st.InterleavedAnswers, st.BasicAnswers)
	}
	// The last answer completed the exchange before it: the last sample
	// is that one's.
	if !st.LastSample.Equal(arrivals[len(arrivals)-2]) {
		t.Errorf("last sample at %v, want the previous exchange's arrival %v (last %v)", st.LastSample, arrivals[len(arrivals)-2], arrivals[len(arrivals)-1])
	}
	// 12 answers: 2 basic samples, 1 interleaved answer about a sampled
	// exchange, 9 interleaved samples.
	if got := b.c.Report().Counters; got["accepted"] != 11 || got["interleaved_resampled"] != 1 {
		t.Errorf("counters %v: want 11 accepted, 1 interleaved_resampled", got)
	}
	if ev := b.events(client.EventInterleaved); len(ev) != 1 {
		t.Errorf("%d %s events, want 1", len(ev), client.EventInterleaved)
	}
	if ev := b.events(client.EventInterleavedBasic); len(ev) != 0 {
		t.Errorf("%v", ev)
	}
}

// TestInterleavedClientBasicServer: a server that answers every request in
// basic mode is used in basic mode, and the status and one warning say so.
func TestInterleavedClientBasicServer(t *testing.T) {
	b := newBench(t, func(c *client.Config) { c.Interleaved = true })
	xlAnswers(b, 8, true, 30*time.Microsecond)
	rep := b.c.Report()
	st := rep.Sources[0]
	if st.Interleaved != "basic" || st.InterleavedWhy == "" || st.InterleavedAnswers != 0 || st.BasicAnswers != 8 {
		t.Errorf("status: %q (%s), %d interleaved and %d basic answers", st.Interleaved, st.InterleavedWhy, st.InterleavedAnswers, st.BasicAnswers)
	}
	if rep.Counters["accepted"] != 8 {
		t.Errorf("counters %v: every basic answer is a sample", rep.Counters)
	}
	ev := b.events(client.EventInterleavedBasic)
	if len(ev) != 1 || !ev[0].Warn {
		t.Errorf("%s events %+v: want one, at WARN", client.EventInterleavedBasic, ev)
	}
}

// TestInterleavedOff: without Config.Interleaved the requests carry no
// origin or receive timestamp, and the status no interleaved state.
func TestInterleavedOff(t *testing.T) {
	b := newBench(t, nil)
	xlAnswers(b, 3, false, 30*time.Microsecond)
	for _, d := range b.sent {
		var p wire.NTPPacket
		if err := p.UnmarshalBinary(d.Data); err != nil || !p.Origin.IsZero() || !p.Receive.IsZero() {
			t.Fatalf("basic request %+v, %v", p, err)
		}
	}
	if st := b.c.Report().Sources[0]; st.Interleaved != "" || st.BasicAnswers != 0 {
		t.Errorf("status %+v", st)
	}
}
