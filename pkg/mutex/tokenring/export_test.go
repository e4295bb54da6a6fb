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
