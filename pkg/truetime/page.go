package truetime

import (
	"math"
	"runtime"
	"sync/atomic"
	"time"
	"unsafe"
)

// The page's layout (see the package comment): word indexes, each word 8
// bytes at offset 8×index.
const (
	wordMagic      = iota // magic (low 4 bytes) and version (high 4)
	wordSeq               // seqlock counter
	wordBase              // CLOCK_REALTIME at the publication, Unix ns
	wordLo                // earliest - base, ns
	wordHi                // latest - base, ns
	wordGrowth            // ppb
	wordSlew              // ns still to slew, + forward
	wordStaleAfter        // ns
	wordInterval          // ns
	wordFlags             // Flag bits
	wordPID               // the daemon's PID
	wordPublished         // publications since the daemon started
	words                 // words in use
)

// PageSize is the file's size: one page, the words above then zeros.
const PageSize = 4096

// Magic and Version are the first word's halves.
const (
	Magic   uint32 = 'S' | 'L'<<8 | 'T'<<16 | 'T'<<24 // "SLTT" in the file
	Version uint32 = 1
)

// Flags are the page's flag bits.
type Flags uint64

const (
	// FlagSynchronised: the page holds a bound.
	FlagSynchronised Flags = 1 << iota
	// FlagGroupTime: the bound is on the Berkeley group's time, not UTC.
	FlagGroupTime
	// FlagSimulated: the daemon disciplines a simulated clock (--clock
	// sim); the bound is mapped onto CLOCK_REALTIME, the simulated
	// clock's true time.
	FlagSimulated
	// FlagStopped: the daemon stopped (cleanly) at Base: nothing bounds
	// what happens to the clock next (another daemon may correct it).
	FlagStopped
)

// Publication is one write of the page: what the daemon knew when
// CLOCK_REALTIME read Base.
type Publication struct {
	// Base is CLOCK_REALTIME's reading the bound is relative to.
	Base time.Time
	// Earliest and Latest hold the true time at Base (when Flags has
	// FlagSynchronised).
	Earliest, Latest time.Time
	// GrowthPPB is how fast the interval may move away from later
	// readings of CLOCK_REALTIME, ns per second.
	GrowthPPB uint64
	// Slew is what the clock still had to slew at Base, positive forward.
	Slew time.Duration
	// StaleAfter is the age beyond which readers fail; Interval how often
	// the daemon publishes at least.
	StaleAfter, Interval time.Duration
	Flags                Flags
	// PID is the publishing daemon's; Published counts its publications.
	PID, Published uint64
}

// page is the mapped words. Every access is atomic: the writer is
// another process.
type page struct{ w *[words]uint64 }

// pageOf returns the page over b, which must be at least PageSize bytes
// and 8-byte aligned (a mapping is page-aligned).
func pageOf(b []byte) page {
	if len(b) < PageSize || uintptr(unsafe.Pointer(&b[0]))%8 != 0 {
		panic("truetime: page buffer too short or misaligned")
	}
	return page{(*[words]uint64)(unsafe.Pointer(&b[0]))}
}

func (p page) load(i int) uint64     { return atomic.LoadUint64(&p.w[i]) }
func (p page) store(i int, v uint64) { atomic.StoreUint64(&p.w[i], v) }

// header returns the magic and version.
func (p page) header() (magic, version uint32) {
	h := p.load(wordMagic)
	return uint32(h), uint32(h >> 32)
}

// begin marks a write in progress (seq odd) and returns the seq to end
// it with. The page has one writer.
func (p page) begin() uint64 {
	seq := p.load(wordSeq)
	if seq%2 == 0 {
		seq++
		p.store(wordSeq, seq)
	}
	return seq + 1
}

// end makes the page stable again.
func (p page) end(seq uint64) {
	if seq == 0 { // wrapped: 0 means never published
		seq = 2
	}
	p.store(wordSeq, seq)
}

// write stores pub's fields; the caller holds a write (begin).
func (p page) write(pub Publication) {
	base := pub.Base.UnixNano()
	for i, v := range [words]uint64{
		wordBase:       uint64(base),
		wordLo:         uint64(pub.Earliest.UnixNano() - base),
		wordHi:         uint64(pub.Latest.UnixNano() - base),
		wordGrowth:     pub.GrowthPPB,
		wordSlew:       uint64(pub.Slew),
		wordStaleAfter: uint64(pub.StaleAfter),
		wordInterval:   uint64(pub.Interval),
		wordFlags:      uint64(pub.Flags),
		wordPID:        pub.PID,
		wordPublished:  pub.Published,
	} {
		if i < wordBase {
			continue
		}
		p.store(i, v)
		if betweenStores != nil {
			betweenStores()
		}
	}
}

// betweenStores, when set (by the torn-read test, before any writer
// runs), runs between the writer's stores, so that readers meet half a
// publication.
var betweenStores func()

// snapshot is a consistent copy of the page's fields, with the clock's
// reading taken inside the same seqlock read.
type snapshot struct {
	seq                  uint64
	base, lo, hi, slew   int64
	growth               uint64
	staleAfter, interval int64
	flags                Flags
	pid, published       uint64
	now                  int64 // CLOCK_REALTIME, Unix ns, read between the seq loads
}

// maxSpin bounds a read's retries on a page mid-write (by the monotonic
// clock, on this slow path only): a daemon that stopped in the middle of
// a write leaves seq odd. A variable for the torn-read test, whose
// writer a loaded host may deschedule mid-write for longer.
var maxSpin = 100 * time.Millisecond

// read takes a consistent snapshot (the seqlock read of the package
// comment), reading the clock with now between the two loads of seq. ok
// is false when the page stayed mid-write for maxSpin.
func (p page) read(now func() int64) (s snapshot, ok bool) {
	var first time.Time
	for i := 0; ; i++ {
		s.seq = p.load(wordSeq)
		if s.seq%2 == 0 {
			s.base = int64(p.load(wordBase))
			s.lo = int64(p.load(wordLo))
			s.hi = int64(p.load(wordHi))
			s.growth = p.load(wordGrowth)
			s.slew = int64(p.load(wordSlew))
			s.staleAfter = int64(p.load(wordStaleAfter))
			s.interval = int64(p.load(wordInterval))
			s.flags = Flags(p.load(wordFlags))
			s.pid = p.load(wordPID)
			s.published = p.load(wordPublished)
			s.now = now()
			if p.load(wordSeq) == s.seq {
				return s, true
			}
		}
		// A write is in progress: it takes microseconds; yield after a
		// short spin, and give up after maxSpin.
		if i >= 64 {
			if first.IsZero() {
				first = time.Now()
			} else if time.Since(first) > maxSpin {
				return snapshot{}, false
			}
			runtime.Gosched()
		}
	}
}

// window computes the bound at the snapshot's clock reading (the package
// comment's formula). The caller has checked the flags and the age.
func (s snapshot) window() (earliest, latest int64) {
	age := s.now - s.base
	widen := int64(math.Ceil(float64(age) * float64(s.growth) / 1e9))
	earliest = s.now + s.lo - widen - max(0, s.slew)
	latest = s.now + s.hi + widen + max(0, -s.slew)
	return earliest, latest
}
