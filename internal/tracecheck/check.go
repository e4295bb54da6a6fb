package tracecheck

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/synclab/synclab/internal/diagram"
	"github.com/synclab/synclab/internal/trace"
	"github.com/synclab/synclab/pkg/clock"
)

// Verdict is what a property's check decided.
type Verdict string

const (
	Holds     Verdict = "holds"
	Violated  Verdict = "violated"
	Undecided Verdict = "cannot decide"
)

// Exit statuses of `X trace check` (Report.Exit); 0 is every property
// holding, 2 a usage error, as for every command.
const (
	// ExitUndecided: no property is violated, but at least one cannot be
	// decided from the traces.
	ExitUndecided = 3
	// ExitViolated: at least one property is violated.
	ExitViolated = 4
	// ExitUnreadable: a file could not be read as a trace, or the files
	// do not make one run (frames sent twice, a cycle of messages).
	ExitUnreadable = 65
)

// Options tune a check.
type Options struct {
	// ClockBound is the error bound assumed for every event whose trace
	// records none (not the simulator's true time, no true offset, no
	// maximum error of a synchronised clock): how far its host's clock
	// may be from true time. Negative: unknown (such events are ordered
	// by happened-before alone).
	ClockBound time.Duration
}

// Ref names one event of a counterexample.
type Ref struct {
	File string    `json:"file"`
	Line int       `json:"line"`
	ID   uint32    `json:"id"`
	Host string    `json:"host"`
	T    time.Time `json:"t"`
	// What is the event in a few words: its name and the arguments that
	// matter ("lock_granted lock=x fence=3 request=1").
	What string `json:"what"`
	// Offending marks the pair that breaks the property.
	Offending bool `json:"offending,omitempty"`
	ev        int  // index in the run's diagram
}

// Result is one property's verdict.
type Result struct {
	Daemon   string  `json:"daemon"`
	Cluster  string  `json:"cluster"`
	Property string  `json:"property"` // short name: "exclusive", "fences"...
	Promise  string  `json:"promise"`  // what the daemon promises, in words
	Verdict  Verdict `json:"verdict"`
	// Why says what decided it: what was checked, or what breaks it, or
	// what is missing to decide.
	Why string `json:"why"`
	// ClockBound says which clock error bounds the verdict used.
	ClockBound string `json:"clock_bound,omitempty"`
	// Checked counts what was checked (holds, grants, terms...);
	// Violations and Undecided how many of those broke the property or
	// could not be decided (Events shows the first).
	Checked    int `json:"checked"`
	Violations int `json:"violations,omitempty"`
	Undecided  int `json:"undecided,omitempty"`
	// Events is the smallest set of events that shows the violation (or,
	// for a verdict that cannot be decided, the pair left undecided).
	Events []Ref `json:"events,omitempty"`
}

// Report is every verdict of a run.
type Report struct {
	Files   []string `json:"files"`
	Results []Result `json:"results"`
	// Notes say what limits the verdicts: a trace cut at its bound, a
	// member without a trace, a property that does not apply.
	Notes []string `json:"notes,omitempty"`

	run *run
}

// Exit is the exit status the verdicts call for: 0 every property holds,
// ExitViolated one is violated, ExitUndecided one cannot be decided.
func (r *Report) Exit() int {
	code := 0
	for _, res := range r.Results {
		switch res.Verdict {
		case Violated:
			return ExitViolated
		case Undecided:
			code = ExitUndecided
		}
	}
	return code
}

// Violations returns the results that are violated.
func (r *Report) Violations() []Result {
	var out []Result
	for _, res := range r.Results {
		if res.Verdict == Violated {
			out = append(out, res)
		}
	}
	return out
}

// ErrInput is wrapped by Check's error when the files do not make one run.
var ErrInput = errors.New("the traces do not make one run")

