package tokenring

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
