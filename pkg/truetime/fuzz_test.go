package truetime

import (
	"encoding/binary"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// FuzzRead: any page contents (a file timed did not write, or wrote in a
// later layout) and any clock reading give a typed error or an interval
// that is not inverted; never a panic.
func FuzzRead(f *testing.F) {
	seed := func(pub Publication, now time.Time) {
		pg := memPage()
		pg.store(wordMagic, uint64(Magic)|uint64(Version)<<32)
		memPublisher(pg).Publish(pub)
		b := make([]byte, 8*words+8)
		for i := range words {
			binary.LittleEndian.PutUint64(b[8*i:], pg.load(i))
		}
		binary.LittleEndian.PutUint64(b[8*words:], uint64(now.UnixNano()))
		f.Add(b)
	}
	p := synced(t0, -time.Millisecond, time.Millisecond)
	p.Slew = -3 * time.Millisecond
	seed(p, t0.Add(time.Second))
	seed(p, t0.Add(-time.Second))
	seed(Publication{Base: t0, Flags: FlagStopped, StaleAfter: 1}, t0)
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) < 8*words+8 {
			return
		}
		pg := memPage()
		for i := range words {
			pg.store(i, binary.LittleEndian.Uint64(b[8*i:]))
		}
		pg.store(wordSeq, pg.load(wordSeq)&^1) // a stable page (odd: the spin, tested elsewhere)
		var clk atomic.Int64
		clk.Store(int64(binary.LittleEndian.Uint64(b[8*words:])))
		r := &Reader{path: "fuzz", now: clk.Load}
		r.cur.Store(&mapping{p: pg, unmap: func() error { return nil }})
		rd, err := r.read(r.cur.Load())
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Kind == nil {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if rd.Latest.Before(rd.Earliest) {
			t.Fatalf("inverted interval [%v, %v]", rd.Earliest, rd.Latest)
		}
	})
}
