package yoyo

import (
	"strings"
	"testing"
)

func TestTopology(t *testing.T) {
	members := []uint32{1, 2, 3, 4}
	for _, tc := range []struct {
		in, err string
	}{
		{"1-2,2-3,3-4", ""},
		{"1-2 2-3\n3-4,4-1", ""},
		{"4-1,3-2,2-1", ""},
		{"1-2,3-4", "not connected: members [3 4] cannot reach member 1"},
		{"1-2,2-3", "not connected: members [4]"},
		{"1-2,2-3,3-4,4-5", "5 is not a member"},
		{"1-2,2-3,3-4,0-1", "0 is not a member"},
		{"1-1,1-2,2-3,3-4", "joins a member to itself"},
		{"1-2,2-1,2-3,3-4", "edge 1-2 is listed twice"},
		{"1-2,2-3,3-4,12", `edge "12": want ID-ID`},
		{"1-2,2-3,3-4,1-99999999999", `edge "1-99999999999"`},
		{"1--2", `edge "1--2"`},
		{",", "no edges"},
	} {
		edges, err := ParseTopology(tc.in)
		if err == nil {
			err = CheckTopology(members, edges)
		}
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%q: %v", tc.in, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%q: %v, want an error containing %q", tc.in, err, tc.err)
		}
	}
	// The digest names the graph, not how it was written.
	a, _ := ParseTopology("1-2,2-3,3-4")
	b, _ := ParseTopology("4-3,2-1,3-2")
	c, _ := ParseTopology("1-2,2-3,2-4")
	if digest(a) != digest(b) || digest(a) == digest(c) {
		t.Errorf("digests %08x %08x %08x", digest(a), digest(b), digest(c))
	}
	if got := len(Complete(members)); got != 6 {
		t.Errorf("complete graph on 4: %d edges", got)
	}
}
