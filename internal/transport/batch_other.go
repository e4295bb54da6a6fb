//go:build !linux

package transport

import (
	"errors"
	"net"
	"net/netip"
	"syscall"
	"time"
)

// batchIO elsewhere than Linux reads and writes one datagram per call.
type batchIO struct {
	conn *net.UDPConn
	buf  []byte
	oob  []byte
	pkts []Packet
	// No stamped writes here: never broken.
	broken  bool
	trusted int
}

func newBatchIO(conn *net.UDPConn, _ bool, _, slot int) (*batchIO, error) {
	return &batchIO{conn: conn, buf: make([]byte, slot), oob: make([]byte, max(oobSize, 1)), pkts: make([]Packet, 1)}, nil
}

func (b *batchIO) read(c *counters, via Via, unstamped string, skip func(netip.AddrPort) bool) ([]Packet, error) {
	n, oobn, flags, from, err := b.conn.ReadMsgUDPAddrPort(b.buf, b.oob)
	if err != nil {
		return nil, err
	}
	if flags&syscall.MSG_TRUNC != 0 {
		c.truncated.Add(1)
		return b.pkts[:0], nil
	}
	from = netip.AddrPortFrom(from.Addr().Unmap(), from.Port())
	if skip != nil && skip(from) {
		return b.pkts[:0], nil
	}
	p := Packet{From: from, Data: b.buf[:n:n], Via: via, Time: time.Now()}
	p.Unstamped = unstamped
	if unstamped == "" {
		if t, ok := parseRxTimestamp(b.oob[:oobn]); ok {
			p.Time, p.Kernel = t, true
		} else {
			p.Unstamped = noStampAttached
		}
	}
	c.stamp(p.Kernel)
	c.via[via].in(n)
	b.pkts[0] = p
	return b.pkts[:1], nil
}

func (b *batchIO) write(c *counters, via Via, ds []Datagram, _ *[]int) (int, error) {
	sent := 0
	var first error
	for _, d := range ds {
		_, err := b.conn.WriteToUDPAddrPort(d.Data, netip.AddrPortFrom(d.To.Addr().Unmap(), d.To.Port()))
		if err != nil {
			c.sendErrs.Add(1)
			if first == nil {
				first = err
			}
			if errors.Is(err, net.ErrClosed) {
				return sent, ErrClosed
			}
			continue
		}
		c.via[via].out(len(d.Data))
		sent++
	}
	return sent, first
}
