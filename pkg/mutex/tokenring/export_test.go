package tokenring

import (
	"encoding"

	"github.com/synclab/synclab/pkg/wire"
)

// PromisedOnDisk is what state (a Ready.State) promised for lock name: its
// entry's generation, or the floor.
func PromisedOnDisk(state []byte, name string) (uint64, error) {
	s, err := decodeState(state)
	if err != nil {
		return 0, err
	}
	if g, ok := s.promised[name]; ok {
		return g, nil
	}
	return s.floor, nil
}

// SendForTest queues p as the core's own frame of kind k (p may fail to
// encode: the bug path).
func (c *Core) SendForTest(to uint32, k wire.Kind, p encoding.BinaryAppender) {
	c.send(to, k, p, false)
}

// Floor is the core's floor (a Report's Detail.Floor), read without
// building a Report: FuzzTokenRing reads it after every step.
func (c *Core) Floor() uint64 { return c.floor }

// Promised is the generation the core promised for lock name (a Report's
// LockDetail.Promised), false if it has no entry for it.
func (c *Core) Promised(name string) (uint64, bool) {
	if l, ok := c.locks[name]; ok {
		return l.promised, true
	}
	return 0, false
}

// EachPromised hands f every lock the core has an entry for with its
// promise.
func (c *Core) EachPromised(f func(name string, promised uint64)) {
	for name, l := range c.locks {
		f(name, l.promised)
	}
}
