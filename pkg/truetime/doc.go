// Package truetime reads the bound on the true time that timed publishes,
// TrueTime style: Now returns an interval [earliest, latest] that holds
// the true time (UTC as timed's sources give it, or the Berkeley group's
// time) at the instant of the call, at the cost of a clock_gettime and a
// few atomic loads. WaitUntilPast waits until a time is surely past
// everywhere (commit-wait).
//
//	tt, err := truetime.Open(truetime.DefaultPath)
//	if err != nil { ... }          // no such file: is timed running?
//	earliest, latest, err := tt.Now()
//	var ue *truetime.Error
//	if errors.As(err, &ue) { ... } // ue.Kind: ErrUnsynchronised, ErrStale, ...
//	ts := latest                    // a commit timestamp
//	err = tt.WaitUntilPast(ctx, ts) // returns once earliest > ts
//
// A Reader is safe for concurrent use. After Open (which maps the file)
// a read makes no system call: the vDSO's clock_gettime(CLOCK_REALTIME)
// and atomic loads of the shared page. `timed now [--json]` prints what a
// reader gets.
//
// # Where the bound comes from
//
// timed's discipline (the NTP client's servo, or Berkeley's) keeps a
// truthful bound: after an update with root distance λ, the true time
// lies within λ, plus the drift since, of the clock's reading corrected by
// the predicted offset (pkg/timesync/servo, Bound). The daemon writes that
// bound into a shared page on every clock update (with the clock's
// adjustments) and at least every second: "when CLOCK_REALTIME read B, the
// true time lay in [B + lo, B + hi]", with the rate at which the interval
// may move away from later readings. A reader that reads B' later
// computes
//
//	age      = B' - B                                 (ns; < 0: ErrClockStepped)
//	widen    = ceil(age × growth_ppb / 10⁹)
//	earliest = B' + lo - widen - max(0, slew)
//	latest   = B' + hi + widen + max(0, -slew)
//
// where slew is what the kernel still had to slew at B (positive: the
// clock is being moved forward, so it may gain up to that much on the
// true time before the next publication). Between publications the clock
// changes only by its rate (the oscillator's drift less the frequency
// correction in force, within growth of the servo's estimate) and by the
// slew in progress (at most slew, in its direction): timed changes the
// frequency, starts a slew or steps the clock only inside a write (odd
// sequence, below), and publishes afresh in the same write.
//
// With `timed run --clock sim` the disciplined clock is simulated and no
// other process can read it: the daemon maps its bound onto
// CLOCK_REALTIME readings (the simulated clock's true time), so a reader
// works unchanged, and a test checks the bound against its own clock.
//
// # The file
//
// Default path: /run/timed/truetime, beside the control socket (timed run
// --truetime-file; "none" turns publishing off). timed creates it mode
// 0640, owned by the daemon's user and the control group (--control-group)
// when one is set: the control group's members read it without root. The
// file is one 4096-byte page; its first 96 bytes are twelve 64-bit words in
// the host's byte order (little-endian on every platform synclab builds
// for), each written and read with an atomic 64-bit store or load at an
// 8-byte-aligned offset. The rest of the page is zero, reserved.
//
//	offset size field           meaning
//	     0    4 magic           "SLTT" (0x53 0x4c 0x54 0x54)
//	     4    4 version         layout version, 1 (uint32)
//	     8    8 seq             seqlock: 0 never published; odd: a write in
//	                            progress; even: stable (uint64)
//	    16    8 base_ns         CLOCK_REALTIME at the publication, Unix ns (int64)
//	    24    8 lo_ns           earliest true time minus base_ns (int64)
//	    32    8 hi_ns           latest true time minus base_ns (int64)
//	    40    8 growth_ppb      widening rate, ns per second of age (uint64)
//	    48    8 slew_ns         slew still to make at base_ns, + forward (int64)
//	    56    8 stale_after_ns  an age beyond which readers must fail (int64)
//	    64    8 interval_ns     the daemon publishes at least this often (int64)
//	    72    8 flags           bit 0 synchronised (lo..slew hold a bound);
//	                            bit 1 group time (Berkeley, not UTC);
//	                            bit 2 simulated clock (--clock sim);
//	                            bit 3 stopped: the daemon stopped at base_ns (uint64)
//	    80    8 pid             the publishing daemon's process ID (uint64)
//	    88    8 published       number of publications since the daemon
//	                            started (uint64)
//
// The writer (one daemon; the control socket's lock keeps a second one
// from starting on the same directory): store seq+1 (odd), store the
// fields, store seq+2 (even). A reader: load seq (s1); if odd, retry; load
// the fields; read CLOCK_REALTIME; load seq again (s2); if s2 ≠ s1, retry.
// The clock is read between the two loads so that no adjustment of the
// clock, which timed makes only while seq is odd, falls between the page
// and the reading. A reader retries for at most 100 ms of its own clock,
// then fails (ErrStale: the daemon stopped in the middle of a write).
//
// What a reader must do:
//
//   - magic and version both 0: a page timed has made but not yet
//     headed (a reader started beside it at boot): no bound
//     (ErrUnsynchronised), read again later. Still so 10 s after the
//     file's modification time: timed died making it (ErrStale). A
//     Reader opens the path again meanwhile (at most once a second) and
//     follows a restarted timed's new file.
//   - magic or version unknown: fail (ErrVersion); never guess a layout.
//     A later version that only adds fields keeps version 1's words where
//     they are and raises the version; this reader refuses it all the
//     same, so upgrade readers with the daemon.
//   - seq 0 or published 0 (headed, never published in): no bound
//     (ErrUnsynchronised), and after 10 s from the file's modification
//     time ErrStale, as for an unheaded page, which it is followed past.
//   - flags bit 3 (stopped): the daemon stopped cleanly; nothing bounds
//     what is done to the clock next (another daemon may start correcting
//     it): fail (ErrStale) at once.
//   - stale_after_ns beyond 2⁵⁰ ns (13 days) or <= 0, or base_ns outside
//     [0, 2⁶²]: not written by timed (ErrInvalid). Every publication,
//     synchronised or not, carries both.
//   - age < 0: CLOCK_REALTIME went back since the publication (someone
//     stepped it; timed never does): fail (ErrClockStepped).
//   - age > stale_after_ns: the daemon stopped publishing (it died, or
//     hangs; it publishes every interval_ns): fail (ErrStale), whatever
//     the flags: the page of a timed killed while unsynchronised goes
//     stale too. Before that the bound widens with the age, so the last
//     bound of a daemon that died stays truthful while it is used. A
//     Reader whose page is stale opens the path again, at most once a
//     second, and follows a restarted daemon's new file. (timed's unit
//     keeps /run/timed across a restart, RuntimeDirectoryPreserve=restart:
//     the restarted daemon takes the same file over, continuing its
//     seqlock, and says "unsynchronised" in it before it changes the
//     clock.)
//   - flags bit 0 clear: no bound (ErrUnsynchronised): timed is starting,
//     not synchronised, only measuring (--no-adjust), or is the lab's
//     local reference (nothing to be synchronised to). `timed status`
//     says which.
//   - lo_ns > hi_ns, growth_ppb > 10⁹, or |lo_ns|, |hi_ns|, |slew_ns|
//     beyond 2⁵⁰ ns: not written by timed (ErrInvalid). Within these the
//     formula's int64 arithmetic cannot overflow.
//
// What the page cannot see: a step of CLOCK_REALTIME forward by anyone
// but timed (date -s) between publications moves a reader's bound
// forward with it until timed's next publication, a second at most, as it
// moves every program's idea of the time; nothing but timed should set
// the clock on a machine timed disciplines (its unit conflicts with the
// other NTP daemons).
package truetime
