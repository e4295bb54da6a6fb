package corefuzz

import (
	"errors"
	"fmt"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/elect/bully"
	"github.com/synclab/synclab/pkg/epoch"
)

// StateFile is a state directory's term file as the program picks it,
// the way a bad disk, an older build, an algorithm switch or a tired
// administrator leaves it: none; bully's first format; its second (a term
// and a reservation, the reservation mostly self's and above the term,
// sometimes another member's, at the end of the term space, or at or
// below the term); either with a byte flipped, cut short or lengthened.
// Terms are drawn as Epoch draws them, around a round the program picks.
func (p *Program) StateFile(self uint32, ids []uint32, lim epoch.Limit) []byte {
	base := epoch.Make(uint32(p.raw(2)), self)
	term := p.Epoch(base, lim, ids)
	var b []byte
	switch p.Intn(8) {
	case 0:
		return nil
	case 1:
		b = bully.EncodeState(term)
	case 2, 3, 4:
		// A reservation the member writes: its own, a few rounds above.
		r := epoch.Round(term) + 1 + uint32(p.Intn(3))
		b = bully.EncodeReserved(term, epoch.Make(r, self))
	default:
		res := p.Epoch(term, lim, ids)
		if res == 0 {
			res = 1
		}
		b = bully.EncodeReserved(term, res)
	}
	switch p.Intn(8) {
	case 0:
		b[p.Intn(len(b))] ^= 1 << p.Intn(8)
	case 1:
		b = b[:p.Intn(len(b))]
	case 2:
		b = append(b, p.Byte())
	}
	return b
}

// RestartFrom restarts d's core from the state file disk in place of what
// the core persisted. accept says whether the core must take it (it must
// refuse it with core.ErrState otherwise); a file the core took, the
// returned floor is the term above which alone it may claim.
func (d *Driver) RestartFrom(disk []byte, accept func(term, reserved uint64) bool) (floor uint64, ok bool, err error) {
	term, reserved, rerr := bully.RestoreReserved(disk)
	want := rerr == nil && accept(term, reserved)
	d.Disk, d.Log = disk, nil
	err = d.Restart()
	switch {
	case want && err != nil:
		return 0, false, fmt.Errorf("state %x (term %#x, reserved %#x) refused: %w", disk, term, reserved, err)
	case !want && err == nil:
		return 0, false, fmt.Errorf("state %x (term %#x, reserved %#x, %v) taken", disk, term, reserved, rerr)
	case err != nil && !errors.Is(err, core.ErrState):
		return 0, false, fmt.Errorf("state %x refused with %v, not core.ErrState", disk, err)
	case err != nil:
		return 0, false, nil
	}
	return max(term, reserved), true, nil
}
