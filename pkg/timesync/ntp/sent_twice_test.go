package ntp

import (
	"testing"
	"time"

	"github.com/synclab/synclab/pkg/wire"
)

// TestSentTwiceOneRequest: a request reported twice through Sent (the
// transport's more precise stamp, reported again) is one request still:
// its answer leaves nothing waited for, and a second answer to it (the
// request duplicated on the network) gives no second sample (a review:
// the second report was a request of its own, so the latest stayed "in
// flight" and the duplicate's sample was timed from the later report,
// its delay 30 us short).
func TestSentTwiceOneRequest(t *testing.T) {
	a, err := NewAssociation(wire.ModeClient, us(1))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.SetMaxOutstanding(2); err != nil {
		t.Fatal(err)
	}
	req := roundTrip(t, a.Request(t0, 0, System{Precision: -20}))
	a.Sent(req.Transmit, t0)
	a.Sent(req.Transmit, t0.Add(us(30))) // the kernel's stamp, reported again
	answer := func(recv time.Duration) (*wire.NTPPacket, time.Time) {
		rep, err := ServerReply(req, t0.Add(recv), serverSys)
		if err != nil {
			t.Fatal(err)
		}
		rep.Transmit = wire.NTPTimeFromTime(t0.Add(recv + us(10)))
		return roundTrip(t, rep), t0.Add(ms(1))
	}
	rep1, dst := answer(us(400))
	if _, err := a.Receive(rep1, dst); err != nil {
		t.Fatal(err)
	}
	n, latest := a.Outstanding()
	rep2, dst2 := answer(us(450)) // the duplicated request's answer
	s2, err := a.Receive(rep2, dst2)
	if n != 0 || err == nil {
		t.Fatalf("after the request's answer: %d outstanding (latest %v); a second answer to the same request gave sample %+v (err %v)", n, latest, s2, err)
	}
}
