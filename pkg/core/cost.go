package core

import "fmt"

// Cost is what the course notes give as an algorithm's price for one
// operation (one entry to a critical section, one election, one
// multicast) at n members: the benchmarks print it beside what they
// measure.
type Cost struct {
	// Text is the cost as the notes write it, e.g. "2(N-1)", "O(N log N)".
	Text string
	// Messages is the number of messages one operation takes at n
	// members, from best to worst case (lo == hi when the notes give one
	// figure; hi < 0 when the worst case is unbounded, e.g. the token
	// ring's idle circulation).
	Messages func(n int) (lo, hi float64)
	// Delay is the synchronisation delay in message transmission times
	// as the notes give it (e.g. "2", "N-1"); "" where it does not apply.
	Delay string
}

// Range returns Messages(n) as text: "6" or "4-12" or "4-unbounded".
func (c Cost) Range(n int) string {
	if c.Messages == nil {
		return "?"
	}
	lo, hi := c.Messages(n)
	switch {
	case hi < 0:
		return fmt.Sprintf("%.4g-unbounded", lo)
	case lo == hi:
		return fmt.Sprintf("%.4g", lo)
	}
	return fmt.Sprintf("%.4g-%.4g", lo, hi)
}
