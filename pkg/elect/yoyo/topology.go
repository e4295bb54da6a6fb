package yoyo

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"slices"
	"strconv"
	"strings"
)

// Edge is an undirected link between two members; the topology is the
// only way members talk (each to its neighbours).
type Edge [2]uint32

// ParseTopology reads "1-2,2-3,3-1" (commas or spaces between edges).
func ParseTopology(s string) ([]Edge, error) {
	var edges []Edge
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' }) {
		a, b, ok := strings.Cut(f, "-")
		x, err1 := strconv.ParseUint(a, 10, 32)
		y, err2 := strconv.ParseUint(b, 10, 32)
		if !ok || err1 != nil || err2 != nil {
			return nil, fmt.Errorf("topology: edge %q: want ID-ID with member IDs, as in 1-2,2-3", f)
		}
		edges = append(edges, Edge{uint32(x), uint32(y)})
	}
	if len(edges) == 0 && strings.TrimSpace(s) != "" {
		return nil, fmt.Errorf("topology %q: no edges", s)
	}
	return edges, nil
}

// Complete is the complete graph over members: every pair an edge.
func Complete(members []uint32) []Edge {
	var edges []Edge
	for i, a := range members {
		for _, b := range members[i+1:] {
			edges = append(edges, Edge{a, b})
		}
	}
	return edges
}

// neighbours checks edges over members (no self-loop, no edge twice, no
// stranger, connected) and returns each member's neighbours, sorted.
func neighbours(members []uint32, edges []Edge) (map[uint32][]uint32, error) {
	nb := make(map[uint32][]uint32, len(members))
	for _, m := range members {
		nb[m] = nil
	}
	seen := map[Edge]bool{}
	for _, e := range edges {
		a, b := min(e[0], e[1]), max(e[0], e[1])
		switch _, okA := nb[a]; {
		case a == b:
			return nil, fmt.Errorf("topology: edge %d-%d joins a member to itself", e[0], e[1])
		case !okA:
			return nil, fmt.Errorf("topology: edge %d-%d: %d is not a member", e[0], e[1], a)
		}
		if _, ok := nb[b]; !ok {
			return nil, fmt.Errorf("topology: edge %d-%d: %d is not a member", e[0], e[1], b)
		}
		if seen[Edge{a, b}] {
			return nil, fmt.Errorf("topology: edge %d-%d is listed twice", a, b)
		}
		seen[Edge{a, b}] = true
		nb[a], nb[b] = append(nb[a], b), append(nb[b], a)
	}
	// Connected: a walk from the first member reaches every member.
	reached := map[uint32]bool{members[0]: true}
	queue := []uint32{members[0]}
	for len(queue) > 0 {
		v := queue[0]
		queue = queue[1:]
		for _, w := range nb[v] {
			if !reached[w] {
				reached[w] = true
				queue = append(queue, w)
			}
		}
	}
	if len(reached) != len(members) {
		var cut []uint32
		for _, m := range members {
			if !reached[m] {
				cut = append(cut, m)
			}
		}
		slices.Sort(cut)
		return nil, fmt.Errorf("topology: not connected: members %v cannot reach member %d (Yo-Yo elects over a connected graph)", cut, members[0])
	}
	for m := range nb {
		slices.Sort(nb[m])
	}
	return nb, nil
}

// digest is the CRC-32C of the topology's edges, normalised and sorted:
// the same for every member given the same graph, whatever the order.
func digest(edges []Edge) uint32 {
	norm := make([]Edge, len(edges))
	for i, e := range edges {
		norm[i] = Edge{min(e[0], e[1]), max(e[0], e[1])}
	}
	slices.SortFunc(norm, func(x, y Edge) int {
		if x[0] != y[0] {
			return int(int64(x[0]) - int64(y[0]))
		}
		return int(int64(x[1]) - int64(y[1]))
	})
	var b []byte
	for _, e := range norm {
		b = binary.BigEndian.AppendUint32(b, e[0])
		b = binary.BigEndian.AppendUint32(b, e[1])
	}
	return crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli))
}

// CheckTopology reports whether edges form a connected graph over members
// with no self-loop, repeated edge or stranger: what New would refuse.
func CheckTopology(members []uint32, edges []Edge) error {
	if len(members) == 0 {
		return fmt.Errorf("topology: no members")
	}
	ms := slices.Clone(members)
	slices.Sort(ms)
	_, err := neighbours(ms, edges)
	return err
}
