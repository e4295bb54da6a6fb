package corefuzz

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/epoch"
)

// Program reads fuzz input as a sequence of choices. Past the end of the
// input every choice is 0, so any input is a complete program.
type Program struct {
	b []byte
	i int
}

// NewProgram reads b.
func NewProgram(b []byte) *Program { return &Program{b: b} }

// More reports whether input is left.
func (p *Program) More() bool { return p.i < len(p.b) }

// Byte returns the next byte (0 past the end).
func (p *Program) Byte() byte {
	if p.i >= len(p.b) {
		return 0
	}
	p.i++
	return p.b[p.i-1]
}

// Intn returns a choice in [0, n).
func (p *Program) Intn(n int) int {
	if n <= 1 {
		return 0
	}
	if n <= 256 {
		return int(p.Byte()) % n
	}
	return int(uint16(p.Byte())<<8|uint16(p.Byte())) % n
}

// Bool returns a choice.
func (p *Program) Bool() bool { return p.Byte()&1 == 1 }

// raw returns the next k bytes as a big-endian number.
func (p *Program) raw(k int) uint64 {
	var v uint64
	for range k {
		v = v<<8 | uint64(p.Byte())
	}
	return v
}

// U64 returns a 64-bit value, mostly an extreme one: 0, 1, the maximum
// and one below it, the sign boundary, or any value.
func (p *Program) U64() uint64 {
	switch p.Intn(8) {
	case 0:
		return 0
	case 1:
		return 1
	case 2:
		return math.MaxUint64
	case 3:
		return math.MaxUint64 - 1
	case 4:
		return math.MaxInt64
	case 5:
		return 1 << 63
	case 6:
		return p.raw(2)
	}
	return p.raw(8)
}

// U32 is U64 for 32-bit fields.
func (p *Program) U32() uint32 {
	switch p.Intn(6) {
	case 0:
		return 0
	case 1:
		return 1
	case 2:
		return math.MaxUint32
	case 3:
		return math.MaxUint32 - 1
	case 4:
		return uint32(p.raw(1))
	}
	return uint32(p.raw(4))
}

// I64 is U64 read as a signed value (corrections, pending slews).
func (p *Program) I64() int64 {
	switch p.Intn(8) {
	case 0:
		return math.MinInt64
	case 1:
		return math.MinInt64 + 1
	case 2:
		return -int64(p.raw(4))
	case 3:
		return int64(time.Duration(p.Intn(3)*5+1) * time.Second) // a few seconds: a plausible forgery
	}
	return int64(p.U64())
}

// From is a frame's sender: self one time in eight (a frame in its own
// name), stranger one time in eight, else one of ids.
func (p *Program) From(self, stranger uint32, ids []uint32) uint32 {
	switch p.Intn(8) {
	case 0:
		return self
	case 1:
		return stranger
	}
	return ids[p.Intn(len(ids))]
}

// Epoch returns an owned epoch (a term, a generation) relative to the
// local one cur: the same, one round up or down, a burst away, the last
// usable round or the end of the space, with any owner of ids (or a
// stranger), or any 64-bit value.
func (p *Program) Epoch(cur uint64, lim epoch.Limit, ids []uint32) uint64 {
	owner := uint32(p.Intn(len(ids) + 2))
	if owner < uint32(len(ids)) {
		owner = ids[owner]
	} else if owner == uint32(len(ids)) {
		owner = math.MaxUint32
	}
	r := epoch.Round(cur)
	switch p.Intn(10) {
	case 0:
		return cur
	case 1:
		return epoch.Make(r+1, owner)
	case 2:
		return epoch.Make(r-min(r, 1), owner)
	case 3:
		return epoch.Make(r+lim.Burst, owner)
	case 4:
		return epoch.Make(r+lim.Burst+1, owner)
	case 5:
		return epoch.Make(lim.Last, owner)
	case 6:
		return epoch.Make(lim.Last+1, owner)
	case 7:
		return epoch.Make(epoch.MaxRound, owner)
	case 8:
		return epoch.Make(r+uint32(p.raw(2)), owner)
	}
	return p.U64()
}

