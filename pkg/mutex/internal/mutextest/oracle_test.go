package mutextest

import (
	"fmt"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/pkg/mutex"
)

// fatal records a Fatalf instead of ending the test.
type fatal struct {
	testing.TB
	msg string
}

func (f *fatal) Fatalf(format string, args ...any) {
	if f.msg == "" {
		f.msg = fmt.Sprintf(format, args...)
	}
}

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

// TestOracle: the oracle refuses each kind of violation and accepts what
// is allowed (readers together, a later grant with a higher fence).
func TestOracle(t *testing.T) {
	ex, sh := mutex.Exclusive, mutex.Shared
	for _, tc := range []struct {
		name  string
		ivs   []interval
		wrong bool
	}{
		{"disjoint", []interval{{node: 1, mode: ex, fence: 1, start: 0, end: ms(10)}, {node: 2, mode: ex, fence: 2, start: ms(10), end: ms(20)}}, false},
		{"readers together", []interval{{node: 1, mode: sh, fence: 1, start: 0, end: ms(10)}, {node: 2, mode: sh, fence: 1, start: ms(5), end: ms(20)}}, false},
		{"readers together, two fences", []interval{{node: 1, mode: sh, fence: 1, start: 0, end: ms(10)}, {node: 2, mode: sh, fence: 2, start: ms(5), end: ms(20)}}, true},
		{"a reader's fence again", []interval{{node: 1, mode: sh, fence: 1, start: 0, end: ms(10)}, {node: 2, mode: sh, fence: 1, start: ms(12), end: ms(20)}}, false},
		{"a reader after a reader, lower", []interval{{node: 1, mode: sh, fence: 2, start: 0, end: ms(10)}, {node: 2, mode: sh, fence: 1, start: ms(12), end: ms(20)}}, true},
		{"a writer after a reader, same fence", []interval{{node: 1, mode: sh, fence: 1, start: 0, end: ms(10)}, {node: 2, mode: ex, fence: 1, start: ms(12), end: ms(20)}}, true},
		{"two writers", []interval{{node: 1, mode: ex, fence: 1, start: 0, end: ms(10)}, {node: 2, mode: ex, fence: 2, start: ms(9), end: ms(20)}}, true},
		{"reader in a writer", []interval{{node: 1, mode: ex, fence: 1, start: 0, end: ms(10)}, {node: 2, mode: sh, fence: 2, start: ms(3), end: ms(4)}}, true},
		{"writer in a long reader", []interval{{node: 1, mode: sh, fence: 1, start: 0, end: ms(30)}, {node: 2, mode: sh, fence: 1, start: ms(1), end: ms(2)}, {node: 3, mode: ex, fence: 3, start: ms(5), end: ms(6)}}, true},
		{"fence goes back", []interval{{node: 1, mode: ex, fence: 5, start: 0, end: ms(10)}, {node: 2, mode: ex, fence: 4, start: ms(10), end: ms(20)}}, true},
		{"fence twice", []interval{{node: 1, mode: ex, fence: 5, start: 0, end: ms(10)}, {node: 2, mode: sh, fence: 5, start: ms(20), end: ms(30)}}, true},
	} {
		f := &fatal{TB: t}
		c := &Cluster{t: f, s: sim.New(sim.Config{Seed: 1}), grants: map[string][]*interval{}}
		for i := range tc.ivs {
			iv := tc.ivs[i]
			iv.lock = "l"
			c.checkFence(&iv)
			c.grants["l"] = append(c.grants["l"], &iv)
		}
		c.Check()
		if got := f.msg != ""; got != tc.wrong {
			t.Errorf("%s: violation found %v, want %v (%s)", tc.name, got, tc.wrong, f.msg)
		}
	}
}
