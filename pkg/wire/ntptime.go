package wire

import "time"

// NTP wire time (RFC 5905 section 6).
//
// An NTPTime is the 64-bit timestamp format: seconds since 1900-01-01 00:00
// UTC in the high 32 bits, the fraction of a second in units of 2^-32 s in
// the low 32 bits (Q32.32). The seconds wrap every 2^32 s (about 136 years):
// era 0 ends at 2036-02-07T06:28:16Z, when era 1 starts at 0 again. The
// format does not carry the era, so a reader must infer it; this package
// uses a fixed pivot (see Time) and offers TimeNear for a caller that knows
// roughly what time it is.
//
// The value 0 means "unknown / not set" (RFC 5905: a zero origin or
// transmit timestamp is invalid). Time returns the zero time.Time for it,
// and NTPTimeFromTime maps the zero time.Time to it. The one instant that
// really encodes as 0 (the first 2^-33 s of era 1) is thereby unrepresentable,
// which costs nothing in practice.
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                            Seconds                            |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                            Fraction                           |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
type NTPTime uint64

// NTPShort is the 32-bit short format (Q16.16 seconds) of root delay and
// root dispersion.
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|          Seconds              |           Fraction            |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
type NTPShort uint32

const (
	// ntpEpochOffset is the number of seconds from 1900-01-01 (the NTP
	// epoch) to 1970-01-01 (the Unix epoch).
	ntpEpochOffset = 2208988800
	// ntpEraSeconds is the length of one NTP era.
	ntpEraSeconds = 1 << 32
	// ntpPivot splits the 32-bit seconds field between eras: below it, a
	// value belongs to era 1. The usable range of Time is thus
	// [1968-01-20T03:14:08Z, 2104-02-26T09:42:24Z): centred on the era
	// boundary, the same choice as beevik/ntp and most implementations
	// that have to survive 2036.
	ntpPivot = 1 << 31

	nanosPerSecond = 1_000_000_000
)

// NTPTimeFromTime converts t to the NTP timestamp format, rounding to the
// nearest 2^-32 s (about 0.23 ns). Times outside the 136-year window around
// the era boundary (see Time) wrap silently: the format cannot carry them.
// The zero time.Time becomes 0 ("unset").
func NTPTimeFromTime(t time.Time) NTPTime {
	if t.IsZero() {
		return 0
	}
	secs := uint64(t.Unix() + ntpEpochOffset) // modulo 2^64; the era is dropped below
	nsec := uint64(t.Nanosecond())            // [0, 1e9)
	// Round half up. nsec * 2^32 < 2^62 cannot overflow, and the result
	// cannot carry into the seconds: 999999999 ns is 0xfffffffb.b units,
	// so frac <= 0xfffffffc (a carry needs the last 0.12 ns of a second,
	// which whole nanoseconds never reach).
	frac := (nsec<<32 + nanosPerSecond/2) / nanosPerSecond
	return NTPTime(secs<<32 | frac)
}

// Seconds returns the 32-bit seconds field.
func (t NTPTime) Seconds() uint32 { return uint32(t >> 32) }

// Fraction returns the 32-bit fraction field (units of 2^-32 s).
func (t NTPTime) Fraction() uint32 { return uint32(t) }

// IsZero reports whether t is 0, which RFC 5905 uses for "unset".
func (t NTPTime) IsZero() bool { return t == 0 }

// fracNanos converts a 32-bit fraction to nanoseconds, rounding to nearest.
// The result can be 1e9 for fractions within 2^-33 s of the next second;
// time.Unix and the callers normalise that.
func fracNanos(frac uint64) int64 {
	return int64((frac*nanosPerSecond + 1<<31) >> 32)
}

