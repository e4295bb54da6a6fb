package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/synclab/synclab/internal/transport"
	"github.com/synclab/synclab/pkg/timesync/cristian"
	"github.com/synclab/synclab/pkg/timesync/ntp"
	"github.com/synclab/synclab/pkg/wire"
)

// cristianQueryID is the sender ID of `timed query --proto cristian`: a
// one-shot query is no member, and the server only needs an ID to address
// its reply to (it keeps no state per sender).
const cristianQueryID = 0xffff_fffe

// runCristianQuery measures against a timed server with Cristian's
// algorithm, one request at a time like runQuery, and reports the round
// with the smallest round trip. Frames are sealed with keys[0] when keys
// are given, and replies must then authenticate.
func runCristianQuery(ctx context.Context, conn *transport.UDPConn, opt queryOptions, cluster uint32, keys []wire.Key) queryResult {
	res := queryResult{Address: opt.target.String(), KernelTimestamps: true, Samples: []querySample{}}
	v := wire.NewValidator(cluster, cristianQueryID, keys)
	var best *cristian.Round
	var lastSend time.Time
	for seq := 1; seq <= opt.count && ctx.Err() == nil; seq++ {
		if !lastSend.IsZero() {
			if wait := opt.interval - opt.now().Sub(lastSend); wait > 0 {
				select {
				case <-time.After(wait):
				case <-ctx.Done():
				}
			}
		}
		smp := querySample{Seq: seq}
		lastSend = opt.now()
		// One burst per request: its outstanding set holds exactly this
		// request, so a late reply to an earlier one is refused.
		burst := cristian.NewBurst(0, ntp.Precision(queryPrecision))
		opt.refused = conn.Stats().Refused
		if err := sendCristian(conn, burst, opt, cluster, keys); err != nil {
			smp.Result = "send failed: " + err.Error()
			res.Samples = append(res.Samples, smp)
			continue
		}
		r, err := awaitCristian(ctx, conn, burst, v, opt, &smp, &res)
		if err == nil {
			smp.Valid, smp.Result = true, "ok"
			off, delay := int64(-r.Estimate.Offset), int64(r.Estimate.RTT)
			smp.OffsetNs, smp.DelayNs = &off, &delay
			st, lp := r.Peer.Stratum, r.Peer.Leap
			smp.Stratum, smp.Leap = &st, &lp
			if best == nil || r.Estimate.RTT < best.Estimate.RTT {
				best = &r
			}
		} else {
			smp.Result = err.Error()
		}
		res.Samples = append(res.Samples, smp)
	}
	if best == nil {
		res.Error = summarise(res.Samples, opt)
		return res
	}
	res.setPeer(best.Peer)
	res.Valid, res.Error = true, ""
	res.OffsetNs = int64(-best.Estimate.Offset)
	res.DelayNs = int64(best.Estimate.RTT)
	res.ErrorBoundNs = int64(best.Estimate.Accuracy) + res.RootDelayNs/2 + res.RootDispersionNs
	if len(keys) > 0 {
		res.KeyID = keys[0].ID
	}
	return res
}

// sendCristian writes one request, its transmit timestamp and MAC put in
// right before the write, and tells the burst the exact T1.
func sendCristian(conn *transport.UDPConn, b *cristian.Burst, opt queryOptions, cluster uint32, keys []wire.Key) error {
	raw, err := cristian.RequestFrame(cluster, cristianQueryID)
	if err != nil {
		return err
	}
	var t1 time.Time
	var xmt wire.NTPTime
	stamp, err := conn.SendStamped(opt.target, raw, func(f []byte) []byte {
		t1 = opt.now()
		xmt = wire.NTPTimeFromTime(t1)
		wire.PatchXmt(f, xmt)
		if len(keys) > 0 {
			f = wire.Seal(f, keys[0])
		}
		return f
	})
	if err == nil {
		b.Sent(xmt, departure(t1, stamp))
	}
	return err
}

// awaitCristian waits up to opt.timeout for the reply to the request in b.
func awaitCristian(ctx context.Context, conn *transport.UDPConn, b *cristian.Burst, v *wire.Validator, opt queryOptions, smp *querySample, res *queryResult) (cristian.Round, error) {
	timer := time.NewTimer(opt.timeout)
	defer timer.Stop()
	for {
		var pkt transport.Packet
		select {
		case <-ctx.Done():
			return cristian.Round{}, errors.New("interrupted")
		case <-timer.C:
			if smp.Result != "" {
				return cristian.Round{}, errors.New(smp.Result)
			}
			if refused(conn, opt.refused) {
				return cristian.Round{}, errors.New(refusedResult)
			}
			return cristian.Round{}, errors.New("timeout")
		case p, ok := <-conn.Packets():
			if !ok {
				return cristian.Round{}, errors.New("socket closed")
			}
			pkt = p
		}
		if pkt.From.Addr().Unmap() != opt.target.Addr().Unmap() || pkt.From.Port() != opt.target.Port() {
			continue
		}
		var f wire.Frame
		if err := f.UnmarshalBinary(pkt.Data); err != nil {
			continue // not a frame: an NTP reply to someone else's socket? keep waiting
		}
		if err := v.Authenticate(&f, pkt.Data); err != nil {
			smp.Result = fmt.Sprintf("reply refused: %v", err)
			continue // possibly forged: wait for an authentic one
		}
		if !pkt.Kernel {
			res.KernelTimestamps = false
		}
		switch err := b.Receive(&f, pkt.Time); {
		case errors.Is(err, cristian.ErrUnsolicited):
			continue // a late or duplicated reply to an earlier request
		case errors.Is(err, cristian.ErrUnsynchronized):
			return cristian.Round{}, fmt.Errorf("%w (%v)", ntp.ErrUnsynchronized, err)
		case err != nil:
			return cristian.Round{}, err
		}
		r, _ := b.Result()
		return r, nil
	}
}