// Driver runs a core as the daemon does: it persists each Ready's State
// (unless the program fails the write), withholds the messages of a Ready
// whose promise could not be written, tells the core (Advance), and hands
// every message that leaves to Sent, with the disk as it is then.
type Driver struct {
	// New builds the core from the disk (nil at the first start); an error
	// is the daemon refusing to start, which Restore-level checks must
	// make impossible for any state the core itself wrote.
	New  func(disk []byte) (core.Core, error)
	Sent func(m core.Message, disk []byte) error
	// Ready, if set, sees every Ready first (its clock adjustments).
	Ready func(rd core.Ready) error
	// Inspect, if set, checks the core's whole state: its status report,
	// its metrics, the bounds of its tables, the checks that cost as much
	// as the state is large. It runs once, at the end of the program
	// (Finish), not after every step: any prefix of a program is a
	// program too (the input cut short there), so every state a program
	// passes through is the last state of another, and the fuzzer still
	// inspects every state it reaches, at a cost per program instead of
	// per step. Checks that compare a state with the one before (a term
	// that must not go back) stay per step.
	Inspect func() error
	// Late, if set, is how long the loop took to read each frame Step
	// hands the core: the frame is stamped at the clock as it was, and
	// the clock moves on by Late before the core's Ready is read (the
	// daemon's loop stalled with the frame in its socket, or the process
	// was paused). The core's now is then the stamp, behind the clock's
	// reading. The targets that set it pick it from their program
	// (Program.Late).
	Late func() time.Duration
	// Scheduled, if set, checks the core's Deadline (core.Scheduler)
	// after every Tick: it must be after that Tick's time or zero. One at
	// or before it is stale: internal/node counts it (StaleDeadlines) and
	// ticks the core every StaleRetry (10 ms) until it moves.
	Scheduled bool

	Core core.Core
	Disk []byte
	// Log is what the core appended after Disk (core.Ready.Entries); a
	// core that appends reads it in New, as its Env.Log.
	Log [][]byte
	// Now is the clock; zero at Start: StartTime.
	Now     time.Time
	Life    int // restarts so far
	Writes  int
	Failed  int
	Refused int // frames the core refused
	// Recent are the messages the core sent that no emulated peer took
	// yet (Deliver), the oldest first; past RecentCap the oldest are lost.
	Recent []core.Message
}

// RecentCap is how many sent messages a Driver keeps in Recent.
const RecentCap = 16

// Deliver hands what the core (member self) sent since the last delivery
// (Recent) to its emulated peers: a message to a non-member goes nowhere,
// any other is lost one time in eight, else answer gets it with the member
// that answers it, its addressee or, for a broadcast, one of ids other
// than self. What the core sends in return waits for the next delivery.
func (d *Driver) Deliver(p *Program, self uint32, ids []uint32, answer func(m core.Message, peer uint32) error) error {
	var others []uint32
	for _, id := range ids {
		if id != self {
			others = append(others, id)
		}
	}
	sent := d.Recent
	d.Recent = nil
	for _, m := range sent {
		if p.Intn(8) == 0 {
			continue
		}
		if m.To != core.Broadcast && !slices.Contains(ids, m.To) {
			continue // to a stranger (a frame came in its name): no member answers it, and the node has no address for it
		}
		peer := m.To
		if peer == core.Broadcast || peer == self {
			peer = others[p.Intn(len(others))]
		}
		if err := answer(m, peer); err != nil {
			return err
		}
	}
	return nil
}

// staleRetry is internal/node's StaleRetry, for the message.
const staleRetry = 10 * time.Millisecond

// StartTime is the Driver's clock at Start unless it was set.
var StartTime = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Start builds the first core.
func (d *Driver) Start() error {
	if d.Now.IsZero() {
		d.Now = StartTime
	}
	c, err := d.New(nil)
	if err != nil {
		return err
	}
	d.Core = c
	return nil
}