// Time converts t to a time.Time in UTC, rounding to the nearest
// nanosecond. A seconds field below 2^31 is taken to be in era 1 (on or
// after 2036-02-07T06:28:16Z), anything else in era 0: t is read as lying in
// [1968-01-20T03:14:08Z, 2104-02-26T09:42:24Z). 0 ("unset") gives the zero
// time.Time.
func (t NTPTime) Time() time.Time {
	if t == 0 {
		return time.Time{}
	}
	secs := int64(t >> 32)
	if secs < ntpPivot {
		secs += ntpEraSeconds
	}
	return time.Unix(secs-ntpEpochOffset, fracNanos(uint64(uint32(t)))).UTC()
}

// TimeNear converts t to the time.Time closest to pivot among its
// representations in every era: the right answer whenever pivot is known to
// be within 68 years of the truth (a clock that is merely wrong, not
// broken). 0 ("unset") gives the zero time.Time.
func (t NTPTime) TimeNear(pivot time.Time) time.Time {
	if t == 0 {
		return time.Time{}
	}
	// The pivot's era; floor division so that pre-1900 pivots work too.
	p := pivot.Unix() + ntpEpochOffset
	era := p >> 32 // arithmetic shift: floor division by 2^32
	secs := era<<32 + int64(t>>32)
	// The candidate in the pivot's era is within one era of the pivot;
	// the nearest one is this one or a neighbour.
	if d := secs - p; d > ntpPivot {
		secs -= ntpEraSeconds
	} else if d < -ntpPivot {
		secs += ntpEraSeconds
	}
	return time.Unix(secs-ntpEpochOffset, fracNanos(uint64(uint32(t)))).UTC()
}

// Sub returns t-u as a signed duration, rounded to the nanosecond. The
// difference is taken modulo 2^64 and read as signed, so it is right across
// an era boundary as long as the true difference is within ±68 years; that
// is the property RFC 5905's on-wire arithmetic relies on.
func (t NTPTime) Sub(u NTPTime) time.Duration {
	return q32ToDuration(int64(t - u))
}

// Add returns t moved by d, rounding d to the nearest 2^-32 s. It wraps at
// the era boundary like the format does.
func (t NTPTime) Add(d time.Duration) NTPTime {
	return t + NTPTime(durationToQ32(d))
}

// q32ToDuration converts a signed Q32.32 number of seconds to a duration,
// rounding to the nearest nanosecond.
func q32ToDuration(q int64) time.Duration {
	secs := q >> 32                // floor
	frac := uint64(q & 0xffffffff) // non-negative remainder
	return time.Duration(secs*nanosPerSecond + fracNanos(frac))
}

// durationToQ32 converts d to a signed Q32.32 number of seconds, rounding
// to the nearest 2^-32 s.
func durationToQ32(d time.Duration) int64 {
	neg := d < 0
	u := uint64(d)
	if neg {
		u = -u // two's complement magnitude; also right for math.MinInt64
	}
	secs, nsec := u/nanosPerSecond, u%nanosPerSecond
	q := secs<<32 + (nsec<<32+nanosPerSecond/2)/nanosPerSecond
	if neg {
		return -int64(q)
	}
	return int64(q)
}

// NTPShortFromDuration converts d to the Q16.16 short format, rounding up
// to the next 2^-16 s (about 15 us). The short format carries root delay
// and root dispersion, bounds on a server's error that its clients add to
// their own: rounding to nearest would let a server say up to 7.6 us less
// than it knows. The format is unsigned and tops out just below 65536 s:
// negative durations become 0, longer ones saturate.
func NTPShortFromDuration(d time.Duration) NTPShort {
	if d <= 0 {
		return 0
	}
	secs, nsec := uint64(d)/nanosPerSecond, uint64(d)%nanosPerSecond
	frac := (nsec<<16 + nanosPerSecond - 1) / nanosPerSecond
	if frac == 1<<16 {
		secs++
		frac = 0
	}
	if secs > 0xffff {
		return 0xffffffff
	}
	return NTPShort(secs<<16 | frac)
}

// Duration converts s to a duration, rounded to the nearest nanosecond.
func (s NTPShort) Duration() time.Duration {
	secs := int64(s >> 16)
	frac := uint64(s & 0xffff)
	return time.Duration(secs*nanosPerSecond + int64((frac*nanosPerSecond+1<<15)>>16))
}
