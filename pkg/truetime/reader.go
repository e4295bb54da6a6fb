package truetime

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultPath is where timed publishes by default: beside its control
// socket, /run/timed/control.sock.
const DefaultPath = "/run/timed/truetime"

// reopenEvery bounds how often a Reader whose page is stale opens its
// path again (a system call, off the fast path).
const reopenEvery = time.Second

// maxGrowthPPB is the largest widening rate a reader accepts: a clock
// that runs at twice the speed of time is not a clock.
const maxGrowthPPB = 1e9

// The page's numbers a reader accepts: a bound, a slew or a stale limit
// of 13 days at most, a publication before the year 2116. Within them the
// interval's arithmetic cannot overflow.
const (
	maxSpan = 1 << 50
	maxBase = 1 << 62
)

func abs(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

// Reader reads timed's page. Safe for concurrent use.
type Reader struct {
	path string
	cur  atomic.Pointer[mapping]
	now  func() int64 // CLOCK_REALTIME, Unix ns (tests inject a clock)

	mu       sync.Mutex // reopening and closing
	old      []*mapping // replaced mappings, unmapped by Close
	reopened int64      // when the path was last opened again, Unix ns
	closed   bool
}

// mapping is one mapped file.
type mapping struct {
	p     page
	unmap func() error
	id    fileID
	// made is the file's modification time when mapped (ns since the
	// epoch, CLOCK_REALTIME): for a page never published, when timed
	// made it.
	made int64
}

// unpublishedAfter is how long a page may stay unheaded or unpublished
// before a reader takes its maker for dead (ErrStale): the default
// --truetime-stale-after. timed heads its page as it makes it and
// publishes within a second; the page itself has no stale limit yet.
const unpublishedAfter = 10 * time.Second

// Open maps the page at path (DefaultPath for timed's default) for
// reading. It fails when the file cannot be opened (is timed running with
// its default --truetime-file? is this user in the control group?) or is
// not a page this package reads (ErrVersion). A page not yet published is
// not an error here: Now says ErrUnsynchronised until it is.
func Open(path string) (*Reader, error) {
	m, err := mapFile(path)
	if err != nil {
		return nil, err
	}
	r := &Reader{path: path, now: realtimeNow}
	r.cur.Store(m)
	// A page not published yet, or a dead timed's, is for Now to report
	// (and to follow a restarted timed past); only a page of another kind
	// is refused here.
	if err := r.checkHeader(m); errors.Is(err, ErrVersion) {
		m.unmap()
		return nil, err
	}
	return r, nil
}

func realtimeNow() int64 { return time.Now().UnixNano() }

func (r *Reader) checkHeader(m *mapping) error {
	magic, version := m.p.header()
	if magic == 0 && version == 0 {
		// The file timed has just made, before its header's store (a
		// program started beside timed at boot opened it then): a page
		// not yet published, not a page of another kind. Still unheaded
		// long after: timed died making it (or Create failed after the
		// truncate).
		if age := time.Duration(r.now() - m.made); age > unpublishedAfter {
			return &Error{Kind: ErrStale, Path: r.path, Age: age,
				Detail: fmt.Sprintf("timed made its page %v ago and never headed it: it died while starting; is it running?", age.Round(time.Second))}
		}
		return &Error{Kind: ErrUnsynchronised, Path: r.path, Detail: "timed has not published yet (its page is being made)"}
	}
	if magic != Magic || version != Version {
		return &Error{Kind: ErrVersion, Path: r.path,
			Detail: fmt.Sprintf("magic %#08x version %d; this reader knows magic %#08x version %d (upgrade the reader with timed)", magic, version, Magic, Version)}
	}
	return nil
}

// Path returns the file the Reader maps.
func (r *Reader) Path() string { return r.path }

// Close unmaps the page. Calls after Close fail with ErrClosed; Close
// must not run concurrently with a read still in progress.
func (r *Reader) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil
	}
	r.closed = true
	m := r.cur.Swap(nil)
	var err error
	for _, o := range append(r.old, m) {
		if o != nil {
			if e := o.unmap(); e != nil && err == nil {
				err = e
			}
		}
	}
	r.old = nil
	return err
}

// Now returns the interval that holds the true time at the instant of the
// call: earliest <= true time <= latest. On error both times are zero and
// the error is an *Error.
func (r *Reader) Now() (earliest, latest time.Time, err error) {
	st, err := r.Read()
	if err != nil {
		return time.Time{}, time.Time{}, err
	}
	return st.Earliest, st.Latest, nil
}

// Reading is one read of the page, for a caller that wants to know more
// than the interval (timed now).
type Reading struct {
	// Earliest and Latest hold the true time when CLOCK_REALTIME read Now.
	Earliest, Latest, Now time.Time
	// Age is the time since the publication, by CLOCK_REALTIME.
	Age time.Duration
	// Interval and StaleAfter are the daemon's publication period and
	// the age at which reading fails.
	Interval, StaleAfter time.Duration
	// Flags are the page's (FlagGroupTime: the Berkeley group's time).
	Flags Flags
	// PID is the publishing daemon's; Published its publication count.
	PID, Published uint64
}

// Read reads the page once and returns the interval with what it was
// computed from. Errors are *Error.
func (r *Reader) Read() (Reading, error) {
	m := r.cur.Load()
	if m == nil {
		return Reading{}, &Error{Kind: ErrClosed, Path: r.path}
	}
	st, err := r.read(m)
	if err != nil && (stale(err) || unpublished(m)) {
		// A page never published may be a dead timed's too: one that
		// died making it, whose restart made a new file at the path.
		if m2 := r.reopen(m); m2 != nil {
			st, err = r.read(m2)
		}
	}
	return st, err
}