// Restart builds a new core from the disk, as after a crash.
func (d *Driver) Restart() error {
	c, err := d.New(bytes.Clone(d.Disk))
	if err != nil {
		return fmt.Errorf("restart %d from the core's own state: %w", d.Life+1, err)
	}
	d.Core = c
	d.Life++
	return nil
}

// Finish ends a program: the core's last state must pass Inspect.
func (d *Driver) Finish() error {
	if d.Inspect == nil || d.Core == nil {
		return nil
	}
	if err := d.Inspect(); err != nil {
		return fmt.Errorf("life %d, at the end: %w", d.Life, err)
	}
	return nil
}

// Step feeds one frame and drains.
func (d *Driver) Step(m core.Message, failWrite bool) error {
	if m.Time.IsZero() {
		m.Time = d.Now
		if d.Late != nil {
			d.Now = d.Now.Add(d.Late())
		}
	}
	if d.Core.Step(m) != nil {
		d.Refused++
	}
	return d.Drain(failWrite)
}

// Tick advances the clock by dt and ticks.
func (d *Driver) Tick(dt time.Duration, failWrite bool) error {
	d.Now = d.Now.Add(dt)
	d.Core.Tick(d.Now)
	if err := d.Drain(failWrite); err != nil {
		return err
	}
	if s, ok := d.Core.(core.Scheduler); ok && d.Scheduled {
		if dl := s.Deadline(); !dl.IsZero() && !dl.After(d.Now) {
			return fmt.Errorf("deadline %v left at or before the Tick that just ran (%v): stale, the node would tick every %v until it moves",
				dl.Format(time.RFC3339Nano), d.Now.Format(time.RFC3339Nano), staleRetry)
		}
	}
	return nil
}

// Hint tells a core that acts on hints (core.Hinter) that a member's port
// closed, of a cause the program picks, about any of ids or someone else
// (a node hands the core only members', but a forged reset names anyone it
// likes), at the driver's clock, and drains. A core without hints: nothing.
func (d *Driver) Hint(p *Program, ids []uint32, failWrite bool) error {
	h, ok := d.Core.(core.Hinter)
	if !ok {
		return nil
	}
	member := uint32(p.Intn(len(ids) + 2)) // 0 and len(ids)+1: nobody's
	if i := int(member) - 1; i >= 0 && i < len(ids) {
		member = ids[i]
	}
	h.Hint(core.Hint{Member: member, Cause: core.HintCauses[p.Intn(len(core.HintCauses))], Time: d.Now})
	return d.Drain(failWrite)
}

// Drain acts on the core's Ready.
func (d *Driver) Drain(failWrite bool) error {
	rd := d.Core.Ready()
	if err := d.checkLeases(rd); err != nil {
		return err
	}
	if d.Ready != nil {
		if err := d.Ready(rd); err != nil {
			return err
		}
	}
	saved := true
	if rd.State != nil || len(rd.Entries) > 0 {
		d.Writes++
		if failWrite {
			saved = false
			d.Failed++
			if rd.Promise {
				rd.Messages = nil
			}
		} else if rd.State != nil {
			d.Disk, d.Log = bytes.Clone(rd.State), nil
		} else {
			for _, e := range rd.Entries {
				d.Log = append(d.Log, bytes.Clone(e))
			}
		}
	}
	if a, ok := d.Core.(core.Advancer); ok {
		a.Advance(saved)
	}
	for _, m := range rd.Messages {
		d.Recent = append(d.Recent, m)
		if len(d.Recent) > RecentCap {
			d.Recent = d.Recent[len(d.Recent)-RecentCap:]
		}
		if d.Sent != nil {
			if err := d.Sent(m, d.Disk); err != nil {
				return err
			}
		}
	}
	return nil
}

// Encode is v's encoding, for an emulated peer's answer built from a frame
// the core encoded (so every field is in range): it panics otherwise.
func Encode(v interface{ AppendBinary([]byte) ([]byte, error) }) []byte {
	b, err := v.AppendBinary(nil)
	if err != nil {
		panic(err)
	}
	return b
}