// Check decides the properties of every daemon whose traces are in files
// (one or more per host; several daemons may be mixed: each cluster is
// checked on its own).
func Check(files []*trace.File, opt Options) (*Report, error) {
	if len(files) == 0 {
		return nil, fmt.Errorf("%w: no trace files", ErrInput)
	}
	d, err := diagram.Build(files)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInput, err)
	}
	r := &run{d: d, opt: opt, files: map[string]*trace.File{}}
	rep := &Report{run: r}
	for _, f := range files {
		rep.Files = append(rep.Files, f.Name)
		r.files[f.Name] = f
		switch {
		case f.Dropped > 0:
			rep.Notes = append(rep.Notes, fmt.Sprintf("%s reached its bound: %d later events are not in it, so the verdicts cover its run only up to its last line", f.Name, f.Dropped))
		case f.Partial:
			rep.Notes = append(rep.Notes, fmt.Sprintf("%s ends in a cut line (its writer was killed), left out", f.Name))
		}
	}
	r.index()
	for _, c := range r.clusters {
		if missing := r.missing(c); missing != "" {
			rep.Notes = append(rep.Notes, fmt.Sprintf("%s cluster %q: members %s have no trace here; what they did is not checked", c.daemon, c.cluster, missing))
		}
		var props []property
		switch c.daemon {
		case "mutexd":
			props = mutexProperties
		case "electd":
			props = electProperties
		case "timed":
			props = timedProperties
		case "orderd":
			props = orderProperties
		default:
			rep.Notes = append(rep.Notes, fmt.Sprintf("%s cluster %q: this checker has no property of %s yet", c.daemon, c.cluster, c.daemon))
			continue
		}
		for _, p := range props {
			if p.applies != nil {
				if why := p.applies(r, c); why != "" {
					rep.Notes = append(rep.Notes, fmt.Sprintf("%s cluster %q: %s: %s", c.daemon, c.cluster, p.name, why))
					continue
				}
			}
			res := p.check(r, c)
			res.Daemon, res.Cluster, res.Property, res.Promise = c.daemon, c.cluster, p.name, p.promise
			rep.Results = append(rep.Results, res)
		}
	}
	return rep, nil
}

// property is one promise of a daemon.
type property struct {
	name, promise string
	// applies returns why the property is not promised by this run's
	// algorithm ("": it is); nil: always.
	applies func(*run, *cluster) string
	check   func(*run, *cluster) Result
}

// run is the traces as one run.
type run struct {
	d        *diagram.Diagram
	opt      Options
	files    map[string]*trace.File
	clusters []*cluster
	// lastEv is the last event of each file that has a time; simEnd the
	// last of all the simulator's files (its traces all end together).
	lastEv map[string]int
	simEnd int
}

// cluster is the processes of one daemon's cluster.
type cluster struct {
	daemon, cluster string
	procs           []int    // indices in d.Procs
	members         []uint32 // what the headers list
	events          []int    // its events, in the diagram's order (per process, file order)
}

// missing lists the members the headers name that have no trace.
func (r *run) missing(c *cluster) string {
	var ids []string
	for _, m := range c.members {
		if !r.traced(c, m) {
			ids = append(ids, strconv.FormatUint(uint64(m), 10))
		}
	}
	return strings.Join(ids, ", ")
}