// unpublished reports whether m's page has never held a publication:
// unheaded, or headed but not yet published in.
func unpublished(m *mapping) bool {
	magic, version := m.p.header()
	return magic == 0 && version == 0 || m.p.load(wordPublished) == 0
}

func stale(err error) bool {
	e, ok := err.(*Error)
	return ok && (e.Kind == ErrStale || e.Kind == ErrVersion)
}

// read reads mapping m: the seqlock read, then the checks the package
// comment lists, then the formula.
func (r *Reader) read(m *mapping) (Reading, error) {
	if err := r.checkHeader(m); err != nil {
		return Reading{}, err
	}
	s, ok := m.p.read(r.now)
	if !ok {
		return Reading{}, &Error{Kind: ErrStale, Path: r.path,
			Detail: fmt.Sprintf("the page has been mid-write for over %v: the daemon stopped in the middle of a publication", maxSpin)}
	}
	rd := Reading{Now: time.Unix(0, s.now), Interval: time.Duration(s.interval), StaleAfter: time.Duration(s.staleAfter),
		Flags: s.flags, PID: s.pid, Published: s.published}
	if s.seq == 0 || s.published == 0 {
		// Headed (Create) but not yet published in: no stale limit yet.
		if age := time.Duration(s.now - m.made); age > unpublishedAfter {
			return rd, &Error{Kind: ErrStale, Path: r.path, Age: age,
				Detail: fmt.Sprintf("timed made its page %v ago and never published in it: it died while starting; is it running?", age.Round(time.Second))}
		}
		return rd, &Error{Kind: ErrUnsynchronised, Path: r.path, Detail: "timed has not published yet"}
	}
	if s.flags&FlagStopped != 0 {
		return rd, &Error{Kind: ErrStale, Path: r.path,
			Detail: fmt.Sprintf("timed (pid %d) stopped at %s: is it running? (a restarted timed's page is opened again at once)", s.pid, time.Unix(0, s.base).UTC().Format(time.RFC3339))}
	}
	// Every publication, synchronised or not, carries its time and stale
	// limit: the age is checked before the flags, so that the page of a
	// timed killed while unsynchronised goes stale (and is followed to a
	// restarted timed's file) like a synchronised one.
	if s.staleAfter <= 0 || s.staleAfter > maxSpan || s.base < 0 || s.base > maxBase {
		return rd, &Error{Kind: ErrInvalid, Path: r.path,
			Detail: fmt.Sprintf("base %d ns, stale after %d ns", s.base, s.staleAfter)}
	}
	rd.Age = time.Duration(s.now - s.base)
	if rd.Age < 0 {
		return rd, &Error{Kind: ErrClockStepped, Path: r.path, Age: rd.Age,
			Detail: fmt.Sprintf("CLOCK_REALTIME reads %v before the publication", -rd.Age)}
	}
	if rd.Age > rd.StaleAfter {
		return rd, &Error{Kind: ErrStale, Path: r.path, Age: rd.Age,
			Detail: fmt.Sprintf("last publication %v ago (pid %d publishes every %v; the bound is not trusted after %v): is timed running?",
				rd.Age.Round(time.Millisecond), s.pid, rd.Interval, rd.StaleAfter)}
	}
	if s.flags&FlagSynchronised == 0 {
		return rd, &Error{Kind: ErrUnsynchronised, Path: r.path, Detail: "see `timed status` for why"}
	}
	if s.lo > s.hi || s.growth > maxGrowthPPB || abs(s.lo) > maxSpan || abs(s.hi) > maxSpan || abs(s.slew) > maxSpan {
		return rd, &Error{Kind: ErrInvalid, Path: r.path,
			Detail: fmt.Sprintf("lo %d ns, hi %d ns, growth %d ppb, stale after %d ns", s.lo, s.hi, s.growth, s.staleAfter)}
	}
	lo, hi := s.window()
	rd.Earliest, rd.Latest = time.Unix(0, lo), time.Unix(0, hi)
	return rd, nil
}

// reopen opens the path again when m is still the current mapping, at
// most once every reopenEvery, and returns the new mapping when the path
// now names another file (a restarted daemon's); nil otherwise.
func (r *Reader) reopen(m *mapping) *mapping {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil
	}
	if cur := r.cur.Load(); cur != m {
		return cur // another goroutine reopened meanwhile
	}
	now := r.now()
	if r.reopened != 0 && now-r.reopened < int64(reopenEvery) && now >= r.reopened {
		return nil
	}
	r.reopened = now
	m2, err := mapFile(r.path)
	if err != nil {
		return nil
	}
	if m2.id == m.id {
		m2.unmap()
		return nil
	}
	r.old = append(r.old, m)
	r.cur.Store(m2)
	return m2
}

// WaitUntilPast waits until t is surely past: until the earliest the true
// time can be is after t (commit-wait: a timestamp t chosen as some
// latest, waited out, is then in every observer's past). It sleeps for the
// distance left, at least, and reads again; an error reading the bound
// (typed, as Now's) or ctx's end stops it.
func (r *Reader) WaitUntilPast(ctx context.Context, t time.Time) error {
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		earliest, _, err := r.Now()
		if err != nil {
			return err
		}
		if earliest.After(t) {
			return nil
		}
		// The earliest advances with the clock (less the widening, a few
		// ppm): sleep for the distance, plus a microsecond for the strict
		// "after".
		wait := t.Sub(earliest) + time.Microsecond
		if timer == nil {
			timer = time.NewTimer(wait)
		} else {
			timer.Reset(wait)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-timer.C:
		}
	}
}