func (r *run) index() {
	byKey := map[string]*cluster{}
	r.lastEv = map[string]int{}
	r.simEnd = -1
	for pi, p := range r.d.Procs {
		if len(p.Files) == 0 || r.files[p.Files[0]] == nil {
			continue // a host drawn from its packets (an NTP peer): no trace of its own
		}
		key := p.Daemon + "\x00" + p.Cluster
		if p.Daemon == "timed" {
			// Clocks are compared across clusters: an NTP client
			// follows a Berkeley group's member.
			key = "timed"
		}
		c := byKey[key]
		if c == nil {
			c = &cluster{daemon: p.Daemon, cluster: p.Cluster}
			byKey[key] = c
			r.clusters = append(r.clusters, c)
		}
		c.procs = append(c.procs, pi)
		for _, name := range p.Files {
			if r.files[name] == nil {
				continue
			}
			for _, m := range r.files[name].Header.Members {
				if !slices.Contains(c.members, m) {
					c.members = append(c.members, m)
				}
			}
		}
	}
	procCluster := map[int]*cluster{}
	for _, c := range r.clusters {
		for _, p := range c.procs {
			procCluster[p] = c
		}
		slices.Sort(c.members)
	}
	for i, e := range r.d.Events {
		if c := procCluster[e.Proc]; c != nil {
			c.events = append(c.events, i)
		}
		if j, ok := r.lastEv[e.File]; !e.T.IsZero() && (!ok || !e.T.Before(r.d.Events[j].T)) {
			r.lastEv[e.File] = i
		}
		if f := r.files[e.File]; f != nil && f.Header.Clock == trace.ClockTrue && !e.T.IsZero() && (r.simEnd < 0 || !e.T.Before(r.d.Events[r.simEnd].T)) {
			r.simEnd = i
		}
	}
}

// CrashEvent is the local event the simulator writes when it crashes a
// member: what the member held or led ends there, and its later events
// are a new incarnation's.
const CrashEvent = "sim.crash"

// PauseEvent is the simulator's pause of a member (SIGSTOP): its timers
// fire late, when it resumes.
const PauseEvent = "sim.pause"

// covered is the last event up to which file's trace records its member
// for certain: its own last, or for the simulator's traces, which all
// end when the run does, the run's last.
func (r *run) covered(file string) int {
	if f := r.files[file]; f != nil && f.Header.Clock == trace.ClockTrue && r.simEnd >= 0 {
		return r.simEnd
	}
	return r.lastEv[file]
}

// heldUntil is covered's instant: the hold still lasted then.
func (r *run) heldUntil(file string) instant {
	i := r.covered(file)
	return instant{ev: i, t: r.d.Events[i].T, held: true}
}

// traced reports whether member id of c has a trace.
func (r *run) traced(c *cluster, id uint32) bool {
	for _, p := range c.procs {
		if r.d.Procs[p].ID == id {
			return true
		}
	}
	return false
}

// maxBound caps a bound read from a trace: larger ones say nothing more,
// and sums of them must not overflow.
const maxBound = 24 * time.Hour

// driftPPM is how fast a clock's reading may part from true time past an
// event that bounds it: a frequency error and a slew, each at most 500
// ppm (the kernel's limits; it grows its maximum error by 500 ppm too).
const driftPPM = 1000

// exact says whether event i's true time is known exactly: the
// simulator's own time, or a simulated clock's reading and its recorded
// true offset; off is what to subtract from its clock's readings.
func (r *run) exact(i int) (off time.Duration, ok bool) {
	e := &r.d.Events[i]
	if f := r.files[e.File]; f != nil && f.Header.Clock == trace.ClockTrue {
		return 0, true
	}
	if e.TrueOffset != nil {
		return time.Duration(*e.TrueOffset), true
	}
	return 0, false
}

// localOf is an instant's reading of its host's clock: a local instant's
// own; an event's time, which on the simulator's true time is its clock's
// reading less the recorded error.
func (r *run) localOf(in instant) time.Time {
	if in.local {
		return in.t
	}
	e := &r.d.Events[in.ev]
	if f := r.files[e.File]; f != nil && f.Header.Clock == trace.ClockTrue && e.TrueOffset != nil {
		return e.T.Add(time.Duration(*e.TrueOffset))
	}
	return e.T
}

// timeOf returns an instant's time and how far from true time it may be:
// exact (see exact), the host's maximum error recorded with the event,
// or the assumed bound; ok false when unknown. A local instant (a lease's
// expiry, on its host's clock) is placed from the event that set it, and
// may drift from it by driftPPM of the distance more.
func (r *run) timeOf(in instant) (t time.Time, bound time.Duration, ok bool) {
	e := &r.d.Events[in.ev]
	if in.t.IsZero() || e.T.IsZero() {
		return t, 0, false
	}
	trueT, exact := e.T, false
	if f := r.files[e.File]; f != nil && f.Header.Clock == trace.ClockTrue {
		exact = true
	} else if e.TrueOffset != nil {
		trueT, exact = e.T.Add(-time.Duration(*e.TrueOffset)), true
	}
	t, drift := e.T, time.Duration(0)
	if in.local {
		d := in.t.Sub(r.localOf(r.at(in.ev)))
		drift = time.Duration(min(math.Abs(float64(d))*driftPPM/1e6, float64(maxBound)))
		t, trueT = in.t, trueT.Add(d)
	}
	switch {
	case exact:
		return trueT, drift, true
	case e.MaxError > 0:
		return t, min(time.Duration(e.MaxError), maxBound) + drift, true
	case r.opt.ClockBound >= 0:
		return t, min(r.opt.ClockBound, maxBound), true
	}
	return t, 0, false
}

// boundText says which bounds the events used: for a Result.
func (r *run) boundText(evs ...int) string {
	var exactSim, exactOff, assumed, unknown bool
	var own time.Duration
	for _, i := range evs {
		if i < 0 {
			continue
		}
		e := &r.d.Events[i]
		f := r.files[e.File]
		switch {
		case f != nil && f.Header.Clock == trace.ClockTrue:
			exactSim = true
		case e.TrueOffset != nil:
			exactOff = true
		case e.MaxError > 0:
			own = max(own, time.Duration(e.MaxError))
		case r.opt.ClockBound >= 0:
			assumed = true
		default:
			unknown = true
		}
	}
	var parts []string
	if exactSim {
		parts = append(parts, "0 (the simulator's true time)")
	}
	if exactOff {
		parts = append(parts, "0 (the simulated clocks' true offsets, recorded with their events)")
	}
	if own > 0 {
		parts = append(parts, fmt.Sprintf("each host's own maximum error, recorded with its events (up to %v)", own))
	}
	if assumed {
		parts = append(parts, fmt.Sprintf("±%v per host where its trace records none (assumed: --clock-bound)", r.opt.ClockBound))
	}
	if unknown {
		parts = append(parts, "unknown where a trace records none and no --clock-bound is given: those events ordered by happened-before only")
	}
	return strings.Join(parts, "; ")
}

// instant is a point of a run: an event, or a time on a process's clock
// that no event marks (a lease's expiry: ev is the event that set it).
type instant struct {
	ev   int       // the event (or the one that set t); -1: none (infinity)
	t    time.Time // on ev's host's clock
	mark bool      // t is the event's own time (happened-before applies)
	// held: a hold (a leadership) still lasted at t, its trace's last
	// instant; an event at t itself is then before it.
	held bool
	// local: t is a reading of ev's host's clock that no event marks (a
	// lease's expiry), not ev's time.
	local bool
}

func (r *run) at(i int) instant { return instant{ev: i, t: r.d.Events[i].T, mark: true} }

var never = instant{ev: -1}

// before reports whether a happened certainly before b, in true time:
// a chain of messages from a to b; both times exact; on one host, its own
// clock; or their times apart by more than both bounds. strict false lets
// equal true times count (the end of a hold and the next one's start).
func (r *run) before(a, b instant, strict bool) bool {
	if a.ev < 0 {
		return false // never ends
	}
	if b.ev < 0 {
		return true
	}
	if b.held {
		strict = false
	}
	if a.mark && b.mark && a.ev != b.ev {
		switch r.d.Relation(a.ev, b.ev) {
		case clock.Before:
			return true
		case clock.After:
			return false
		}
	}
	cmp := func(x, y time.Time) bool {
		if strict {
			return x.Before(y)
		}
		return !x.After(y)
	}
	ta, ba, okA := r.timeOf(a)
	tb, bb, okB := r.timeOf(b)
	_, exA := r.exact(a.ev)
	_, exB := r.exact(b.ev)
	switch {
	case okA && okB && exA && exB && ba == 0 && bb == 0:
		return cmp(ta, tb)
	case sameClock(&r.d.Events[a.ev], &r.d.Events[b.ev]) && !a.t.IsZero() && !b.t.IsZero():
		return cmp(r.localOf(a), r.localOf(b))
	case !okA || !okB:
		return false
	}
	return cmp(ta.Add(ba+bb), tb)
}

// sameClock: two events of one trace file read one clock (a restarted
// daemon's simulated clock may be another).
func sameClock(a, b *diagram.Event) bool {
	return a.File == b.File && !a.T.IsZero() && !b.T.IsZero()
}

// ref names event i for a counterexample.
func (r *run) ref(i int, offending bool) Ref {
	e := &r.d.Events[i]
	p := &r.d.Procs[e.Proc]
	return Ref{File: e.File, Line: e.Line, ID: p.ID, Host: p.Host, T: e.T, What: what(&e.Event), Offending: offending, ev: i}
}

// refs names events, the offending pair first, without repeats.
func (r *run) refs(pair [2]int, more ...int) []Ref {
	var out []Ref
	seen := map[int]bool{}
	add := func(i int, off bool) {
		if i >= 0 && !seen[i] {
			seen[i] = true
			out = append(out, r.ref(i, off))
		}
	}
	add(pair[0], true)
	add(pair[1], true)
	for _, i := range more {
		add(i, false)
	}
	slices.SortStableFunc(out, func(a, b Ref) int { return a.T.Compare(b.T) })
	return out
}

// what is an event in a few words.
func what(e *trace.Event) string {
	switch e.Ev {
	case trace.EvSend:
		return fmt.Sprintf("send %s %s to %d", e.Kind, e.Frame, e.To)
	case trace.EvRecv:
		return fmt.Sprintf("recv %s %s from %d", e.Kind, e.Frame, e.From)
	case trace.EvDrop:
		return "drop " + e.Reason
	}
	s := e.Name
	keys := make([]string, 0, len(e.Args))
	for k := range e.Args {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		s += fmt.Sprintf(" %s=%v", k, e.Args[k])
	}
	return s
}

// argU64 reads a numeric argument (json.Number as the reader keeps it).
func argU64(e *trace.Event, k string) (uint64, bool) {
	switch v := e.Args[k].(type) {
	case json.Number:
		n, err := strconv.ParseUint(v.String(), 10, 64)
		return n, err == nil
	case float64:
		if v >= 0 && v <= math.MaxUint64 && v == math.Trunc(v) {
			return uint64(v), true
		}
	case uint64:
		return v, true
	case int:
		return uint64(v), v >= 0
	case int64:
		return uint64(v), v >= 0
	case string:
		n, err := strconv.ParseUint(v, 10, 64)
		return n, err == nil
	}
	return 0, false
}

func argStr(e *trace.Event, k string) string {
	switch v := e.Args[k].(type) {
	case string:
		return v
	case json.Number:
		return v.String()
	case nil:
		return ""
	default:
		return fmt.Sprint(v)
	}
}

func argTime(e *trace.Event, k string) (time.Time, bool) {
	s, ok := e.Args[k].(string)
	if !ok {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	return t, err == nil
}

func argDuration(e *trace.Event, k string) (time.Duration, bool) {
	s, ok := e.Args[k].(string)
	if !ok {
		return 0, false
	}
	d, err := time.ParseDuration(s)
	return d, err == nil
}

// plural writes n and a noun.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	if s, ok := strings.CutSuffix(noun, "y"); ok {
		return fmt.Sprintf("%d %sies", n, s)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
